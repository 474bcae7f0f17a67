"""Bounding approximate-match lookups in a loaded IronCalc model (see lookups.py for the rule).

Each lookup whose searched range runs past the last cell that can hold a value is rewritten in
the model, once, at load: the range is cut just after that cell. "Can hold a value" means a
non-empty cell (constant or formula) or a cell of a named input range, since jobs write there:
a job that fills an input further down is still searched. The original formula text is kept
(`Rewrite.restore`) so the exported workbook shows what the user wrote.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from shared.calc.corrections.lookups import Box, LookupSite, RangeArg, find_lookups, parse_name, parse_range

InputBox = tuple[int, int, int, int, int]  # sheet index, top, left, bottom, right


@dataclass
class Rewrite:
    """A cell whose formula the model calculates in a corrected form.

    `restore` maps the position of a range operand among the formula's range operands to the
    text the user wrote there.
    """

    sheet: int
    row: int
    col: int
    restore: list[tuple[int, str]]
    # Ranges whose cut runs into named input cells: [token, sheet index, top, left, bottom,
    # right, sheet as written or None, searched down, last position holding a constant or
    # formula]. A job that leaves those inputs blank gets the range cut again (adjust_to_inputs).
    dynamic: list[list] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # the rewritten formula, when dynamic


@dataclass
class ModelCorrections:
    """What the correction layer changed in one model; empty for most workbooks."""

    rewrites: list[Rewrite] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rewrites)

    def to_header(self) -> dict:
        return {"version": 1, "rewrites": [
            [w.sheet, w.row, w.col, w.restore, w.dynamic, w.tokens] for w in self.rewrites
        ]}

    @classmethod
    def from_header(cls, data: dict | None) -> "ModelCorrections":
        if not data:
            return cls()
        return cls([
            Rewrite(s, r, c, [(int(i), str(t)) for i, t in restore], dynamic, tokens)
            for s, r, c, restore, dynamic, tokens in data.get("rewrites", [])
        ])

    @property
    def dynamic(self) -> list[Rewrite]:
        return [w for w in self.rewrites if w.dynamic]


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


def _bounded(box: Box, sheet: int, site: LookupSite, occupancy: _Occupancy) -> tuple[Box, bool, int | None] | None:
    """The searched box cut after its last cell that can hold a value, whether the search
    runs down (rows), and the last position holding a constant or formula when input cells
    reach further (else None); None when the range is not one a lookup searches that way."""
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
        bottom = max(last or box.top, box.top + keep - 1)
        floor = max(data or box.top, box.top + keep - 1)
        cut = Box(box.sheet, box.top, box.left, bottom, box.right)
        return (cut, True, floor if floor < bottom else None) if bottom < box.bottom else None
    last, data = occupancy.last(sheet, box.top, box.left, box.right, False)
    keep = box.rows + 1 if site.array_form else 1  # and wider than tall
    right = max(last or box.left, box.left + keep - 1)
    floor = max(data or box.left, box.left + keep - 1)
    cut = Box(box.sheet, box.top, box.left, box.bottom, right)
    return (cut, False, floor if floor < right else None) if right < box.right else None


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
        replaced: dict[int, str] = {}
        dynamic: list[list] = []
        for site in found.sites:
            if not site.needs_bounds or site.searched.token is None:
                continue
            resolved = resolve(site.searched, sheet)
            if resolved is None:
                continue
            box, at = resolved
            cut = _bounded(box, at, site, occupancy)
            if cut is None:
                continue
            new_box, down, floor = cut
            replaced[site.searched.token] = new_box.text()
            if floor is not None and site.follows is None:
                dynamic.append([site.searched.token, at, new_box.top, new_box.left, new_box.bottom,
                                new_box.right, new_box.sheet, down, floor])
            if site.follows is not None and site.follows.token is not None:
                follow = resolve(site.follows, sheet)
                if follow is not None:
                    fbox = follow[0]
                    length = new_box.rows if down else new_box.cols
                    if fbox.cols == 1 and fbox.rows > length:
                        replaced[site.follows.token] = Box(fbox.sheet, fbox.top, fbox.left, fbox.top + length - 1, fbox.right).text()
                    elif fbox.rows == 1 and fbox.cols > length:
                        replaced[site.follows.token] = Box(fbox.sheet, fbox.top, fbox.left, fbox.bottom, fbox.left + length - 1).text()
        if not replaced:
            continue
        tokens = list(found.tokens)
        ranges = [i for i, kind in enumerate(found.kinds) if kind == "OPERAND:RANGE"]
        restore = [(ranges.index(i), tokens[i]) for i in sorted(replaced)]
        for i, text in replaced.items():
            tokens[i] = text
        model.update_cell_with_formula(sheet, row, col, "=" + "".join(tokens))
        corrections.rewrites.append(Rewrite(sheet, row, col, restore, dynamic, tokens if dynamic else []))
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
