"""The input plan: which cells a job's inputs write, and with what, or why they cannot.

The one home of the input rules. Execute runs the plan as a dry run on the version's stored
named ranges before a job is queued; every engine writes the cells the plan yields from its own
named ranges (the ones stored at upload), so both reach the same verdict.

- Keys name input ranges, case-insensitively; keys that match no input range are ignored.
- A one-cell range takes a scalar. A single row or column takes a flat list (filled from the
  start) or a list of rows; a block takes a list of rows. Shorter lists leave the other cells
  as uploaded; `null` for a whole range clears every cell of it.
- Scalars: numbers (written as float, finite only), text, booleans, `null` (clears the cell).
- Dates: in a cell formatted as a date, or for an input the schema declares as `"format":
  "date"`/`"date-time"`, ISO text (`2026-01-31`, `2026-01-31T12:00:00`) becomes Excel's serial
  (1900 system, with its phantom 1900-02-29); other text is refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared.calc.base import NamedRange
from shared.calc.values import iso_to_serial
from shared.errors import InputValidationError


@dataclass(frozen=True)
class CellWrite:
    """One cell an input writes: its range, its offset from the range's top-left, its value."""

    range: NamedRange
    row: int
    col: int
    value: float | str | bool | None  # None clears the cell

    @property
    def index(self) -> int:
        """The cell's position in its range, row by row."""
        return self.row * self.range.cols + self.col


def plan_inputs(
    inputs: dict[str, Any], ranges: Iterable[NamedRange], date_names: Iterable[str] = (),
    date_offset: int = 0,
) -> list[CellWrite]:
    """The cells `inputs` write into `ranges`, in input order; InputValidationError naming the
    first problem, before anything is written. `date_offset`: 1462 for a workbook in the 1904
    date system (its serials count from 1904-01-01)."""
    by_name = {r.name.lower(): r for r in ranges}
    dates = {name.lower() for name in date_names}
    writes = []
    for key, value in inputs.items():
        rng = by_name.get(key.lower())
        if rng is None or rng.kind != "input":
            continue
        as_date = rng.name.lower() in dates or key.lower() in dates
        for row, col, scalar in place(rng.name, rng.rows, rng.cols, value):
            is_date = as_date or rng.cell_is_date(row * rng.cols + col)
            writes.append(CellWrite(rng, row, col, date_scalar(rng.name, scalar, is_date, date_offset)))
    return writes


def place(name: str, rows: int, cols: int, value: Any) -> list[tuple[int, int, Any]]:
    """(row offset, col offset, scalar) for each cell an input fills, from the top-left."""
    if rows == 1 and cols == 1:
        if isinstance(value, (list, tuple)):
            raise InputValidationError(f"'{name}' expects a single value, not a list")
        return [(0, 0, cell_scalar(name, value))]
    if value is None:
        return [(r, c, None) for r in range(rows) for c in range(cols)]
    shape = f"{rows} rows x {cols} columns"
    line = rows == 1 or cols == 1
    if not isinstance(value, list):
        what = f"a list of up to {rows * cols} values" if line else f"a list of rows ({shape})"
        raise InputValidationError(f"'{name}' expects {what}")
    nested = [isinstance(item, list) for item in value]
    if any(nested) and not all(nested):
        raise InputValidationError(f"'{name}' mixes values and lists; expected {shape}")
    if not any(nested) and value:
        if not line:
            raise InputValidationError(f"'{name}' expects a list of rows ({shape})")
        if len(value) > rows * cols:
            raise InputValidationError(
                f"'{name}' expects at most {rows * cols} values, got {len(value)}"
            )
        down, across = (0, 1) if rows == 1 else (1, 0)
        return [(i * down, i * across, cell_scalar(name, v)) for i, v in enumerate(value)]
    if len(value) > rows:
        raise InputValidationError(f"'{name}' expects at most {rows} rows, got {len(value)}")
    placed = []
    for r, row in enumerate(value):
        if len(row) > cols:
            raise InputValidationError(
                f"'{name}' expects at most {cols} values per row, got {len(row)} in row {r + 1}"
            )
        placed.extend((r, c, cell_scalar(name, item)) for c, item in enumerate(row))
    return placed


def cell_scalar(name: str, value: Any) -> float | str | bool | None:
    """A JSON value fit for one cell (ints and floats as float); InputValidationError if not."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise InputValidationError(f"'{name}' expects a finite number")
        return number
    raise InputValidationError(f"'{name}' expects numbers, text, booleans or null")


def date_scalar(name: str, scalar: Any, is_date: bool, offset: int = 0) -> Any:
    """A scalar for a date cell: ISO text becomes Excel's serial (InputValidationError if it is
    not a date, or before 1904-01-01 in a 1904 workbook: `offset` 1462); anything else, or any
    scalar for a cell that is not a date, is kept."""
    if not (is_date and isinstance(scalar, str)):
        return scalar
    serial = iso_to_serial(scalar)
    if serial is None:
        raise InputValidationError(f"'{name}' expects a date like 2026-01-31, got {scalar!r}")
    if serial < offset:
        raise InputValidationError(
            f"'{name}' expects a date from 1904-01-01 on (the workbook uses the 1904 date system), got {scalar!r}"
        )
    return float(serial - offset)
