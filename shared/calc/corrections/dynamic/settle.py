"""One dynamic-array cell evaluated and written into the model (see the package docstring);
functions/layer.py repeats it with the other planned cells until nothing changes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from shared.calc import run_context
from shared.calc.corrections.dynamic import complex_text, distributions, values as v
from shared.calc.corrections.dynamic.evaluate import Book, Evaluator
from shared.calc.corrections.dynamic.values import Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.refs import cell_name

MAX_ROW, MAX_COL = 1_048_576, 16_384


@dataclass
class State:
    """One calculation's dynamic arrays: the spills written so far."""

    book: Book
    occupied: set
    areas: dict = field(default_factory=dict)  # anchor -> (rows, cols) written this calculation
    last: dict = field(default_factory=dict)  # anchor -> _Memo of its last evaluation


@dataclass
class Settled:
    changed: bool = False
    written: tuple | None = None  # the anchor's content (and the spill's A1 range), when written
    reason: str | None = None


def new_state(model, sheets, read_cell, occupied, anchors=frozenset()) -> State:
    return State(Book(model, sheets, read_cell, {}, EngineSpills(model, anchors, occupied, read_cell)), occupied)


def _content(value) -> tuple:
    if value is None:
        return ("n", 0.0)  # a blank cell spilled shows 0
    if isinstance(value, Err):
        return ("e", value.code)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ("e", "#NUM!")
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    raise Unsupported(f"a result of type {type(value).__name__}")


def _same(a: tuple, b: tuple) -> bool:
    return a == b or (a[0] == b[0] == "n" and a[1] == b[1])


# Errors IronCalc answers that Excel never does: where a cell it calculates has one, ours
_ENGINE_ERRORS = {"#N/IMPL!", "#ERROR!"}


_DIGITS = re.compile(r"\d[\d.]*")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")  # digits grouped by commas (FIXED, DOLLAR)


def long_number(text: str) -> bool:
    """Whether a text holds a number as IronCalc writes it and Excel does not (values.general:
    15 significant digits, E notation from 1E+15 and below 1E-9): 16 or more significant
    digits, 16 or more before the point, or 9 zeros after `0.`; or digits grouped by commas
    with more than 15 significant digits before the zeros that end them (Excel's FIXED and
    DOLLAR write zeros after the 15th)."""
    for run in _GROUPED.findall(text):
        if len(run.replace(",", "").replace(".", "").strip("0")) > 15:
            return True
    for run in _DIGITS.findall(text):
        whole, _, fraction = run.partition(".")
        if len(whole) >= 16 or len((whole + fraction.rstrip(".")).lstrip("0")) >= 16:
            return True
        if not whole.strip("0") and len(fraction) - len(fraction.lstrip("0")) >= 9:
            return True
    return False


def long_value(number: float) -> bool:
    """Whether Excel writes a number as text otherwise than its shortest digits (IronCalc's):
    with 16 or more significant digits, from 1E+15 on, or below 1E-9 (values.general)."""
    if number == 0 or math.isnan(number) or math.isinf(number):
        return False
    if abs(number) >= 1e15 or abs(number) < 1e-9:
        return True
    digits = repr(abs(number)).split("e")[0].replace(".", "").strip("0")
    return len(digits) >= 16


def _long_cell(content) -> bool:
    return content[0] == "n" and isinstance(content[1], float) and long_value(content[1])


def _fraction_cell(content) -> bool:
    return content[0] == "n" and math.isfinite(content[1]) and content[1] != int(content[1])


def _large_cell(content) -> bool:
    return content[0] == "n" and content[1] > distributions.EXACT_COUNT


# what a cell's value is tested for (Selected.when_value)
VALUE_TESTS = {"long": _long_cell, "fraction": _fraction_cell, "large": _large_cell}


