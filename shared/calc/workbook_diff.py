"""The cells two workbooks differ in: formulas changed and constants changed, sheet by sheet.

Both workbooks are streamed side by side with openpyxl's read-only reader, one row of each at a
time, so memory stays flat whatever their size. Each sheet reports its counts in full and at most
``cap`` cells of each kind; the comparison stops at ``within_s`` seconds and then says which
sheets it did not finish (``complete`` false), never a count it did not make.

A *formula change* is a cell whose formula differs between the two (added, removed, edited, or a
formula that became a constant or the reverse); a *constant change* is a cell that holds no
formula in either and whose value differs (added, removed or edited). Formulas are compared as
Excel stores them (``=A1+B1``), constants by type and value.
"""

from __future__ import annotations

import io
import time
from itertools import zip_longest
from typing import Any

import openpyxl
from openpyxl.utils import get_column_letter

SHOWN_CHARACTERS = 200  # a formula or text shown in the diff is cut there


def _formula(value: Any) -> str | None:
    """The cell's formula as Excel stores it, or None for a constant or an empty cell."""
    text = getattr(value, "text", None)  # ArrayFormula
    if isinstance(text, str):
        return text if text.startswith("=") else "=" + text
    if isinstance(value, str) and value.startswith("="):
        return value
    if value is not None and type(value).__name__ == "DataTableFormula":
        return "=TABLE()"
    return None


def _shown(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


def _same_constant(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


class _Sheet:
    def __init__(self, name: str, cap: int) -> None:
        self.name, self.cap = name, cap
        self.formulas_changed = self.constants_changed = 0
        self.formula_cells: list[dict[str, Any]] = []
        self.constant_cells: list[dict[str, Any]] = []
        self.complete = True

    def compare(self, row: int, old_row: tuple, new_row: tuple) -> None:
        for col, (old, new) in enumerate(zip_longest(old_row, new_row), start=1):
            if old is None and new is None:
                continue
            f_old, f_new = _formula(old), _formula(new)
            if f_old is not None or f_new is not None:
                if f_old != f_new:
                    self.formulas_changed += 1
                    if len(self.formula_cells) < self.cap:
                        self.formula_cells.append({"cell": f"{get_column_letter(col)}{row}", "from": _shown(f_old if f_old is not None else old),
                                                   "to": _shown(f_new if f_new is not None else new)})
            elif not _same_constant(old, new):
                self.constants_changed += 1
                if len(self.constant_cells) < self.cap:
                    self.constant_cells.append({"cell": f"{get_column_letter(col)}{row}", "from": _shown(old), "to": _shown(new)})

    def as_dict(self, status: str) -> dict[str, Any]:
        return {
            "sheet": self.name, "status": status, "complete": self.complete,
            "formulas_changed": self.formulas_changed, "formula_cells": self.formula_cells,
            "constants_changed": self.constants_changed, "constant_cells": self.constant_cells,
        }


def _rows(book, name: str | None):
    if name is None:
        return iter(())
    return book[name].iter_rows(values_only=True)


def cell_changes(old: bytes, new: bytes, *, cap: int = 200, within_s: float = 20.0) -> dict[str, Any]:
    """The formulas and constants that changed from ``old`` to ``new``, per sheet (sheets added or
    removed compared with an empty one); ``complete`` false when ``within_s`` ran out first."""
    deadline = time.monotonic() + within_s
    before = openpyxl.load_workbook(io.BytesIO(old), read_only=True, data_only=False, keep_links=False)
    after = openpyxl.load_workbook(io.BytesIO(new), read_only=True, data_only=False, keep_links=False)
    try:
        names_before, names_after = before.sheetnames, after.sheetnames
        order = names_after + [n for n in names_before if n not in names_after]
        sheets, complete = [], True
        for name in order:
            sheet = _Sheet(name, cap)
            status = "added" if name not in names_before else "removed" if name not in names_after else "kept"
            if complete:
                old_rows = _rows(before, name if name in names_before else None)
                new_rows = _rows(after, name if name in names_after else None)
                for row, (old_row, new_row) in enumerate(zip_longest(old_rows, new_rows, fillvalue=()), start=1):
                    if row % 64 == 0 and time.monotonic() > deadline:
                        sheet.complete = complete = False
                        break
                    sheet.compare(row, old_row, new_row)
            else:
                sheet.complete = False
            sheets.append(sheet.as_dict(status))
    finally:
        before.close()
        after.close()
    return {
        "complete": complete,
        "formulas_changed": sum(s["formulas_changed"] for s in sheets),
        "constants_changed": sum(s["constants_changed"] for s in sheets),
        "sheets_added": [n for n in names_after if n not in names_before],
        "sheets_removed": [n for n in names_before if n not in names_after],
        "sheets": sheets,
    }
