"""The dynamic-array evaluator: a formula's syntax tree (parse.py) over the values IronCalc
holds for its precedents, with LET and LAMBDA bindings, arrays broadcast as Excel does and
every function of functions.py. Whatever it cannot do as Excel would raises Unsupported: the
cell is then flagged, never given a plausible value."""

from __future__ import annotations

import functools
import math
import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.parse import bare, parse
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.corrections.model import DefinedNames
from shared.calc.refs import column_number, intersected

_REF = re.compile(
    r"(?:(?:'(?P<q>(?:[^']|'')+)'|(?P<p>[^'!]+))!)?(?:"
    r"\$?(?P<c1>[A-Za-z]{1,3})\$?(?P<r1>\d+)(?::\$?(?P<c2>[A-Za-z]{1,3})\$?(?P<r2>\d+))?"
    r"|\$?(?P<wc1>[A-Za-z]{1,3}):\$?(?P<wc2>[A-Za-z]{1,3})|\$?(?P<wr1>\d+):\$?(?P<wr2>\d+))"
)
MAX_CELLS = 1_000_000
_RC_PART = re.compile(r"R(\[-?\d+\]|\d+)C(\[-?\d+\]|\d+)")


def a1(text: str, row: int, col: int) -> str:
    """An R1C1 reference (`R[0]C[-15]:R[1]C[-13]`, relative to the cell at row, col) in A1."""
    from shared.calc.refs import cell_name

    def one(match: re.Match) -> str:
        r, c = match.group(1), match.group(2)
        r = row + int(r[1:-1]) if r.startswith("[") else int(r)
        c = col + int(c[1:-1]) if c.startswith("[") else int(c)
        if r < 1 or c < 1:
            raise Unsupported(f"reference {text} outside the sheet")
        return cell_name(r, c)
    return _RC_PART.sub(one, text)
_DEPTH = 200  # lambda calls nested deeper than this are reported (Excel's own limit is higher)


class Book:
    """What the evaluator reads: the model's values, sheet names, defined names, and the
    spilled results of other dynamic-array cells of this calculation."""

    def __init__(self, model, sheets: list[str], read_cell, spills: dict, engine_spills=None):
        self.model = model
        self.sheets = sheets
        self.index_of = {name.upper(): i for i, name in enumerate(sheets)}
        self.read_cell = read_cell
        self.spills = spills  # (sheet, row, col) -> (rows, cols) or Err, this calculation's
        self.engine_spills = engine_spills  # those IronCalc spilled (settle.EngineSpills), or None
        self.defined = DefinedNames(model)  # (name, sheet) -> the name's formula, or None
        # ranges read since the model last changed: many cells read the same range
        self._read: dict[Ref, Grid] = {}
        self.reads: list | None = None  # (ref, grid) of every range read, while a cell is evaluated

    def changed(self, area: Ref | None = None) -> None:
        """The model's values changed: read again the ranges overlapping `area` (cells written,
        whose dependants keep their values until the model is calculated again), or every range
        (None: a recalculation)."""
        if area is None:
            self._read.clear()
            if self.engine_spills is not None:
                self.engine_spills.forget()
            return
        for ref in [r for r in self._read if r.sheet == area.sheet and r.top <= area.bottom
                    and area.top <= r.bottom and r.left <= area.right and area.left <= r.right]:
            del self._read[ref]

    def spill_shape(self, anchor):
        """(rows, cols) or the Err of the anchor's spill in this calculation, None: no spill known."""
        shape = self.spills.get(anchor)
        if shape is None and self.engine_spills is not None:
            shape = self.engine_spills.shape(anchor)
        return shape

    def read(self, ref: Ref) -> Grid:
        grid = self._read.get(ref)
        if grid is None:
            grid = self._read_cells(ref)
            if ref.top != ref.bottom or ref.left != ref.right:  # ranges are kept, cells read again
                self._read[ref] = grid
        if self.reads is not None:
            self.reads.append((ref, grid))
        return grid

    def _read_cells(self, ref: Ref) -> Grid:
        rows = []
        for r in range(ref.top, ref.bottom + 1):
            line = []
            for c in range(ref.left, ref.right + 1):
                kind, value = self.read_cell(self.model, ref.sheet, r, c)
                if kind == "empty":
                    line.append(None)
                elif kind == "e":
                    line.append(Err(value))
                elif kind == "n":
                    line.append(float(value))
                else:
                    line.append(value)
            rows.append(line)
        return Grid(rows)


@functools.lru_cache(maxsize=8192)
def _tree(text: str):
    """A formula's parse tree, parsed once per text: a job evaluates the same formulas again, and
    nothing changes a tree once parsed (an Unsupported is raised anew each time)."""
    return parse(text)


