"""The named ranges of a workbook for `formulas`, read with openpyxl by the rules IronCalc's
engine follows (plain cell ranges on existing sheets), with each input cell's uploaded value."""

from __future__ import annotations

import datetime
import io
import logging
from dataclasses import dataclass
from typing import Any

from shared.calc.base import NamedRange
from shared.calc.formulas.model import cell_key
from shared.calc.refs import CellBox, parse_range_formula
from shared.calc.values import datetime_to_serial, is_date_format
from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError

log = logging.getLogger(__name__)


@dataclass
class Range:
    name: str
    sheet: str
    top: int
    left: int
    bottom: int
    right: int
    kind: str
    date_cells: list[bool]
    originals: list[Any] | None  # inputs only: number, text, bool or None

    @property
    def box(self) -> CellBox:
        return CellBox(self.sheet, self.top, self.left, self.bottom, self.right)

    def keys(self) -> list[str]:
        return [cell_key(self.sheet, r, c) for r, c in self.box.cells()]

    def public(self) -> NamedRange:
        return NamedRange.of_box(self.name, self.box, self.kind, self.date_cells)


def original(rng: Range, row: int, col: int) -> Any:
    """The uploaded value of an input range's cell."""
    width = rng.right - rng.left + 1
    return rng.originals[(row - rng.top) * width + (col - rng.left)]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return float(datetime_to_serial(value))
    if isinstance(value, datetime.date):
        return float(datetime_to_serial(datetime.datetime.combine(value, datetime.time())))
    if isinstance(value, datetime.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def resolve_ranges(data: bytes) -> list[Range]:
    """Usable named ranges (see IronCalc's rules): plain cell ranges on existing sheets."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), data_only=False)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds on bad packages
        log.info("openpyxl could not read an upload: %r", exc)
        raise WorkbookError(UNREADABLE) from None
    sheets = {name.lower(): name for name in book.sheetnames}
    entries = [(n, d.attr_text) for n, d in book.defined_names.items()]
    for ws in book.worksheets:
        entries += [(n, d.attr_text) for n, d in ws.defined_names.items()]
    ranges, seen = [], set()
    for name, text in entries:
        if name.lower() in seen or name.lower().startswith("_xlnm.") or not text:
            continue
        box = parse_range_formula(text)
        if box is None or box.sheet.lower() not in sheets:
            continue
        seen.add(name.lower())
        ws = book[sheets[box.sheet.lower()]]
        cells = [ws.cell(r, c) for r, c in box.cells()]
        has_formula = any(c.data_type == "f" for c in cells)
        date_cells = [is_date_format(c.number_format) for c in cells]
        originals = None if has_formula else [_plain(c.value) for c in cells]
        ranges.append(Range(name, ws.title, box.top, box.left, box.bottom, box.right,
                             "output" if has_formula else "input", date_cells, originals))
    return ranges

