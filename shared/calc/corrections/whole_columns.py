"""Statistics, SUMPRODUCT, lookups and array aggregates over whole columns, bounded at model
load to the rows that can hold values: the same answer, at the cost of the data instead of a
million blank cells.

IronCalc 0.9.1 reads every one of a whole column's 1,048,576 cells for AVERAGE, MAX, MIN,
COUNT, COUNTA and the other statistics (about 0.1 s a cell; SUM, SUMIF, COUNTIF and the other
criteria functions cost nothing there), for CORREL and the paired statistics (0.25 s), and
builds the whole array for SUMPRODUCT, LOOKUP over an expression and array formulas (0.4-1.3 s
a cell): a workbook with a few dozen `COUNTA(A:A)` or `MAX(Data!B:B)` took seconds a job.

Excel's rules make the cut exact:

- The statistics of IGNORING_BLANKS ignore empty cells in a reference (Microsoft support,
  "AVERAGE function": "cells that contain text, logical values, or empty cells are ignored";
  likewise MAX, MIN, COUNT, COUNTA, MEDIAN, MODE, the STDEV and VAR families, LARGE, SMALL,
  PERCENTILE, QUARTILE, PERCENTRANK, RANK, SUBTOTAL, CONCAT): a range argument written as a
  whole column (`B:B`, `Data!$B:$D`, or a name to one) answers the same when cut to the rows
  that can hold values, one blank row kept. The paired statistics (CORREL, SLOPE, ...) leave out
  pairs with an empty cell: both columns are cut to the same row. COUNTBLANK adds the rows cut.
- SUMPRODUCT of plain ranges and element-wise expressions of them (`(A:A="x")*B:B`, no function
  call inside): every row after the last that can hold a value is blank in every column the
  call reads, so each gives the same product. With E the second of them, the call becomes
  `SUMPRODUCT(args to row E) + (1048576 - E) * SUMPRODUCT(args at rows E-1:E) / 2`: exact
  (halving and doubling lose nothing), counting of blanks included (`SUMPRODUCT(--(A:A=""))`),
  and an error in a blank row stays the answer. Two blank rows, because IronCalc takes a
  one-cell range as a single value where a longer one is an array.
- In an array formula of one cell, SUM and SUMPRODUCT of such expressions (IF among them,
  which takes arrays element by element) likewise, and MAX, MIN, AND and OR cut to row E
  alone, since the blank rows kept answer for all of them.
- LOOKUP over such expressions (the last-match idiom `LOOKUP(2,1/(A:A="x"),B:B)`), and MATCH
  with match_type 0 in an array formula, cut to row E: the position found is where it was, or
  in the blank rows, which all give the result's blank cell.
- FILTER of a whole column by an element-wise test of whole columns (`FILTER(C:C,B:B=3)`,
  `FILTER(A:A,A:A<>"")`): every row after the data is blank in every column read, so the test
  answers there what it answers on the first of them, row E. Where that is not true (a blank
  row is left out, or it is an error, kept in the cut at row E) the rows after E change
  nothing: the call becomes `IF(IFERROR((test at row E)*1<>0,FALSE),FILTER(whole columns),
  FILTER(columns to row E))`, and IronCalc, which calculates only the branch taken, reads the
  million rows only when the blank rows are in the answer. IronCalc takes 0.7-1 s a call over
  a whole column otherwise, and FILTER spills: its formula is rewritten where it fills several
  cells too, the area it spills into being the same.
- XLOOKUP and XMATCH with an exact match (from the first item or the last) over such
  expressions (`XLOOKUP(1,(A:A="rent")*(C:C>100),B:B)`), likewise cut to row E.
- UNIQUE of a whole column (or of several, by rows): the blank rows after the data are one
  and the same row, once in the answer, or left out with exactly_once; kept two of them, at rows
  E and E+1, the answer is the same (IronCalc 0.3 s a call over a whole column).

"Can hold a value" is shared.calc.corrections.model's rule (a non-empty cell or a named input
cell, since jobs write there); a sheet where a dynamic array could spill into the column is left
whole, as are array formulas filling several cells, ranges that do not run the whole column, and
cuts that remove fewer than `MIN_CUT` rows.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.exact_lookups import MIN_CUT, Names, spilling_sheets
from shared.calc.corrections.formula_tokens import (
    SINGLE_CELL,
    calls,
    function_name,
    replace_call,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.lookups import Box, parse_name, parse_range
from shared.calc.corrections.model import InputBox, Rewrite, _Occupancy, put_formula
from shared.calc.refs import MAX_ROWS

# function -> the (0-based) arguments that are references whose empty cells it ignores; None: all
IGNORING_BLANKS: dict[str, frozenset[int] | None] = {
    **dict.fromkeys((
        "AVERAGE", "AVERAGEA", "MAX", "MAXA", "MIN", "MINA", "COUNT", "COUNTA", "PRODUCT", "MEDIAN",
        "STDEV", "STDEV.S", "STDEV.P", "STDEVA", "STDEVP", "STDEVPA", "VAR", "VAR.S", "VAR.P", "VARA",
        "VARP", "VARPA", "SUMSQ", "AVEDEV", "DEVSQ", "GEOMEAN", "HARMEAN", "KURT", "SKEW", "SKEW.P",
    ), None),
    **dict.fromkeys(("LARGE", "SMALL", "PERCENTILE", "PERCENTILE.INC", "PERCENTILE.EXC", "QUARTILE",
                     "QUARTILE.INC", "QUARTILE.EXC"), frozenset({0})),
    **dict.fromkeys(("RANK", "RANK.EQ", "RANK.AVG"), frozenset({1})),
    **dict.fromkeys(("MODE", "MODE.SNGL", "CONCAT"), None),
    **dict.fromkeys(("PERCENTRANK", "PERCENTRANK.INC", "PERCENTRANK.EXC"), frozenset({0})),
    "SUBTOTAL": frozenset(range(1, 255)),
}
# paired statistics: the pairs where either cell is empty are left out, so both columns are cut
# to the same row (Microsoft support, "CORREL function" and the others)
PAIRED = {
    **dict.fromkeys(("CORREL", "PEARSON", "RSQ", "SLOPE", "INTERCEPT", "STEYX", "COVAR", "COVARIANCE.P",
                     "COVARIANCE.S"), (0, 1)),
    **dict.fromkeys(("FORECAST", "FORECAST.LINEAR"), (1, 2)),
}
# cheap tests on a sheet's XML (upper case) and a cell's formula: a call to one of the functions,
# and a whole-column reference (or a defined name to one) for it to read
MENTION = re.compile(rb"(?<![A-Z0-9_])(?:SUM|AVERAGE|MAX|MIN|COUNT|PRODUCT|MEDIAN|STDEV|VAR|AVEDEV|DEVSQ|AND|OR"
                     rb"|GEOMEAN|HARMEAN|KURT|SKEW|LARGE|SMALL|PERCENTILE|QUARTILE|RANK|MODE|CONCAT|PERCENTRANK"
                     rb"|CORREL|PEARSON|RSQ|SLOPE|INTERCEPT|STEYX|COVAR|FORECAST|LOOKUP|MATCH|SUBTOTAL|FILTER|UNIQUE"
                     rb"|XLOOKUP|XMATCH)[A-Z.]*\(")
KEYWORDS = (b"SUM", b"AVERAGE", b"MAX", b"MIN", b"COUNT", b"PRODUCT(", b"MEDIAN(", b"STDEV", b"VAR", b"AND(", b"OR(",
            b"SUMSQ(", b"AVEDEV(", b"DEVSQ(", b"GEOMEAN(", b"HARMEAN(", b"KURT(", b"SKEW", b"LARGE(", b"SMALL(",
            b"PERCENTILE", b"QUARTILE", b"RANK", b"MODE", b"CONCAT(", b"CORREL(", b"PEARSON(", b"RSQ(", b"SLOPE(",
            b"INTERCEPT(", b"STEYX(", b"COVAR", b"FORECAST", b"LOOKUP(", b"MATCH(", b"SUBTOTAL(", b"FILTER(",
            b"UNIQUE(", b"XLOOKUP(", b"XMATCH(")
WHOLE_COLUMN = re.compile(r"(?<![A-Za-z0-9_.$])\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}(?![A-Za-z0-9_(!])")
COLUMN_MENTION = re.compile(rb"(?<![A-Z0-9_.$])\$?[A-Z]{1,3}:\$?[A-Z]{1,3}(?![A-Z0-9_(!])")  # in sheet XML
MAX_WIDTH = 256  # columns of one whole-column range worth looking through
# In a one-cell array formula, these aggregate an array element by element (Microsoft: "Guidelines
# and examples of array formulas"): True where blank rows add up (sums), False where one of them
# stands for all (largest, smallest, all or any true). Not COUNT and COUNTA: whether IF's blank
# cell counts differs between a whole column and a cut range in IronCalc and the layer.
ARRAY_AGGREGATES = {"SUM": True, "SUMPRODUCT": True, "MAX": False, "MIN": False, "AND": False, "OR": False}
ELEMENTWISE = frozenset({"IF"})  # functions that take arrays element by element in IronCalc too
# (no white space: IronCalc writes none but the intersection operator, whose blank row could differ)
_ELEMENT_PARTS = frozenset({Token.OPERAND, Token.OP_IN, Token.OP_PRE, Token.OP_POST, Token.PAREN})


class _Bounds:
    """The last row of a sheet's columns that can hold a value, and where spills forbid a cut."""

    def __init__(self, model, data: bytes, inputs: list[InputBox]):
        self._model, self._data = model, data
        self._occupancy = _Occupancy(model, inputs)
        self._spills: dict[int, list[tuple[int, int]]] | None = None

    def end(self, box: Box, sheet: int) -> int | None:
        """The row just after the last one of `box`'s columns that can hold a value; None when
        the box does not run the whole column, is too wide, or a spill could reach into it."""
        if box.top != 1 or box.bottom != MAX_ROWS or box.cols > MAX_WIDTH:
            return None
        if self._spills is None:
            self._spills = spilling_sheets(self._model, self._data)
        if any(col <= box.right for _row, col in self._spills.get(sheet, [])):
            return None
        last = 0
        for col in range(box.left, box.right + 1):
            found, _ = self._occupancy.last(sheet, col, 1, MAX_ROWS, True)
            last = max(last, found or 0)
        return last + 1