class Evaluator:
    def __init__(self, book: Book, sheet: int, row: int, col: int):
        self.book = book
        self.sheet, self.row, self.col = sheet, row, col
        self.depth = 0
        self.spill_reads: list[tuple[int, int, int]] = []

    # --- entry ------------------------------------------------------------------------------

    def formula(self, text: str):
        return self.value(_tree(text), {})

    def value(self, node, env: dict):
        kind = node[0]
        if kind == "num":
            return node[1]
        if kind in ("str", "bool"):
            return node[1]
        if kind == "err":
            return Err(node[1])
        if kind == "missing":
            return MISSING
        if kind == "ref":
            return self.reference(node[1])
        if kind == "rc":
            return self.reference(a1(node[1], self.row, self.col))
        if kind == "spill":
            return self.spilled(node[1][1])
        if kind == "name":
            return self.name(node[1], env)
        if kind == "array":
            return Grid([[self.scalar(self.value(item, env)) for item in row] for row in node[1]])
        if kind == "neg":
            return self.lift(lambda x: _negate(x), self.value(node[1], env))
        if kind == "pos":
            return self.value(node[1], env)
        if kind == "percent":
            return self.lift(lambda x: _arith("/", x, 100.0), self.value(node[1], env))
        if kind == "at":
            return self.intersect(self.value(node[1], env))
        if kind == "op":
            return self.operator(node[1], self.value(node[2], env), self.value(node[3], env))
        if kind == "invoke":
            target = self.value(node[1], env)
            if not isinstance(target, Lambda):
                return v.VALUE
            return self.call_lambda(target, [self.value(a, env) for a in node[2]])
        if kind == "call":
            from shared.calc.corrections.dynamic.functions import call

            return call(self, node[1], node[2], env)
        raise Unsupported(f"formula part {kind}")

    # --- references and names ---------------------------------------------------------------

    def reference(self, text: str) -> Ref:
        match = _REF.fullmatch(text)
        if match is None:
            raise Unsupported(f"reference {text}")
        sheet_name = match.group("q").replace("''", "'") if match.group("q") else match.group("p")
        sheet = self.sheet if sheet_name is None else self.book.index_of.get(sheet_name.upper())
        if sheet is None:
            raise Unsupported(f"reference {text} to another workbook or a missing sheet")
        if match.group("c1"):
            top, left = int(match.group("r1")), column_number(match.group("c1").upper())
            bottom, right = top, left
            if match.group("c2"):
                bottom, right = int(match.group("r2")), column_number(match.group("c2").upper())
        else:
            _, last_row, _, last_col = self.book.model.get_sheet_dimensions(sheet)
            if match.group("wc1"):
                left, right = column_number(match.group("wc1").upper()), column_number(match.group("wc2").upper())
                top, bottom = 1, max(last_row, 1)
            else:
                top, bottom = int(match.group("wr1")), int(match.group("wr2"))
                left, right = 1, max(last_col, 1)
        top, bottom = sorted((top, bottom))
        left, right = sorted((left, right))
        if (bottom - top + 1) * (right - left + 1) > MAX_CELLS:
            raise Unsupported(f"reference {text} larger than {MAX_CELLS} cells")
        return Ref(sheet, top, left, bottom, right)

    def spilled(self, text: str):
        anchor = self.reference(text)
        key = (anchor.sheet, anchor.top, anchor.left)
        shape = self.book.spill_shape(key)
        if shape is None:
            raise Unsupported(f"spill reference {text}# to a cell that is not a dynamic array's")
        self.spill_reads.append(key)
        if isinstance(shape, Err):
            return v.REF
        rows, cols = shape
        return Ref(anchor.sheet, anchor.top, anchor.left, anchor.top + rows - 1, anchor.left + cols - 1)

    def name(self, text: str, env: dict):
        key = text.upper()
        key = key.removeprefix("_XLPM.")
        if key in env:
            return env[key]
        if key.startswith("_XLETA."):
            from shared.calc.corrections.dynamic.functions import eta

            return eta(bare(key))
        sheet_part, _, plain = text.rpartition("!")
        scope = self.sheet
        if sheet_part:
            scope = self.book.index_of.get(sheet_part.strip("'").replace("''", "'").upper())
        definition = self.book.defined(plain, scope)
        if definition is None:
            return v.NAME
        self.depth += 1
        if self.depth > _DEPTH:
            raise Unsupported("defined names nested too deep")
        try:
            return self.value(parse(definition), {})
        finally:
            self.depth -= 1

    # --- values -----------------------------------------------------------------------------

    def grid(self, value) -> Grid:
        if isinstance(value, Ref):
            # read here, not where the reference is made: ROW(1:3) in row 1 reads no value
            if value.sheet == self.sheet and value.top <= self.row <= value.bottom \
                    and value.left <= self.col <= value.right:
                raise Unsupported("a circular reference (the cell is in its own range)")
            return self.book.read(value)
        if isinstance(value, Grid):
            return value
        if isinstance(value, Lambda):
            return Grid([[v.CALC]])
        return Grid([[None if value is MISSING else value]])

    def scalar(self, value):
        """One value; an array's top-left (a 1x1 array is its value)."""
        if isinstance(value, (Ref, Grid)):
            grid = self.grid(value)
            return grid.rows[0][0] if grid.rows and grid.rows[0] else None
        if isinstance(value, Lambda):
            return v.CALC
        return value

    def intersect(self, value):
        """`@`: a range's cell in the formula's row or column; an array's top-left value."""
        if isinstance(value, Ref):
            rows, cols = value.shape
            if rows == 1 and cols == 1:
                return self.scalar(value)
            if value.sheet != self.sheet:
                return v.VALUE
            cell = intersected(value.top, value.left, value.bottom, value.right, self.row, self.col)
            if cell is None:
                return v.VALUE
            return self.scalar(Ref(value.sheet, *cell, *cell))
        return self.scalar(value)

    def lift(self, function, *args):
        """An elementwise function over scalars, broadcast over array arguments as Excel does
        (a 1-row or 1-column array stretches; cells beyond a smaller array are #N/A)."""
        if not any(isinstance(a, (Ref, Grid)) for a in args):
            return function(*[v.CALC if isinstance(a, Lambda) else a for a in args])
        grids = [self.grid(a) if isinstance(a, (Ref, Grid)) else None for a in args]
        shapes = [g.shape for g in grids if g is not None]
        if any(s == (1, 1) for s in shapes) and all(s == (1, 1) for s in shapes):
            return function(*[g.rows[0][0] if g is not None else a for g, a in zip(grids, args)])
        rows = max(s[0] for s in shapes)
        cols = max(s[1] for s in shapes)
        if all(g is None or g.shape == (rows, cols) for g in grids):
            # the common case (one array, or arrays of one size, with single values): row by row
            arrays = [i for i, g in enumerate(grids) if g is not None]
            if len(arrays) == 1:  # one array among single values: the function of its element
                at, fixed = arrays[0], list(args)

                def one(x):
                    fixed[at] = x
                    return function(*fixed)
                return Grid([[one(x) for x in row] for row in grids[at].rows])
            return Grid([
                [function(*items) for items in zip(*[
                    g.rows[r] if g is not None else [a] * cols for g, a in zip(grids, args)
                ])]
                for r in range(rows)
            ])
        sizes = [g.shape if g is not None else None for g in grids]
        out = []
        for r in range(rows):
            line = []
            for c in range(cols):
                items, missing = [], False
                for g, a, size in zip(grids, args, sizes):
                    if g is None:
                        items.append(a)
                        continue
                    gr, gc = size
                    rr = 0 if gr == 1 else r
                    cc = 0 if gc == 1 else c
                    if rr >= gr or cc >= gc:
                        missing = True
                        break
                    items.append(g.rows[rr][cc])
                line.append(v.NA if missing else function(*items))
            out.append(line)
        return Grid(out)

    def operator(self, op: str, left, right):
        if op == "&":
            return self.lift(_concat, left, right)
        if op in _ORDER_TESTS:
            return self.lift(_comparer(op), left, right)
        return self.lift(lambda a, b: _arith(op, a, b), left, right)

    def call_lambda(self, function: Lambda, args: list):
        if callable(function.body):
            return function.body(self, args)
        if len(args) > len(function.params):
            return v.VALUE
        env = dict(function.env)
        for name, value in zip(function.params, args + [MISSING] * (len(function.params) - len(args))):
            env[name] = value
        self.depth += 1
        if self.depth > _DEPTH:
            raise Unsupported("LAMBDA calls nested too deep")
        try:
            return self.value(function.body, env)
        finally:
            self.depth -= 1


