"""Exact-match lookups over whole columns or rows, bounded at model load to the cells that can
hold values: the same answer, at the cost of the data instead of a million blank cells.

Excel's rule (Microsoft support, "VLOOKUP function", "HLOOKUP function", "MATCH function"):
with range_lookup FALSE (MATCH's match_type 0) the search returns the first value in the
searched column (row) equal to the lookup value, in order from the top (left); #N/A when there
is none. Every cell after the last one that can hold a value is blank, so cutting the range
just after that last cell, with one blank cell kept, leaves the first match where it was,
whatever a blank is taken to equal; MATCH's position is counted from the same first cell, since
the head of the range is never cut. IronCalc 0.9.1 gives the same answers over the whole
column but reads every one of its 1,048,576 cells for each lookup, about a second each
(measured: 200 `VLOOKUP(A2,Data!$A:$D,3,FALSE)` took 219 s to evaluate); XLOOKUP, XMATCH,
COUNTIF, SUMIF and INDEX over whole columns cost nothing there and are left alone.

"Can hold a value" is the rule of shared.calc.corrections.model: a non-empty cell (constant or
formula) or a cell of a named input range, since jobs write there. A dynamic array (Excel 365's
FILTER, SORT, ... or a spill written in the file) can spill into any cell below and to the right
of it, so a range on a sheet with one at or before its last column (row) is left whole.

Only ranges whose cut removes at least `MIN_CUT` cells are rewritten: a range written to its
data (`$A$2:$D$500`) costs nothing and stays as the user wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from shared.calc.corrections.lookups import (
    Box,
    FormulaLookups,
    LookupSite,
    find_lookups,
    parse_name,
    parse_range,
)
from shared.calc.corrections.model import InputBox, Rewrite, _Occupancy, put_formula
from shared.calc.xlsx.package import open_package, workbook_parts

EXACT_FUNCTIONS = frozenset({"VLOOKUP", "HLOOKUP", "MATCH"})
MIN_CUT = 1024
_FORMULA = re.compile(rb"<f\b[^>]*>([^<]*)</f>")


def spilling_sheets(model, data: bytes) -> dict[int, list[tuple[int, int]]]:
    """{sheet index: [(row, col) of each formula that can spill]} for the sheets whose XML
    mentions a dynamic-array function; a workbook without one costs a scan of its sheet XML."""
    from shared.calc.corrections import dynamic

    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    flagged = set()
    for index, (_, path) in enumerate(parts):
        upper = package.read(path).upper()
        if any(hint in upper for hint in dynamic.HINTS) or b"#" in b"".join(_FORMULA.findall(upper)):
            flagged.add(index)
    if not flagged:
        return {}
    anchors: dict[int, list[tuple[int, int]]] = {index: [] for index in flagged}
    for sheet, row, col in model.get_all_cells():
        if sheet in flagged:
            formula = model.get_cell_formula(sheet, row, col)
            if formula and dynamic.may_spill(formula):
                anchors[sheet].append((row, col))
    for sheet, row, col, _bottom, _right, is_dynamic in dynamic.spill_areas(data):
        if is_dynamic:
            anchors.setdefault(sheet, []).append((row, col))
    return anchors


def lookup_formulas(model, cells: list[tuple[int, int, int]], keep: Callable[[LookupSite], bool]) -> Iterator[
        tuple[int, int, int, str, FormulaLookups, list[LookupSite]]]:
    """(sheet, row, col, formula, its lookups, the sites `keep` accepts) for each of `cells`
    whose formula has such a site."""
    for sheet, row, col in cells:
        formula = model.get_cell_formula(sheet, row, col)
        if not formula:
            continue
        found = find_lookups(formula)
        sites = [s for s in found.sites if keep(s)]
        if sites:
            yield sheet, row, col, formula, found, sites


class Names:
    """The workbook's names to ranges, read from IronCalc once a lookup uses one."""

    def __init__(self, model, sheets: list[str]):
        self._model = model
        self._index = {name.lower(): i for i, name in enumerate(sheets)}
        self._list: list[dict] | None = None

    @classmethod
    def of(cls, model) -> Names:
        return cls(model, [p["name"] for p in model.get_worksheets_properties()])

    def formula(self, text: str, own_sheet: int) -> str | None:
        """The formula of the defined name `text` (`Rate`, `Sheet1!Rate`) as seen from
        `own_sheet`, without "="; None when there is no such name."""
        named = parse_name(text)
        if named is None:
            return None
        if self._list is None:  # costly on name-heavy workbooks: only when a lookup uses one
            self._list = self._model.get_defined_name_list()
        scope = self._index.get(named[0].lower()) if named[0] else own_sheet
        wanted = named[1].lower()
        entry = next((d for d in self._list if d["name"].lower() == wanted and d["scope"] == scope), None)
        entry = entry or next((d for d in self._list if d["name"].lower() == wanted and d["scope"] is None), None)
        return entry["formula"].lstrip("=") if entry else None

    def box(self, text: str, own_sheet: int) -> tuple[Box, int] | None:
        box = parse_range(text)
        if box is None:
            formula = self.formula(text, own_sheet)
            box = parse_range(formula) if formula else None
            if box is None or box.sheet is None:
                return None
        sheet = own_sheet if box.sheet is None else self._index.get(box.sheet.lower())
        return None if sheet is None else (box, sheet)