def settle(model, target, state: State, read_cell, write_cell) -> Settled:
    key = (target.sheet, target.row, target.col)
    if not target.always and key not in state.areas \
            and not any(read_cell(model, *cell)[0] == "empty" for cell in target.when_blank) \
            and not any(read_cell(model, *cell)[0] in ("s", "b") for cell in target.when_text) \
            and not any(VALUE_TESTS[test](read_cell(model, *cell)) for test, cell in target.when_value):
        kind, value = read_cell(model, *key)
        if kind == "s" and (target.when_digits and long_number(value)
                            or target.when_complex and complex_text.excel_form(value) is not None):
            pass  # a number in the text as Excel does not write it: ours
        elif target.when_area and _area_filled(model, target, read_cell):
            pass  # cells of a legacy array formula's area beyond IronCalc's result: ours
        elif target.when_spill and _spill_shows(model, key, state, read_cell):
            pass  # a number held as text misread by IronCalc's arithmetic in its spill: ours
        elif kind != "e" or value not in _ENGINE_ERRORS and value not in target.when_error:
            return Settled()  # IronCalc's value stands
    memo = state.last.get(key)
    if memo is not None and memo.holds(state.book, _shown(model, key, memo.extent, read_cell)):
        return Settled(written=memo.written)  # what it read and shows is as it was: it stands
    run_context.restart_cell(key)  # evaluated again (a later round): the same numbers drawn
    state.book.reads = reads = []
    evaluator = Evaluator(state.book, *key)
    try:
        settled = _evaluated(model, target, state, read_cell, write_cell, key, evaluator)
    finally:
        state.book.reads = None
    if settled.reason is None:
        spills = {k: state.book.spill_shape(k) for k in evaluator.spill_reads}
        extent = state.areas.get(key, (1, 1))
        state.last[key] = _Memo(tuple(reads), spills, settled.written, extent,
                                _shown(model, key, extent, read_cell))
    return settled


def _area_filled(model, target, read_cell) -> bool:
    """Whether a cell of a legacy array formula's area (the anchor's aside) shows #VALUE!, what
    IronCalc writes beyond its result (dynamic.area_watch)."""
    bottom, right = target.file_area
    key = (target.sheet, target.row, target.col)
    return _beyond_anchor_shows(model, key, (bottom - target.row + 1, right - target.col + 1), read_cell)


def _spill_shows(model, key, state: State, read_cell) -> bool:
    """Whether a cell of the spill IronCalc made from a dynamic array's anchor shows #VALUE!."""
    shape = state.book.engine_spills.shape(key)
    return isinstance(shape, tuple) and _beyond_anchor_shows(model, key, shape, read_cell)


def _beyond_anchor_shows(model, key, extent: tuple[int, int], read_cell) -> bool:
    """Whether a cell of the `extent` (rows, columns) from an anchor, the anchor aside, shows
    #VALUE!."""
    sheet, row, col = key
    return any(read_cell(model, sheet, row + r, col + c) == ("e", "#VALUE!")
               for r in range(extent[0]) for c in range(extent[1]) if (r, c) != (0, 0))


def _shown(model, key, extent: tuple[int, int], read_cell) -> list:
    sheet, row, col = key
    return [read_cell(model, sheet, row + r, col + c) for r in range(extent[0]) for c in range(extent[1])]


@dataclass
class _Memo:
    """A cell's last evaluation in this calculation: the ranges it read (with their values),
    the spills it read (with their shapes), what it wrote and what its cells then showed. In a
    later round of the same calculation (the model calculated again after other cells were
    written), a cell whose reads and shown cells are all unchanged keeps its answer without
    being evaluated again."""

    reads: tuple
    spills: dict
    written: tuple | None
    extent: tuple[int, int]  # the cells it shows (its area), and their contents then
    shown: list

    def holds(self, book: Book, shown: list) -> bool:
        return shown == self.shown and all(book.spill_shape(k) == s for k, s in self.spills.items()) \
            and all(book.read(ref).rows == grid.rows for ref, grid in self.reads)


