"""Bounding approximate-match lookups in a loaded IronCalc model (see lookups.py for the rule).

Each lookup whose searched range runs past the last cell that can hold a value is rewritten in
the model, once, at load: the range is cut just after that cell. "Can hold a value" means a
non-empty cell (constant or formula) or a cell of a named input range, since jobs write there:
a job that fills an input further down is still searched. The original formula text is kept
(`Rewrite.original`) so the exported workbook shows what the user wrote.

Blank cells before the first value are cut off too (Excel does not land on them either: a
lookup value below the first value is #N/A, where IronCalc answers from a leading blank). MATCH
answers a position within the range, so a MATCH cut at its head becomes `(MATCH(...)+k)`, k the
cells cut (an error stays the error); LOOKUP's result vector is cut by the same cells.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from shared.calc.corrections.lookups import Box, LookupSite, RangeArg, find_lookups, parse_name, parse_range

InputBox = tuple[int, int, int, int, int]  # sheet index, top, left, bottom, right


@dataclass
class Rewrite:
    """A cell whose formula the model calculates in a corrected form; `original` is the formula
    as IronCalc read it from the upload (without "="), for the export."""

    sheet: int
    row: int
    col: int
    original: str
    # Ranges whose cut runs into named input cells: [token, sheet index, top, left, bottom,
    # right, sheet as written or None, searched down, last position holding a constant or
    # formula]. A job that leaves those inputs blank gets the range cut again (adjust_to_inputs).
    dynamic: list[list] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # the rewritten formula, when dynamic


@dataclass
class ModelCorrections:
    """What the correction layer changed in one model; empty for most workbooks."""

    rewrites: list[Rewrite] = field(default_factory=list)
    # the file's array formulas, [sheet index, row, col, bottom, right, dynamic] (corrections/dynamic)
    spills: list[list[int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rewrites)  # the formulas changed; `spills` only describes the file

    def to_header(self) -> dict:
        header = {"version": 1, "rewrites": [
            [w.sheet, w.row, w.col, w.original, w.dynamic, w.tokens] for w in self.rewrites
        ]}
        if self.spills:
            header["spills"] = self.spills
        return header

    @classmethod
    def from_header(cls, data: dict | None) -> "ModelCorrections":
        if not data:
            return cls()
        return cls([
            Rewrite(s, r, c, original, dynamic, tokens)
            for s, r, c, original, dynamic, tokens in data.get("rewrites", [])
        ], data.get("spills", []))

    @property
    def dynamic(self) -> list[Rewrite]:
        return [w for w in self.rewrites if w.dynamic]


class DefinedNames:
    """A model's defined names, read once when first asked (IronCalc's name list is slow on
    workbooks with thousands of names): `names(name, sheet)` is the formula of the name as seen
    from that sheet (its own scope first, then the workbook's), or None."""

    def __init__(self, model):
        self._model = model
        self._by_key: dict[tuple[str, int | None], str] | None = None

    def __call__(self, name: str, sheet: int) -> str | None:
        if self._by_key is None:
            self._by_key = {(d["name"].upper(), d["scope"]): d["formula"] for d in self._model.get_defined_name_list()}
        return self._by_key.get((name.upper(), sheet)) or self._by_key.get((name.upper(), None))


def rewrite_cells(model, cells: list[tuple[int, int, int]], rewrite) -> list[Rewrite]:
    """Put `rewrite(formula, sheet, row, col)` (IronCalc's text of the cell's formula -> the
    corrected text without "=", or None to leave it) into each of `cells` (sheet index, row, col) in `model`; a text
    IronCalc refuses leaves the formula as it was. Returns what changed."""
    rewrites = []
    for sheet, row, col in cells:
        formula = model.get_cell_formula(sheet, row, col)
        if not formula:
            continue
        try:
            text = rewrite(formula, sheet, row, col)
        except Exception:  # noqa: BLE001 - a rewrite that fails on a formula leaves it IronCalc's:
            # the workbook still loads (its check shows any difference from Excel's values)
            continue
        if text is None or text == formula.lstrip("="):
            continue
        if put_formula(model, sheet, row, col, formula, text):
            rewrites.append(Rewrite(sheet, row, col, formula.lstrip("=")))
    return rewrites


def put_formula(model, sheet: int, row: int, col: int, formula: str, text: str) -> bool:
    """Give the cell holding `formula` the rewritten `text` (without "="); False when IronCalc
    refuses it, and the formula stays."""
    try:
        model.update_cell_with_formula(sheet, row, col, "=" + text)
    except Exception:  # noqa: BLE001 - IronCalc refused the text: the formula stays
        model.update_cell_with_formula(sheet, row, col, formula)
        return False
    return True


class _Occupancy:
    """Where a sheet's cells can hold values: non-empty cells and named input cells."""

    def __init__(self, model, inputs: list[InputBox]):
        self._model = model
        self._inputs = inputs
        self._cells: list[tuple[int, int, int]] | None = None
        self._lines: dict[bool, dict[tuple[int, int], list[int]]] = {}

    def _index(self, down: bool) -> dict[tuple[int, int], list[int]]:
        """Positions of the listed cells per column (down) or per row, built once per direction."""
        if down not in self._lines:
            if self._cells is None:
                self._cells = self._model.get_all_cells()
            lines: dict[tuple[int, int], list[int]] = {}
            if down:
                for sheet, row, col in self._cells:
                    lines.setdefault((sheet, col), []).append(row)
            else:
                for sheet, row, col in self._cells:
                    lines.setdefault((sheet, row), []).append(col)
            for positions in lines.values():
                positions.sort()
            self._lines[down] = lines
        return self._lines[down]

    def last(self, sheet: int, line: int, start: int, end: int, down: bool) -> tuple[int | None, int | None]:
        """(the last position in [start, end] of column `line` (down) or row `line` (across)
        that can hold a value, the last one holding a constant or formula); None: none."""
        positions = self._index(down).get((sheet, line), [])
        best = None
        at = bisect.bisect_right(positions, end)
        while at > 0 and positions[at - 1] >= start:
            pos = positions[at - 1]
            row, col = (pos, line) if down else (line, pos)
            if self._model.get_cell_content(sheet, row, col) != "":  # styled empty cells are listed too
                best = pos
                break
            at -= 1
        data = best
        for s, top, left, bottom, right in self._inputs:
            if s != sheet:
                continue
            if down and left <= line <= right and top <= end and bottom >= start:
                reach = min(bottom, end)
            elif not down and top <= line <= bottom and left <= end and right >= start:
                reach = min(right, end)
            else:
                continue
            best = reach if best is None else max(best, reach)
        return best, data


def _first(occupancy: "_Occupancy", sheet: int, line: int, start: int, end: int, down: bool) -> int | None:
    """The first position in [start, end] of a column (down) or row that can hold a value."""
    positions = occupancy._index(down).get((sheet, line), [])
    best = None
    at = bisect.bisect_left(positions, start)
    while at < len(positions) and positions[at] <= end:
        pos = positions[at]
        row, col = (pos, line) if down else (line, pos)
        if occupancy._model.get_cell_content(sheet, row, col) != "":
            best = pos
            break
        at += 1
    for s, top, left, bottom, right in occupancy._inputs:
        if s != sheet:
            continue
        if down and left <= line <= right and top <= end and bottom >= start:
            reach = max(top, start)
        elif not down and top <= line <= bottom and left <= end and right >= start:
            reach = max(left, start)
        else:
            continue
        best = reach if best is None else min(best, reach)
    return best


def _bounded(box: Box, sheet: int, site: LookupSite, occupancy: _Occupancy) -> tuple[Box, bool, int | None, int] | None:
    """The searched box cut to its first and last cells that can hold a value, whether the
    search runs down (rows), the last position holding a constant or formula when input cells
    reach further (else None), and how many cells were cut at the head; None when nothing is
    cut or the range is not one a lookup searches that way."""
    if site.function == "VLOOKUP":
        down = True
    elif site.function == "HLOOKUP":
        down = False
    elif site.array_form:  # LOOKUP(value, array): first column unless wider than tall
        down = box.rows >= box.cols
    elif box.cols == 1:
        down = True
    elif box.rows == 1:
        down = False
    else:
        return None
    if down:
        last, data = occupancy.last(sheet, box.left, box.top, box.bottom, True)
        keep = box.cols if site.array_form else 1  # the array must stay at least as tall as wide
        first = _first(occupancy, sheet, box.left, box.top, box.bottom, True)
        top = first if first is not None else box.top
        bottom = max(last or top, top + keep - 1)
        floor = max(data or top, top + keep - 1)
        if top == box.top and bottom >= box.bottom:
            return None
        cut = Box(box.sheet, top, box.left, bottom, box.right)
        return cut, True, (floor if floor < bottom else None), top - box.top
    last, data = occupancy.last(sheet, box.top, box.left, box.right, False)
    keep = box.rows + 1 if site.array_form else 1  # and wider than tall
    first = _first(occupancy, sheet, box.top, box.left, box.right, False)
    left = first if first is not None else box.left
    right = max(last or left, left + keep - 1)
    floor = max(data or left, left + keep - 1)
    if left == box.left and right >= box.right:
        return None
    cut = Box(box.sheet, box.top, left, box.bottom, right)
    return cut, False, (floor if floor < right else None), left - box.left


def bound_lookups(
    model, inputs: list[InputBox], cells: list[tuple[int, int, int]] | None = None,
) -> ModelCorrections:
    """Rewrite, in `model`, every lookup whose searched range has a blank tail; returns what
    changed. `cells` (sheet index, row, col) are the formula cells to look at, every cell when
    None; array formulas must be left out (a plain formula in their place means something else)."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    index_of = {name.lower(): i for i, name in enumerate(sheets)}
    occupancy = _Occupancy(model, inputs)
    names: list[dict] | None = None
    corrections = ModelCorrections()

    def resolve(arg: RangeArg, own_sheet: int) -> tuple[Box, int] | None:
        nonlocal names
        text = found.tokens[arg.token]
        box = parse_range(text)
        if box is None:
            named = parse_name(text)
            if named is None:
                return None
            if names is None:  # costly on name-heavy workbooks: only when a lookup uses one
                names = model.get_defined_name_list()
            scope_sheet = index_of.get(named[0].lower()) if named[0] else own_sheet
            entry = next((d for d in names if d["name"].lower() == named[1].lower() and d["scope"] == scope_sheet), None)
            entry = entry or next((d for d in names if d["name"].lower() == named[1].lower() and d["scope"] is None), None)
            box = parse_range(entry["formula"].lstrip("=")) if entry else None
            if box is None or box.sheet is None:
                return None
        sheet = own_sheet if box.sheet is None else index_of.get(box.sheet.lower())
        return None if sheet is None else (box, sheet)

    for sheet, row, col in model.get_all_cells() if cells is None else cells:
        formula = model.get_cell_formula(sheet, row, col)
        if not formula:
            continue
        found = find_lookups(formula)
        if not found.sites:
            continue
        tokens = list(found.tokens)
        dynamic: list[list] = []
        changed = False
        for site in found.sites:
            if not site.needs_bounds or site.searched.token is None:
                continue
            resolved = resolve(site.searched, sheet)
            if resolved is None:
                continue
            box, at = resolved
            follow = None
            if site.follows is not None:
                follow = resolve(site.follows, sheet) if site.follows.token is not None else None
                if follow is None or (follow[0].rows > 1 and follow[0].cols > 1):
                    continue  # a result vector we cannot cut alongside
            cut = _bounded(box, at, site, occupancy)
            if cut is None:
                continue
            new_box, down, floor, offset = cut
            tokens[site.searched.token] = new_box.text()
            changed = True
            if floor is not None and site.follows is None:
                dynamic.append([site.searched.token, at, new_box.top, new_box.left, new_box.bottom,
                                new_box.right, new_box.sheet, down, floor])
            if offset and site.function == "MATCH":
                tokens[site.open_token] = "(" + tokens[site.open_token]
                tokens[site.close_token] = tokens[site.close_token] + f"+{offset})"
            if follow is not None:
                fbox = follow[0]
                length = new_box.rows if down else new_box.cols
                if fbox.cols == 1:
                    start = fbox.top + offset
                    tokens[site.follows.token] = Box(fbox.sheet, start, fbox.left, start + length - 1, fbox.right).text()
                else:
                    start = fbox.left + offset
                    tokens[site.follows.token] = Box(fbox.sheet, fbox.top, start, fbox.bottom, start + length - 1).text()
        if not changed:
            continue
        model.update_cell_with_formula(sheet, row, col, "=" + "".join(tokens))
        corrections.rewrites.append(
            Rewrite(sheet, row, col, formula.lstrip("="), dynamic, tokens if dynamic else [])
        )
    return corrections


def adjust_to_inputs(model, corrections: ModelCorrections) -> None:
    """Cut again, after a job wrote its inputs, each range whose cut runs into input cells the
    job left blank: the range then ends at its last cell holding a value, as Excel sees it.
    Costs nothing for models without such ranges."""
    for rewrite in corrections.dynamic:
        tokens = list(rewrite.tokens)
        for token, sheet, top, left, bottom, right, box_sheet, down, floor in rewrite.dynamic:
            end = bottom if down else right
            while end > floor:
                row, col = (end, left) if down else (top, end)
                if model.get_cell_content(sheet, row, col) != "":
                    break
                end -= 1
            box = Box(box_sheet, top, left, end, right) if down else Box(box_sheet, top, left, bottom, end)
            tokens[token] = box.text()
        formula = "=" + "".join(tokens)
        if formula != model.get_cell_formula(rewrite.sheet, rewrite.row, rewrite.col):
            model.update_cell_with_formula(rewrite.sheet, rewrite.row, rewrite.col, formula)