def column_names(workbook_xml: bytes) -> frozenset[str]:
    """The defined names (lower case) whose reference is a whole column."""
    from shared.calc.corrections.names import defined_names

    return frozenset(
        name for (name, _scope), text in defined_names(workbook_xml).items()
        if WHOLE_COLUMN.fullmatch(text.rsplit("!", 1)[-1])
    )


def bound_whole_columns(model, data: bytes, inputs: list[InputBox], cells: list[tuple[int, int, int]],
                        named_columns: frozenset[str] = frozenset(),
                        arrays: frozenset[tuple[int, int, int]] = frozenset(),
                        spread: frozenset[tuple[int, int, int]] = frozenset()) -> list[Rewrite]:
    """Rewrite, in `model`, the calls over whole columns (written out or through one of
    `named_columns`) of `cells` (sheet index, row, col): the statistics, COUNTBLANK,
    SUMPRODUCT, LOOKUP, FILTER and UNIQUE, in the one-cell array formulas `arrays` also SUM,
    MAX, MIN, AND, OR and exact MATCH of arrays, and in the array formulas filling several cells
    `spread` FILTER and UNIQUE alone (module docstring). Returns what changed."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    names = Names(model, sheets)
    bounds = _Bounds(model, data, inputs)
    rewrites = []
    for sheet, row, col in cells:
        formula = model.get_cell_formula(sheet, row, col)
        if not formula or formula.startswith("{") or not (
                WHOLE_COLUMN.search(formula) or (named_columns and _names_one(formula, named_columns))):
            continue
        tokens = tokenize(formula)
        if not tokens:
            continue
        values = [t.value for t in tokens]
        changed = False

        def resolve(text: str, sheet: int = sheet) -> tuple[Box, int] | None:
            """A range as written, or a name to a whole column, as (box, sheet index)."""
            if parse_range(text) is None:
                named = parse_name(text)
                if named is None or named[1].lower() not in named_columns:
                    return None  # IronCalc's list of names is costly: only for one that can help
            return names.box(text, sheet)

        in_array = (sheet, row, col) in arrays
        functions = ELEMENTWISE if in_array else frozenset()
        for name, opened, closed, args in calls(tokens):
            if name == "FILTER":
                changed |= _filtered(tokens, values, opened, closed, args, resolve, bounds,
                                     lambda text, sheet=sheet: names.formula(text, sheet))
            elif name == "UNIQUE":
                changed |= _unique(tokens, values, args, resolve, bounds)
            elif (sheet, row, col) in spread:
                continue  # a formula filling several cells: FILTER and UNIQUE alone keep its area
            elif name in IGNORING_BLANKS and _statistic(tokens, values, IGNORING_BLANKS[name], args, resolve, bounds):
                changed = True
            elif name in PAIRED:
                changed |= _paired(tokens, values, PAIRED[name], args, resolve, bounds)
            elif name == "COUNTBLANK":
                changed |= _count_blank(tokens, values, opened, closed, args, resolve, bounds)
            elif name == "SUMPRODUCT" or (in_array and name in ARRAY_AGGREGATES):
                changed |= _elementwise(tokens, values, opened, closed, args, resolve, bounds,
                                        additive=ARRAY_AGGREGATES.get(name, True), functions=functions)
            elif name in ("XLOOKUP", "XMATCH") and _exact_search(tokens, name, args):
                # an exact match from the top or from the bottom: as MATCH's, the position is
                # where it was or in the blank rows, all of which give the same blank cell
                changed |= _elementwise(tokens, values, opened, closed, args, resolve, bounds, additive=False,
                                        functions=functions, free=_SEARCH_FREE[name])
            elif name == "LOOKUP" and len(args) in (2, 3) or _exact_match(tokens, name, args, in_array):
                # the position found (the last item not greater, the first equal one) is where it
                # was, or in the blank rows, which all answer alike (the result's blank cell)
                changed |= _elementwise(tokens, values, opened, closed, args, resolve, bounds,
                                        additive=False, functions=functions, free=frozenset({0}))
        if not changed:
            continue
        if put_formula(model, sheet, row, col, formula, "".join(values)):
            rewrites.append(Rewrite(sheet, row, col, formula.lstrip("=")))
    return rewrites


def _statistic(tokens, values, positions, args, resolve, bounds) -> bool:
    """Each argument of a blank-ignoring statistic that is one whole-column range, cut."""
    changed = False
    for index, arg in enumerate(args):
        found = _whole(tokens, values, arg, resolve, bounds) if positions is None or index in positions else None
        if found is None or MAX_ROWS - found[2] < MIN_CUT:
            continue
        token, box, end = found
        values[token] = Box(box.sheet, 1, box.left, end, box.right).text()
        changed = True
    return changed


def _elementwise(tokens, values, opened, closed, args, resolve, bounds, additive: bool,
                 functions: frozenset[str], free: frozenset[int] = frozenset()) -> bool:
    """A call whose arguments (but the `free` ones, left as they are) are whole columns joined by
    operators (and calls of `functions`, element by element), over the rows up to the second
    blank one; with `additive` (a sum) plus half of what those two rows give once for every
    blank row after them (module docstring)."""
    scanned = [arg for index, arg in enumerate(args) if index not in free]
    if not scanned or any(values[i] != tokens[i].value for arg in scanned for i in arg):
        return False  # an inner call already rewritten: left alone
    found = _column_operands(tokens, [i for arg in scanned for i in arg], resolve, bounds, functions,
                             one_column=bool(free))  # a lookup searches one column
    if found is None:
        return False
    ranges, end = found[0], found[1] + 1
    if not ranges or MAX_ROWS - end < MIN_CUT:
        return False
    # two blank rows, not one: a one-cell range is a single value, not an array, to IronCalc
    head = values[opened + 1:closed]
    tail = list(head)
    for i, box in ranges:
        head[i - opened - 1] = Box(box.sheet, 1, box.left, end, box.right).text()
        tail[i - opened - 1] = Box(box.sheet, end - 1, box.left, end, box.right).text()
    call = tokens[opened].value  # the function's name and bracket as written
    text = call + "".join(head) + ")"
    if additive:  # each blank row after the head adds half of what the two blank rows add
        text = f"({text}+{MAX_ROWS - end}*{call}{''.join(tail)})/2)"
    replace_call(values, opened, closed, text)
    return True


def _filtered(tokens, values, opened, closed, args, resolve, bounds, named) -> bool:
    """FILTER of a whole column by an element-wise test of whole columns, cut to the first
    blank row E, the whole call kept for when the test keeps a blank row (module docstring).
    `named`: a defined name's formula, for a name in the test standing for one cell (an input
    such as `Threshold`)."""
    if len(args) not in (2, 3) or any(values[i] != tokens[i].value for arg in args for i in arg):
        return False  # an inner call already rewritten: left alone
    found = _whole(tokens, values, args[0], resolve, bounds)
    if found is None:
        return False
    tested = _column_operands(tokens, args[1], resolve, bounds, frozenset(), one_column=True, named=named)
    if tested is None:
        return False
    ranges, end = [found[:2], *tested[0]], max(found[2], tested[1])
    if len(ranges) < 2 or MAX_ROWS - end < MIN_CUT:
        return False
    whole = "".join(values[opened:closed + 1])
    cut, blank_row = list(values), list(values)
    for i, box in ranges:
        cut[i] = Box(box.sheet, 1, box.left, end, box.right).text()
        # one cell, not a one-cell range: IronCalc takes the range for an array and IF then
        # calculates both of its branches (sheet names hold no colon)
        blank_row[i] = Box(box.sheet, end, box.left, end, box.left).text().split(":")[0]
    test = "".join(blank_row[i] for i in args[1])
    replace_call(values, opened, closed,
                 f"IF(IFERROR(({test})*1<>0,FALSE),{whole},{''.join(cut[opened:closed + 1])})")
    return True


def _column_operands(tokens, positions, resolve, bounds, functions: frozenset[str], one_column: bool,
                     named=None) -> tuple[list[tuple[int, Box]], int] | None:
    """The whole-column ranges (token, box) of an expression of them joined by operators (and
    calls of `functions`, element by element) at token `positions`, with the first blank row
    after the data of them all; None where the expression holds anything else: another
    function, which could treat the blank rows otherwise, an array constant, a name to
    something else, a range that is not a whole column, one of several columns with
    `one_column`. `named` (a defined name's formula) lets a name to one cell stand as a single
    value, as a cell written out."""
    ranges: list[tuple[int, Box]] = []
    end = 0
    for i in positions:
        token = tokens[i]
        if token.type == Token.FUNC:
            if token.subtype == Token.OPEN and function_name(token) not in functions:
                return None  # a function that could treat the blank rows otherwise
            continue
        if token.type == Token.SEP and token.subtype == Token.ARG:
            continue  # between the arguments of a call of `functions`
        if token.type not in _ELEMENT_PARTS:
            return None  # another function, an array constant, a row separator
        if token.type != Token.OPERAND or token.subtype != Token.RANGE or SINGLE_CELL.fullmatch(token.value):
            continue
        resolved = resolve(token.value)
        if resolved is None and named is not None and parse_name(token.value) is not None \
                and SINGLE_CELL.fullmatch(named(token.value) or ""):
            continue
        if resolved is None:
            return None  # a name to something else, another workbook
        box, at = resolved
        first_blank = bounds.end(box, at)
        if first_blank is None or (one_column and box.cols > 1):
            return None
        ranges.append((i, box))
        end = max(end, first_blank)
    return ranges, end


def _unique(tokens, values, args, resolve, bounds) -> bool:
    """UNIQUE of whole columns by rows, cut to the second blank row (module docstring)."""
    if not 1 <= len(args) <= 3:
        return False
    if len(args) > 1:
        by_col = [tokens[i].value.upper() for i in without_spaces(tokens, args[1])]
        if by_col not in ([], ["FALSE"], ["0"]):
            return False  # by columns (or not known at load): a column is one item, cut or not
    found = _whole(tokens, values, args[0], resolve, bounds)
    if found is None or MAX_ROWS - (found[2] + 1) < MIN_CUT:
        return False
    token, box, end = found
    values[token] = Box(box.sheet, 1, box.left, end + 1, box.right).text()
    return True


def _whole(tokens, values, arg, resolve, bounds) -> tuple[int, Box, int] | None:
    """(token, box, first blank row) of an argument that is one whole-column range, or None."""
    kept = without_spaces(tokens, arg)
    if len(kept) != 1 or tokens[kept[0]].type != Token.OPERAND or tokens[kept[0]].subtype != Token.RANGE:
        return None
    resolved = resolve(values[kept[0]])
    if resolved is None:
        return None
    box, at = resolved
    end = bounds.end(box, at)
    return None if end is None else (kept[0], box, end)


def _paired(tokens, values, positions, args, resolve, bounds) -> bool:
    """Both columns of a paired statistic, cut to the same row."""
    if len(args) <= max(positions):
        return False
    found = [_whole(tokens, values, args[p], resolve, bounds) for p in positions]
    if any(f is None for f in found):
        return False
    end = max(f[2] for f in found)
    if MAX_ROWS - end < MIN_CUT:
        return False
    for token, box, _ in found:
        values[token] = Box(box.sheet, 1, box.left, end, box.right).text()
    return True


def _count_blank(tokens, values, opened, closed, args, resolve, bounds) -> bool:
    """COUNTBLANK of a whole column as the blanks up to the first blank row after the data plus
    the rows after it, all blank."""
    found = _whole(tokens, values, args[0], resolve, bounds) if len(args) == 1 else None
    if found is None or MAX_ROWS - found[2] < MIN_CUT:
        return False
    token, box, end = found
    values[token] = Box(box.sheet, 1, box.left, end, box.right).text()
    replace_call(values, opened, closed, f"({''.join(values[opened:closed + 1])}+{(MAX_ROWS - end) * box.cols})")
    return True


# XLOOKUP's and XMATCH's arguments other than the arrays searched and returned
_SEARCH_FREE = {"XLOOKUP": frozenset({0, 3, 4, 5}), "XMATCH": frozenset({0, 2, 3})}
_SEARCH_MODES = {"XLOOKUP": (4, 5), "XMATCH": (2, 3)}


def _exact_search(tokens, name: str, args) -> bool:
    """Whether a call is XLOOKUP or XMATCH over an expression (a plain range costs IronCalc
    nothing) with an exact match (match_mode 0 or omitted) searched from the first item or from
    the last (search_mode 1, -1 or omitted), written out."""
    mode, search = _SEARCH_MODES[name]
    if not 2 <= len(args) <= search + 1 or len(without_spaces(tokens, args[1])) < 2:
        return False
    written = [[tokens[i].value for i in without_spaces(tokens, args[k])] if k < len(args) else []
               for k in (mode, search)]
    return written[0] in ([], ["0"]) and written[1] in ([], ["1"], ["-1"], ["-", "1"])


def _exact_match(tokens, name: str, args, in_array: bool) -> bool:
    """Whether a call is MATCH with match_type 0 written out, in an array formula (where its
    lookup array is calculated element by element)."""
    if name != "MATCH" or not in_array or len(args) != 3:
        return False
    kept = without_spaces(tokens, args[2])
    return len(kept) == 1 and tokens[kept[0]].value == "0"


def _names_one(formula: str, named_columns: frozenset[str]) -> bool:
    """Whether the formula mentions one of the names to a whole column."""
    return any(word.lower() in named_columns for word in re.findall(r"[A-Za-z_\\][A-Za-z0-9_.\\]*", formula))