def _evaluated(model, target, state: State, read_cell, write_cell, key, evaluator) -> Settled:
    try:
        result = evaluator.formula(target.formula)
        if not target.areas_known and isinstance(result, (Ref, Grid)) and evaluator.grid(result).shape != (1, 1):
            raise Unsupported("an array result in a model stored before array formulas were kept: "
                              "upload the workbook again")
        if not target.spills and isinstance(result, (Ref, Grid)):
            result = evaluator.intersect(result)  # a formula Excel calculates the legacy way
        grid = _grid(evaluator, result)
        contents = [[_content(x) for x in row] for row in grid.rows]
        if target.when_complex and contents[0][0][0] == "s":  # a complex number as Excel writes it
            contents[0][0] = ("s", complex_text.excel_form(contents[0][0][1]) or contents[0][0][1])
    except Unsupported as exc:
        state.book.spills.pop(key, None)
        return Settled(reason=str(exc))
    except RecursionError:
        return Settled(reason="formula nested too deep")
    except Exception as exc:  # noqa: BLE001 - an evaluation failure keeps IronCalc's value, flagged
        return Settled(reason=f"evaluation failed ({type(exc).__name__})")
    rows, cols = len(contents), len(contents[0])
    if target.fixed:  # a legacy array formula fills its own area, whatever the result's size
        contents, rows, cols = _fitted(contents, target), *_fixed_shape(target)
        state.book.spills[key] = (rows, cols)
    elif (rows, cols) != (1, 1) and _blocked(model, target, rows, cols, state):
        contents, rows, cols = [[("e", "#SPILL!")]], 1, 1
        state.book.spills[key] = v.SPILL
    else:
        state.book.spills[key] = (rows, cols)
    previous = state.areas.get(key) or _engine_extent(model, target, state, read_cell)
    same = previous == (rows, cols) and all(
        _same(read_cell(model, target.sheet, target.row + r, target.col + c), contents[r][c])
        for r in range(rows) for c in range(cols)
    )
    ref = None
    if target.spills and (rows, cols) != (1, 1):
        ref = f"{target.address}:{cell_name(target.row + rows - 1, target.col + cols - 1)}"
    if same:
        written = (*contents[0][0], ref) if key in state.areas else None
        return Settled(written=written)
    # the model's cells change from here (even if a write is refused)
    area = Ref(target.sheet, target.row, target.col, target.row + max(previous[0], rows) - 1,
               target.col + max(previous[1], cols) - 1)
    state.book.changed(area)
    # IronCalc refuses single cells of an array formula's area: whole areas are cleared
    for h, w in {previous, (rows, cols)}:
        try:
            model.range_clear_contents(target.sheet, target.row, target.col, target.row + h - 1, target.col + w - 1)
        except Exception:  # noqa: BLE001 - a legacy array formula's area IronCalc will not clear:
            # this cell keeps IronCalc's value and is flagged, the others are still corrected
            return Settled(reason="its area overlaps a legacy array formula")
    # the cells it spills into first: IronCalc refuses a spilled cell of a constant anchor
    for r, c in sorted(((r, c) for r in range(rows) for c in range(cols)), key=lambda rc: rc == (0, 0)):
        cell = (target.sheet, target.row + r, target.col + c)
        style = model.get_cell_style(*cell)
        try:
            write_cell(model, *cell, contents[r][c])
        except Exception:  # noqa: BLE001 - IronCalc refuses cells of a legacy array formula
            return Settled(reason="its spill runs into a legacy array formula")
        if model.get_cell_style(*cell) != style:
            model.set_cell_style(*cell, style)
    state.areas[key] = (rows, cols)
    state.book.changed(area)
    return Settled(changed=True, written=(*contents[0][0], ref))


def _fixed_shape(target) -> tuple[int, int]:
    return target.file_area[0] - target.row + 1, target.file_area[1] - target.col + 1