def _cut(box: Box, sheet: int, down: bool, occupancy: _Occupancy,
         spills: dict[int, list[tuple[int, int]]]) -> Box | None:
    """The box ending one cell after the last cell of its searched line that can hold a value,
    or None when that removes fewer than MIN_CUT cells or a spill could reach past it."""
    if down:
        if any(col <= box.right and row <= box.bottom for row, col in spills.get(sheet, [])):
            return None
        last, _ = occupancy.last(sheet, box.left, box.top, box.bottom, True)
        end = max((last if last is not None else box.top - 1) + 1, box.top)
        if box.bottom - end < MIN_CUT:
            return None
        return Box(box.sheet, box.top, box.left, end, box.right)
    if any(row <= box.bottom and col <= box.right for row, col in spills.get(sheet, [])):
        return None
    last, _ = occupancy.last(sheet, box.top, box.left, box.right, False)
    end = max((last if last is not None else box.left - 1) + 1, box.left)
    if box.right - end < MIN_CUT:
        return None
    return Box(box.sheet, box.top, box.left, box.bottom, end)


def bound_exact_lookups(model, data: bytes, inputs: list[InputBox],
                        cells: list[tuple[int, int, int]]) -> list[Rewrite]:
    """Rewrite, in `model`, the exact-match VLOOKUP/HLOOKUP/MATCH of `cells` (sheet index, row,
    col; array formulas left out by the caller) over ranges running far past their data.
    Returns what changed."""
    names = Names.of(model)
    occupancy = _Occupancy(model, inputs)
    spills: dict[int, list[tuple[int, int]]] | None = None
    rewrites = []
    exact = (lambda s: s.function in EXACT_FUNCTIONS and s.mode == "exact" and s.searched.token is not None)
    for sheet, row, col, formula, found, sites in lookup_formulas(model, cells, exact):
        tokens = list(found.tokens)
        changed = False
        for site in sites:
            resolved = names.box(found.tokens[site.searched.token], sheet)
            if resolved is None:
                continue
            box, at = resolved
            if site.function == "VLOOKUP":
                down = True
            elif site.function == "HLOOKUP":
                down = False
            elif box.cols == 1 or box.rows == 1:
                down = box.cols == 1
            else:
                continue  # MATCH over several rows and columns: #N/A, nothing to search
            if (box.rows if down else box.cols) <= MIN_CUT:
                continue
            if spills is None:
                spills = spilling_sheets(model, data)
            cut = _cut(box, at, down, occupancy, spills)
            if cut is None:
                continue
            tokens[site.searched.token] = cut.text()
            changed = True
        if not changed:
            continue
        if put_formula(model, sheet, row, col, formula, "".join(tokens)):
            rewrites.append(Rewrite(sheet, row, col, formula.lstrip("=")))
    return rewrites