def _negate(x):
    n = v.to_number(x)
    return n if isinstance(n, Err) else -n


def _concat(a, b):
    for x in (a, b):
        if isinstance(x, Err):
            return x
    return v.to_text(a) + v.to_text(b)


_ORDER_TESTS = {
    "=": lambda order: order == 0, "<>": lambda order: order != 0, "<": lambda order: order < 0,
    ">": lambda order: order > 0, "<=": lambda order: order <= 0, ">=": lambda order: order >= 0,
}


def _comparer(op: str):
    """The comparison `op` of two scalars (an error on either side is the answer)."""
    test, order = _ORDER_TESTS[op], v.compare

    def run(a, b):
        if isinstance(a, Err):
            return a
        if isinstance(b, Err):
            return b
        return test(order(a, b))
    return run


def _arith(op: str, a, b):
    for x in (a, b):
        if isinstance(x, Err):
            return x
    x, y = v.to_number(a), v.to_number(b)
    if isinstance(x, Err):
        return x
    if isinstance(y, Err):
        return y
    if op == "+":
        return v.checked(x + y)
    if op == "-":
        return v.checked(x - y)
    if op == "*":
        return v.checked(x * y)
    if op == "/":
        return v.DIV0 if y == 0 else v.checked(x / y)
    if op == "^":
        if x == 0 and y == 0:
            return v.NUM
        if x == 0 and y < 0:
            return v.DIV0
        try:
            result = math.pow(x, y)
        except (OverflowError, ValueError):
            return v.NUM
        return v.checked(result)
    raise Unsupported(f"operator {op}")