def _fitted(contents: list[list], target) -> list[list]:
    """A result in a legacy array formula's area: a single row or column repeated across,
    #N/A where the result has no value (Microsoft: "Guidelines and examples of array formulas")."""
    rows, cols = _fixed_shape(target)
    height, width = len(contents), len(contents[0])
    out = []
    for r in range(rows):
        line = []
        for c in range(cols):
            rr = 0 if height == 1 else r
            cc = 0 if width == 1 else c
            line.append(contents[rr][cc] if rr < height and cc < width else ("e", "#N/A"))
        out.append(line)
    return out


def _grid(evaluator, result) -> Grid:
    if isinstance(result, Lambda):
        return Grid([[v.CALC]])
    if isinstance(result, Ref):
        return evaluator.grid(result)
    if isinstance(result, Grid):
        return result if result.rows and result.rows[0] else Grid([[v.CALC]])
    if result is v.MISSING:
        return Grid([[0.0]])
    return Grid([[result]])


def _blocked(model, target, rows, cols, state: State) -> bool:
    if target.row + rows - 1 > MAX_ROW or target.col + cols - 1 > MAX_COL:
        return True
    others = [(k, a) for k, a in state.areas.items() if k != (target.sheet, target.row, target.col)
              and k[0] == target.sheet]
    for r in range(target.row, target.row + rows):
        for c in range(target.col, target.col + cols):
            if (r, c) == (target.row, target.col):
                continue
            if (target.sheet, r, c) in state.occupied or model.get_cell_formula(target.sheet, r, c):
                return True
            for (s, ar, ac), (h, w) in others:
                if ar <= r < ar + h and ac <= c < ac + w:
                    return True
    return False


def _engine_extent(model, target, state: State, read_cell) -> tuple[int, int]:
    """How far IronCalc spilled the anchor, at least the file's spill area."""
    if not target.spills:
        return 1, 1
    least = (1, 1) if target.file_area is None else \
        (target.file_area[0] - target.row + 1, target.file_area[1] - target.col + 1)
    return spilled_by_engine(model, (target.sheet, target.row, target.col), state.occupied, read_cell, least)


def spilled_by_engine(model, anchor, occupied, read_cell, least=(1, 1)) -> tuple[int, int]:
    """How far IronCalc spilled the anchor: the cells below and right of it holding a value
    that were empty at load (not `occupied`) and hold no formula of their own, at least `least`."""
    sheet, row, col = anchor
    rows, cols = max(1, least[0]), max(1, least[1])

    def spilled(r, c):
        return ((sheet, r, c) not in occupied
                and model.get_cell_formula(sheet, r, c) is None
                and read_cell(model, sheet, r, c)[0] != "empty")
    while row + rows <= MAX_ROW and spilled(row + rows, col):
        rows += 1
    while col + cols <= MAX_COL and spilled(row, col + cols):
        cols += 1
    return rows, cols


class EngineSpills:
    """The spills of the file's dynamic arrays IronCalc calculates (the layer's own are in
    Book.spills): `D1#` read by a cell the layer evaluates, D1 a SEQUENCE or a UNIQUE. Their
    shapes are read from the calculated model, again after each recalculation."""

    def __init__(self, model, anchors, occupied, read_cell):
        self.model, self.anchors, self.occupied, self.read_cell = model, anchors, occupied, read_cell
        self._shapes: dict = {}

    def shape(self, anchor):
        """(rows, cols) of the anchor's spill, #REF! where it could not spill; None: not an anchor
        of the file's."""
        if anchor not in self.anchors:
            return None
        if anchor not in self._shapes:
            kind, value = self.read_cell(self.model, *anchor)
            blocked = kind == "e" and value == "#SPILL!"
            self._shapes[anchor] = v.REF if blocked else spilled_by_engine(
                self.model, anchor, self.occupied, self.read_cell)
        return self._shapes[anchor]

    def forget(self) -> None:
        self._shapes.clear()
