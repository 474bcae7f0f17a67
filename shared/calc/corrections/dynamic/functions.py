"""The functions of the dynamic-array evaluator: Excel 365's array and LAMBDA functions and the
everyday functions formulas combine them with. Rules are those of each function's page on
support.microsoft.com; a function or argument form not here raises Unsupported (flagged)."""

from __future__ import annotations

import math

from shared.calc.corrections.dynamic import distributions, one_value
from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.numfmt.rounding import excel_round
from shared.calc.refs import MAX_COLS, MAX_ROWS

SPECIAL = {}   # name -> f(ev, arg nodes, env): arguments evaluated by the function itself
FUNCTIONS = {}  # name -> f(ev, args): arguments evaluated first


def special(name):
    def register(function):
        SPECIAL[name] = function
        return function
    return register


def function(*names):
    def register(f):
        for name in names:
            FUNCTIONS[name] = f
        return f
    return register


def call(ev, name: str, nodes: list, env: dict):
    # A LET or LAMBDA name in scope before a function of that name: Excel writes the call
    # `_xlpm.fact(...)`, which IronCalc holds as `FACT(...)`.
    if isinstance(env.get(name), Lambda):
        return ev.call_lambda(env[name], [ev.value(n, env) for n in nodes])
    if name in SPECIAL:
        return SPECIAL[name](ev, nodes, env)
    f = FUNCTIONS.get(name)
    if f is None:
        if name in one_value.ONE_VALUE or name in one_value.PARTLY_ONE_VALUE:  # by IronCalc, element by element
            return one_value.call(ev, name, [ev.value(n, env) for n in nodes])
        named = _named_lambda(ev, name, env)
        if named is None:
            raise Unsupported(f"{name} inside a dynamic-array formula (not evaluated by the layer)")
        return ev.call_lambda(named, [ev.value(n, env) for n in nodes])
    args = [ev.value(n, env) for n in nodes]
    if one_value.refuses_range(name, args):
        return v.VALUE
    return f(ev, args)


def _named_lambda(ev, name: str, env: dict):
    """A LAMBDA kept in a defined name (`=Double(A1)`), or None (one bound by LET or LAMBDA is
    called before any function: `call`; a LET value that is no LAMBDA hides the name)."""
    if name in env:
        return None
    if ev.book.defined(name, ev.sheet) is None:
        return None
    value = ev.name(name, env)
    return value if isinstance(value, Lambda) else None


def eta(name: str) -> Lambda:
    """`_xleta.SUM`: a function given by name where a LAMBDA is expected (GROUPBY's
    `_xleta.STDEV.S` among them: those the layer has IronCalc compute, as `call` does)."""
    if name in FUNCTIONS:
        return Lambda([], lambda ev, args: FUNCTIONS[name](ev, args), name=name)
    if name in one_value.ONE_VALUE or name in one_value.PARTLY_ONE_VALUE:
        return Lambda([], lambda ev, args: one_value.call(ev, name, args), name=name)
    raise Unsupported(f"{name} given by name as a LAMBDA")


# --- helpers ------------------------------------------------------------------------------

def _arity(args, low, high=None):
    high = low if high is None else high
    if not low <= len(args) <= high:
        raise Unsupported("a function given the wrong number of arguments")


def _opt(args, i, default):
    return default if i >= len(args) or args[i] is MISSING else args[i]


def _int(ev, value):
    """A whole-number argument (truncated), or the Err it holds."""
    value = ev.scalar(value)
    if isinstance(value, Err):
        return value
    n = v.to_number(value)
    return n if isinstance(n, Err) else int(math.trunc(n))


def _first_error(values):
    for x in values:
        if isinstance(x, Err):
            return x
    return None


def _result(rows: list[list]):
    if not rows or not rows[0]:
        return v.CALC
    return Grid(rows)


def _scalar_args(ev, args):
    return [ev.scalar(a) for a in args]


# Functions of one value the evaluator applies to each element of an array argument (for
# corrections/dynamic.lifted: inside SUMPRODUCT, where Excel does so too); those it lacks are
# computed by IronCalc one element at a time (one_value.py)
ELEMENTWISE: set[str] = {"LEFT", "RIGHT", "TEXT", *one_value.ONE_VALUE}


def _elementwise(name, f, low=1, high=None):
    """A scalar function lifted over array arguments."""
    def run(ev, args):
        _arity(args, low, high if high is not None else low)
        return ev.lift(f, *args)
    FUNCTIONS[name] = run
    ELEMENTWISE.add(name)


# --- LET, LAMBDA and the LAMBDA helpers -----------------------------------------------------

def _param(node) -> str:
    if node[0] != "name":
        raise Unsupported("a LET or LAMBDA parameter that is not a name")
    key = node[1].upper()
    return key.removeprefix("_XLPM.")


@special("LET")
def _let(ev, nodes, env):
    if len(nodes) < 3 or len(nodes) % 2 == 0:
        raise Unsupported("LET with the wrong number of arguments")
    scope = dict(env)
    for i in range(0, len(nodes) - 1, 2):
        scope[_param(nodes[i])] = ev.value(nodes[i + 1], scope)
    return ev.value(nodes[-1], scope)


@special("LAMBDA")
def _lambda(ev, nodes, env):
    if not nodes:
        return v.VALUE
    return Lambda([_param(n) for n in nodes[:-1]], nodes[-1], dict(env))


@special("ISOMITTED")
def _isomitted(ev, nodes, env):
    _arity(nodes, 1)
    return ev.value(nodes[0], env) is MISSING


def _function_arg(value, count: int):
    if not isinstance(value, Lambda):
        return v.VALUE
    if not callable(value.body) and len(value.params) != count:
        return v.VALUE
    return value


def _apply(ev, function, args):
    """A LAMBDA's value for one call of a helper: one value (1x1 arrays unwrapped); an array
    where one value belongs is #CALC! (Excel: "nested arrays are not supported")."""
    result = ev.call_lambda(function, args)
    if isinstance(result, (Ref, Grid)):
        grid = ev.grid(result)
        if grid.shape != (1, 1):
            return v.CALC
        return grid.rows[0][0]
    if isinstance(result, Lambda):
        return v.CALC
    return result


def _cell_arg(value):
    return 0.0 if value is None else value


@function("MAP")
def _map(ev, args):
    if len(args) < 2:
        return v.VALUE
    function = _function_arg(args[-1], len(args) - 1)
    if isinstance(function, Err):
        return function
    grids = [ev.grid(a) for a in args[:-1]]
    shape = grids[0].shape
    if any(g.shape != shape and g.shape != (1, 1) for g in grids):
        return v.VALUE
    return Grid([[_apply(ev, function, [_at(g, r, c) for g in grids]) for c in range(shape[1])]
                 for r in range(shape[0])])


def _at(grid, r, c):
    return grid.rows[0][0] if grid.shape == (1, 1) else grid.rows[r][c]


def _start(ev, value):
    if value is MISSING:
        return 0.0
    if isinstance(value, (Ref, Grid)):
        grid = ev.grid(value)
        return grid if grid.shape != (1, 1) else grid.rows[0][0]
    return value


@function("REDUCE")
def _reduce(ev, args):
    _arity(args, 3)
    function = _function_arg(args[2], 2)
    if isinstance(function, Err):
        return function
    acc = _start(ev, args[0])
    for value in ev.grid(args[1]).cells():
        acc = ev.call_lambda(function, [acc, value])
        if isinstance(acc, Ref):
            acc = ev.grid(acc)
        if isinstance(acc, Grid) and acc.shape == (1, 1):
            acc = acc.rows[0][0]
    return acc


@function("SCAN")
def _scan(ev, args):
    _arity(args, 3)
    function = _function_arg(args[2], 2)
    if isinstance(function, Err):
        return function
    acc = _start(ev, args[0])  # an array is allowed: the LAMBDA may reduce it (SUM(a))
    grid = ev.grid(args[1])
    out = []
    for row in grid.rows:
        line = []
        for value in row:
            acc = _apply(ev, function, [acc, value])
            line.append(acc)
        out.append(line)
    return Grid(out)


@function("MAKEARRAY")
def _makearray(ev, args):
    _arity(args, 3)
    if any(isinstance(ev.scalar(a), str) for a in args[:2]):
        return v.VALUE  # a size given as text is not read as a number (corpus test.xlsx LOGICAL!T15)
    rows, cols = _int(ev, args[0]), _int(ev, args[1])
    for x in (rows, cols):
        if isinstance(x, Err):
            return x
    function = _function_arg(args[2], 2)
    if isinstance(function, Err):
        return function
    if rows < 1 or cols < 1:
        return v.VALUE
    if rows * cols > 1_048_576:
        return v.VALUE
    return Grid([[_apply(ev, function, [float(r), float(c)]) for c in range(1, cols + 1)]
                 for r in range(1, rows + 1)])


def _by(ev, args, across: bool):
    _arity(args, 2)
    function = _function_arg(args[1], 1)
    if isinstance(function, Err):
        return function
    value = args[0]
    if isinstance(value, Ref):
        pieces = ([Ref(value.sheet, r, value.left, r, value.right) for r in range(value.top, value.bottom + 1)]
                  if across else
                  [Ref(value.sheet, value.top, c, value.bottom, c) for c in range(value.left, value.right + 1)])
    else:
        grid = ev.grid(value)
        pieces = ([Grid([row]) for row in grid.rows] if across
                  else [Grid([[x] for x in col]) for col in grid.columns()])
    results = [_apply(ev, function, [p]) for p in pieces]
    return Grid([[x] for x in results]) if across else Grid([results])


FUNCTIONS["BYROW"] = lambda ev, args: _by(ev, args, True)
FUNCTIONS["BYCOL"] = lambda ev, args: _by(ev, args, False)


# --- logic ---------------------------------------------------------------------------------

@special("IF")
def _if(ev, nodes, env):
    if not 1 <= len(nodes) <= 3:
        raise Unsupported("IF with the wrong number of arguments")
    condition = ev.value(nodes[0], env)
    yes = lambda: ev.value(nodes[1], env) if len(nodes) > 1 and nodes[1][0] != "missing" else (0.0 if len(nodes) > 1 else True)
    no = lambda: ev.value(nodes[2], env) if len(nodes) > 2 and nodes[2][0] != "missing" else (0.0 if len(nodes) > 2 else False)
    if not isinstance(condition, (Ref, Grid)):
        test = v.to_bool(condition)
        if isinstance(test, Err):
            return test
        return yes() if test else no()
    a, b = yes(), no()

    def pick(c, x, y):
        test = v.to_bool(c)
        if isinstance(test, Err):
            return test
        return _cell_arg(x) if test else _cell_arg(y)
    return ev.lift(pick, condition, a, b)


def _if_error(only_na: bool):
    def run(ev, nodes, env):
        if len(nodes) != 2:
            raise Unsupported("IFERROR/IFNA with the wrong number of arguments")
        value = ev.value(nodes[0], env)
        fallback = ev.value(nodes[1], env)

        def pick(x, y):
            hit = isinstance(x, Err) and (not only_na or x.code == "#N/A")
            return _cell_arg(y) if hit else x
        return ev.lift(pick, value, fallback)
    return run


SPECIAL["IFERROR"] = _if_error(False)
SPECIAL["IFNA"] = _if_error(True)


@function("IFS")
def _ifs(ev, args):
    """Microsoft's "IFS function": the value of the first TRUE condition, #N/A when none is;
    applied to each element of arrays (pycel's logical.xlsx Logical!O26:O44, legacy array
    formulas over A:C, saved by Excel: the first element's answer)."""
    if len(args) < 2 or len(args) % 2:
        raise Unsupported("IFS with an odd number of arguments")

    def pick(*items):
        for condition, value in zip(items[::2], items[1::2]):
            test = v.to_bool(0.0 if condition is None or condition is MISSING else condition)
            if isinstance(test, Err):
                return test
            if test:
                return _cell_arg(value)
        return v.NA
    return ev.lift(pick, *args)


def _switch_key(x):
    """SWITCH's comparison: a blank or an empty argument is 0, text without case, and values
    of different types never equal (formulas' test.xlsx LOGICAL!R25:Z25, pycel's logical.xlsx
    Switch!C32:C44, saved by Excel: a blank matches an empty argument, not FALSE or "")."""
    if x is None or x is MISSING:
        return (0, 0.0)
    if isinstance(x, bool):
        return (2, x)
    if isinstance(x, str):
        return (1, x.casefold())
    return (0, x)


@function("SWITCH")
def _switch(ev, args):
    if len(args) < 3:
        raise Unsupported("SWITCH with fewer than three arguments")

    def pick(expression, *items):
        if isinstance(expression, Err):
            return expression
        key = _switch_key(expression)
        for value, result in zip(items[::2], items[1::2]):
            if isinstance(value, Err):
                return value
            if _switch_key(value) == key:
                return _cell_arg(result)
        return _cell_arg(items[-1]) if len(items) % 2 else v.NA
    return ev.lift(pick, *args)


def _logical(kind):
    def run(ev, args):
        found = []
        for a in args:
            if isinstance(a, (Ref, Grid)):
                items = ev.grid(a).cells()
                error = _first_error(items)
                if error:
                    return error
                found += [x if isinstance(x, bool) else x != 0 for x in items if isinstance(x, (bool, float))]
            else:
                b = v.to_bool(a)
                if isinstance(b, Err):
                    return b
                found.append(b)
        if not found:
            return v.VALUE
        return all(found) if kind == "AND" else any(found) if kind == "OR" else sum(found) % 2 == 1
    return run


for _n in ("AND", "OR", "XOR"):
    FUNCTIONS[_n] = _logical(_n)
_elementwise("NOT", lambda x: (lambda b: b if isinstance(b, Err) else not b)(v.to_bool(x)))
FUNCTIONS["TRUE"] = lambda ev, args: True
FUNCTIONS["FALSE"] = lambda ev, args: False
FUNCTIONS["NA"] = lambda ev, args: v.NA


@function("CHOOSE")
def _choose(ev, args):
    if len(args) < 2:
        return v.VALUE
    def pick(i, *options):
        n = v.to_number(i)
        if isinstance(n, Err):
            return n
        n = int(n)
        return _cell_arg(options[n - 1]) if 1 <= n <= len(options) else v.VALUE
    if not isinstance(args[0], (Ref, Grid)):
        n = v.to_number(ev.scalar(args[0]))
        if isinstance(n, Err):
            return n
        return args[int(n)] if 1 <= int(n) < len(args) else v.VALUE
    return ev.lift(pick, *args)


# --- information ---------------------------------------------------------------------------

_elementwise("ISNUMBER", lambda x: v.is_number(x))
_elementwise("ISTEXT", lambda x: isinstance(x, str))
_elementwise("ISNONTEXT", lambda x: not isinstance(x, str))
_elementwise("ISLOGICAL", lambda x: isinstance(x, bool))
_elementwise("ISBLANK", lambda x: x is None)
_elementwise("ISERROR", lambda x: isinstance(x, Err))
_elementwise("ISERR", lambda x: isinstance(x, Err) and x.code != "#N/A")
_elementwise("ISNA", lambda x: isinstance(x, Err) and x.code == "#N/A")
_elementwise("ISEVEN", lambda x: (lambda n: n if isinstance(n, Err) else int(n) % 2 == 0)(v.to_number(x)))
_elementwise("ISODD", lambda x: (lambda n: n if isinstance(n, Err) else int(n) % 2 == 1)(v.to_number(x)))
_elementwise("N", lambda x: x if isinstance(x, (float, Err)) and not isinstance(x, bool) else (1.0 if x is True else 0.0))
_elementwise("T", lambda x: x if isinstance(x, (str, Err)) else "")


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def _arabic(text):
    """Microsoft: ARABIC function (case ignored, leading and trailing spaces ignored, a leading
    minus sign negates, "" is 0, numbers and dates #VALUE!, at most 255 characters). Excel reads
    any string of Roman digits right to left, adding a digit unless it is smaller than the
    largest read so far, which it subtracts (formulas' Excel-saved test.xlsx MATH & TRIG!T9
    ARABIC("IIIIIIV") -1, V9 ARABIC("IILmIIC") 1046, S9 ARABIC("IL") 49; W9 a blank cell 0, Y9
    TRUE #VALUE!); IronCalc 0.9.1 answers #VALUE! for those it would not write itself."""
    if isinstance(text, Err):
        return text
    if isinstance(text, (bool, float)):
        return v.VALUE
    numeral = ("" if text is None or text is MISSING else text).strip()
    sign = -1.0 if numeral.startswith("-") else 1.0
    numeral = numeral[1:] if sign < 0 else numeral
    if len(numeral) > 255:
        return v.VALUE
    total, largest = 0, 0
    for digit in reversed(numeral.upper()):
        value = _ROMAN.get(digit)
        if value is None:
            return v.VALUE
        if value < largest:
            total -= value
        else:
            total, largest = total + value, value
    return sign * total


def _decimal(text, radix):
    """Microsoft: DECIMAL function (radix truncated to a whole number from 2 to 36, else #NUM!;
    the text's characters are digits of that radix, case ignored; at most 255 characters). A
    character that is no digit of the radix is #NUM! (formulas' Excel-saved test.xlsx
    MATH & TRIG!S26 DECIMAL("FF",15), V26 DECIMAL(113,2)), where IronCalc 0.9.1 answers #VALUE!."""
    for value in (text, radix):
        if isinstance(value, Err):
            return value
    radix = v.to_number(radix)
    if isinstance(radix, Err):
        return radix
    base = math.trunc(radix)
    if not 2 <= base <= 36:
        return v.NUM
    if isinstance(text, bool) or text is None or text is MISSING:
        raise Unsupported("DECIMAL of a logical value or an empty cell")
    digits = v.to_text(text).upper()
    if digits == "":
        raise Unsupported("DECIMAL of an empty text")
    if len(digits) > 255:
        return v.NUM
    if any(not (digit.isascii() and digit.isalnum()) or int(digit, 36) >= base for digit in digits):
        return v.NUM
    return float(int(digits, base))


_elementwise("ARABIC", _arabic)
_elementwise("DECIMAL", _decimal, 2)


def _first_cell(lifted):
    """N and T of a reference read its upper left cell, not each cell of a range
    (SUMPRODUCT(N(A1:A3)) is not A1+A2+A3; formulas' test.xlsx, saved by Excel: {=N(C19:Q19)} is
    C19's 4, {=N(I19:Q19)} I19's 0, {=T(I42:Q42)} I42's text); an array is read element by
    element."""
    def run(ev, args):
        if args and isinstance(args[0], Ref) and args[0].shape != (1, 1):
            ref = args[0]
            args = [Ref(ref.sheet, ref.top, ref.left, ref.top, ref.left), *args[1:]]
        return lifted(ev, args)
    return run


FUNCTIONS["N"] = _first_cell(FUNCTIONS["N"])
FUNCTIONS["T"] = _first_cell(FUNCTIONS["T"])


def _dimension(index):
    def run(ev, args):
        _arity(args, 1)
        if not isinstance(args[0], (Ref, Grid)):
            return 1.0
        return float(args[0].shape[index])
    return run


FUNCTIONS["ROWS"] = _dimension(0)
FUNCTIONS["COLUMNS"] = _dimension(1)


@function("TYPE")
def _type(ev, args):
    """Microsoft: TYPE function (number 1, text 2, logical 4, error 16, array 64, compound data
    128): a function given by name or a LAMBDA is 128 (formulas' Excel-saved test.xlsx
    INFORMATION!S24, TYPE(_xleta.SUM))."""
    _arity(args, 1)
    value = args[0]
    if isinstance(value, Lambda):
        return 128.0
    if isinstance(value, (Ref, Grid)):
        if value.shape != (1, 1):
            return 64.0
        value = ev.scalar(value)
    if isinstance(value, bool):
        return 4.0
    if isinstance(value, str):
        return 2.0
    return 16.0 if isinstance(value, Err) else 1.0


def _position(is_row):
    def run(ev, args):
        if not args or args[0] is MISSING:
            return float(ev.row if is_row else ev.col)
        ref = args[0]
        if not isinstance(ref, Ref):
            return v.VALUE
        if is_row:
            return Grid([[float(r)] for r in range(ref.top, ref.bottom + 1)]) if ref.shape[0] > 1 else float(ref.top)
        return Grid([[float(c) for c in range(ref.left, ref.right + 1)]]) if ref.shape[1] > 1 else float(ref.left)
    return run


FUNCTIONS["ROW"] = _position(True)
FUNCTIONS["COLUMN"] = _position(False)


# --- aggregates ----------------------------------------------------------------------------

def _numbers(ev, args, text_direct=True):
    """The numbers of aggregate arguments (Excel: in references and arrays only numbers
    count; typed values are converted), or the first error."""
    numbers = []
    for a in args:
        if a is MISSING:
            continue
        if isinstance(a, (Ref, Grid)):
            for x in ev.grid(a).cells():
                if isinstance(x, Err):
                    return x
                if v.is_number(x):
                    numbers.append(x)
        elif isinstance(a, Lambda):
            return v.CALC
        else:
            if isinstance(a, Err):
                return a
            n = v.to_number(a)
            if isinstance(n, Err):
                return n
            numbers.append(n)
    return numbers


def _aggregate(f):
    def run(ev, args):
        numbers = _numbers(ev, args)
        if isinstance(numbers, Err):
            return numbers
        return f(numbers)
    return run


FUNCTIONS["SUM"] = _aggregate(lambda n: v.checked(math.fsum(n)))
FUNCTIONS["PRODUCT"] = _aggregate(lambda n: v.checked(math.prod(n)) if n else 0.0)
FUNCTIONS["MAX"] = _aggregate(lambda n: max(n) if n else 0.0)
FUNCTIONS["MIN"] = _aggregate(lambda n: min(n) if n else 0.0)
FUNCTIONS["AVERAGE"] = _aggregate(lambda n: math.fsum(n) / len(n) if n else v.DIV0)


@function("PI")
def _pi(ev, args):
    """PI(): 3.14159265358979 "accurate to 15 digits" (the PI page), the double nearest pi."""
    if args:
        return v.VALUE
    return math.pi


@function("MODE.MULT")
def _mode_mult(ev, args):
    """The most frequent numbers as a column, in the order they first occur; #N/A when no
    number occurs twice (the MODE.MULT page)."""
    modes = _modes(ev, args)
    return modes if isinstance(modes, Err) else Grid([[n] for n in modes])


@function("MODE", "MODE.SNGL")
def _mode(ev, args):
    """The most frequent number, the first of them to occur where several are (the MODE and
    MODE.SNGL pages: #N/A when no number occurs twice). Given an array, as in
    `MODE(IF(A1:A9<>"",MATCH(A1:A9,A1:A9,0)))`; a value typed among the arguments is left to
    IronCalc (a typed text or logical value is read otherwise by each function)."""
    if any(not isinstance(a, (Ref, Grid)) and not v.is_number(a) for a in args):
        raise Unsupported("MODE given a typed value that is not a number")
    modes = _modes(ev, args)
    return modes if isinstance(modes, Err) else modes[0]


def _modes(ev, args):
    numbers = _numbers(ev, args)
    if isinstance(numbers, Err):
        return numbers
    counts: dict[float, int] = {}
    for n in numbers:
        counts[n] = counts.get(n, 0) + 1
    most = max(counts.values(), default=0)
    if most < 2:
        return v.NA
    return [n for n, count in counts.items() if count == most]


@function("COUNT")
def _count(ev, args):
    total = 0
    for a in args:
        if isinstance(a, (Ref, Grid)):
            total += sum(1 for x in ev.grid(a).cells() if v.is_number(x))
        elif a is not MISSING and not isinstance(a, Err) and not isinstance(v.to_number(a), Err):
            total += 1
    return float(total)


@function("COUNTA")
def _counta(ev, args):
    """The cells of a reference that are not empty; every item of a calculated array, a blank
    among them (Exceljet, "Count unique values": `COUNTA(UNIQUE(data))` counts the blank item of
    data with empty cells; StackOverflow 72146462: in an array a blank stays distinct from 0)."""
    total = 0
    for a in args:
        if isinstance(a, Ref):
            total += sum(1 for x in ev.grid(a).cells() if x is not None)
        elif isinstance(a, Grid):
            rows, cols = a.shape
            total += rows * cols
        elif a is not MISSING:
            total += 1
    return float(total)


@function("COUNTBLANK")
def _countblank(ev, args):
    _arity(args, 1)
    return float(sum(1 for x in ev.grid(args[0]).cells() if x is None or x == ""))


@function("SUMPRODUCT")
def _sumproduct(ev, args):
    grids = [ev.grid(a) for a in args]
    if not grids or any(g.shape != grids[0].shape for g in grids):
        return v.VALUE
    total = 0.0
    for items in zip(*[g.cells() for g in grids]):
        error = _first_error(items)
        if error:
            return error
        product = 1.0
        for x in items:
            product *= x if v.is_number(x) else 0.0
        total += product
    return total


# --- math and text, elementwise ------------------------------------------------------------

def _num1(f):
    def run(x):
        n = v.to_number(x)
        return n if isinstance(n, Err) else v.checked(f(n))
    return run


def _num2(f):
    def run(x, y):
        a, b = v.to_number(x), v.to_number(y)
        for n in (a, b):
            if isinstance(n, Err):
                return n
        return f(a, b)
    return run


_elementwise("ABS", _num1(abs))
_elementwise("INT", _num1(lambda x: float(math.floor(x))))
_elementwise("SQRT", lambda x: (lambda n: n if isinstance(n, Err) else v.NUM if n < 0 else math.sqrt(n))(v.to_number(x)))
_elementwise("ROUND", _num2(lambda a, b: excel_round(a, b)), 2)
_elementwise("ROUNDUP", _num2(lambda a, b: excel_round(a, b, "up")), 2)
_elementwise("ROUNDDOWN", _num2(lambda a, b: excel_round(a, b, "down")), 2)


def _mod(number: float, divisor: float):
    """MOD as Excel answers it: the exact remainder of the two binary values (C's fmod), given
    the divisor's sign (Microsoft: MOD function). Excel-saved evidence: IronCalc's
    MOD_QUOTIENT.xlsx, MOD(5,1E-10) 9.99998178390134E-11, MOD(5,-1E-10) -1.8216E-16 and
    MOD(10.0000000001,0.1) 9.99994531625248E-11, each fmod's to the last digit; Excel 2010 and
    later answer MOD(10,0.1) 0.1 and MOD(281.44,0.02) 0.02 (reported on Microsoft's TechNet
    forum, "Excel 2010 MOD bug"), as fmod does. number - divisor*INT(number/divisor), which
    IronCalc 0.9.1 computes, is 0 or a tiny negative number there (the quotient rounds up to a
    whole number)."""
    if divisor == 0:
        return v.DIV0
    remainder = math.fmod(number, divisor)
    if remainder and (remainder < 0) != (divisor < 0):
        remainder += divisor
    return remainder


_elementwise("MOD", _num2(_mod), 2)


def _distribution(name):
    return lambda *values: distributions.call(name, list(values))


# Student's t, F, chi-squared, beta and gamma tails and inverses to the last digit, and the
# hypergeometric distribution (distributions.py)
for _name, (_, _low, _high) in distributions.FUNCTIONS.items():
    _elementwise(_name, _distribution(_name), _low, _high)


@function("T.TEST", "TTEST")
def _t_test(ev, args):
    """The arrays whole; tails and type one value each (an array's first, as Excel saves them)."""
    _arity(args, 4)
    first, second = (ev.grid(a).cells() if isinstance(a, (Ref, Grid)) else [a] for a in args[:2])
    numbers = []
    for value in (ev.scalar(a) for a in args[2:]):
        number = v.to_number(value)
        if isinstance(number, Err):
            return number
        numbers.append(number)
    return distributions.t_test(first, second, *numbers)


def _whole(ev, value) -> Grid:
    """An argument taken whole: its array, a single value as an array of one."""
    return ev.grid(value) if isinstance(value, (Ref, Grid)) else Grid([[ev.scalar(value)]])


@function("CHISQ.TEST", "CHITEST")
def _chisq_test(ev, args):
    _arity(args, 2)
    return distributions.chisq_test(*(_whole(ev, a).rows for a in args))


@function("F.TEST", "FTEST")
def _f_test(ev, args):
    _arity(args, 2)
    return distributions.f_test(*(_whole(ev, a).cells() for a in args))


@function("Z.TEST", "ZTEST")
def _z_test(ev, args):
    """The array whole; x and sigma one value each, or each element of an array given them (a
    legacy array formula's results)."""
    _arity(args, 2, 3)
    array = _whole(ev, args[0]).cells()
    if len(args) == 2 or args[2] is MISSING:
        return ev.lift(lambda x: distributions.z_test(array, x), args[1])
    return ev.lift(lambda x, sigma: distributions.z_test(array, x, sigma), args[1], args[2])


_elementwise("POWER", _num2(lambda a, b: __import__(
    "shared.calc.corrections.dynamic.evaluate", fromlist=["_arith"])._arith("^", a, b)), 2)
_elementwise("LEN", lambda x: x if isinstance(x, Err) else float(len(v.to_text(x))))
_elementwise("UPPER", lambda x: x if isinstance(x, Err) else v.to_text(x).upper())
_elementwise("LOWER", lambda x: x if isinstance(x, Err) else v.to_text(x).lower())
_elementwise("TRIM", lambda x: x if isinstance(x, Err) else " ".join(w for w in v.to_text(x).split(" ") if w))


def _left_right(right: bool):
    def run(ev, args):
        _arity(args, 1, 2)
        count = args[1] if len(args) > 1 and args[1] is not MISSING else 1.0

        def cut(x, n):
            if isinstance(x, Err):
                return x
            k = v.to_number(n)
            if isinstance(k, Err):
                return k
            if k < 0:
                return v.VALUE
            text = v.to_text(x)
            k = int(k)
            return (text[len(text) - k:] if k else "") if right else text[:k]
        return ev.lift(cut, args[0], count)
    return run


FUNCTIONS["LEFT"] = _left_right(False)
FUNCTIONS["RIGHT"] = _left_right(True)


def _mid(x, start, count):
    if isinstance(x, Err):
        return x
    s, n = v.to_number(start), v.to_number(count)
    for k in (s, n):
        if isinstance(k, Err):
            return k
    if s < 1 or n < 0:
        return v.VALUE
    return v.to_text(x)[int(s) - 1:int(s) - 1 + int(n)]


_elementwise("MID", _mid, 3)


def _value(x):
    if isinstance(x, Err) or v.is_number(x):
        return x
    if isinstance(x, bool):
        return v.VALUE
    return v.to_number(v.to_text(x)) if v.to_text(x).strip() else 0.0 if x is None else v.VALUE


_elementwise("VALUE", _value)


@function("TEXT")
def _text(ev, args):
    _arity(args, 2)
    from shared.calc.corrections.functions.text_format import excel_text

    def run(x, code):
        for y in (x, code):
            if isinstance(y, Err):
                return y
        result = excel_text(x, v.to_text(code))
        return v.VALUE if result == "#VALUE!" else result
    return ev.lift(run, args[0], args[1])


@function("CONCATENATE")
def _concatenate(ev, args):
    """CONCATENATE joins one value per argument (its page: "text1, text2, ... the items to
    join"), so given a range it is applied to each cell, as other functions of one value are
    (an array formula or a dynamic array of `CONCATENATE(A1:A3,"x")` is three texts;
    formulas' Excel-saved test.xlsx TEXT!AG11:AH11); CONCAT joins every cell of a range."""

    def join(*items):
        for x in items:
            if isinstance(x, Err):
                return x
        return "".join(v.to_text(x) for x in items)
    return ev.lift(join, *args)


@function("CONCAT")
def _concat_all(ev, args):
    out = []
    for a in args:
        for x in ev.grid(a).cells():
            if isinstance(x, Err):
                return x
            out.append(v.to_text(x))
    return "".join(out)


@function("TEXTJOIN")
def _textjoin(ev, args):
    if len(args) < 3:
        return v.VALUE
    delimiters = [v.to_text(x) for x in ev.grid(args[0]).cells()]
    skip = v.to_bool(ev.scalar(args[1]))
    if isinstance(skip, Err):
        return skip
    items = []
    for a in args[2:]:
        for x in ev.grid(a).cells():
            if isinstance(x, Err):
                return x
            text = v.to_text(x)
            if skip and text == "":
                continue
            items.append(text)
    out = ""
    for i, text in enumerate(items):
        if i:
            out += delimiters[(i - 1) % len(delimiters)] if delimiters else ""
        out += text
    return out


# --- INDEX and TRANSPOSE -------------------------------------------------------------------

@function("INDEX")
def _index(ev, args):
    _arity(args, 2, 3)
    if any(isinstance(a, Grid) and a.shape != (1, 1) for a in args[1:]):
        # positions given as an array: one value at each, a whole row or column (a position
        # left out) giving its first (Excel-saved formulas/test.xlsx LOOKUP!AO52:AP53,
        # {=INDEX({2,3;4,5},{1,2})} is 2 and 4)
        def item(*positions):
            found = _index(ev, [args[0], *positions])
            return ev.grid(found).rows[0][0] if isinstance(found, (Ref, Grid)) else found
        return ev.lift(item, *args[1:])
    grid = ev.grid(args[0])
    rows, cols = grid.shape
    r = _int(ev, _opt(args, 1, 0.0))
    c = _int(ev, _opt(args, 2, 0.0))
    for x in (r, c):
        if isinstance(x, Err):
            return x
    if len(args) == 2 and rows == 1:
        r, c = 1, r
    if r < 0 or c < 0 or r > rows or c > cols:
        return v.REF
    if r and c:
        if isinstance(args[0], Ref):
            ref = args[0]
            return Ref(ref.sheet, ref.top + r - 1, ref.left + c - 1, ref.top + r - 1, ref.left + c - 1)
        return grid.rows[r - 1][c - 1]
    if r:
        return Grid([grid.rows[r - 1]])
    if c:
        return Grid([[row[c - 1]] for row in grid.rows])
    return grid


@function("OFFSET")
def _offset(ev, args):
    """Microsoft's "OFFSET function": the reference `rows` down and `cols` right of `reference`,
    `height` by `width` cells (those of the reference when omitted); outside the sheet #REF!.
    Given arrays (one reference per element) it is refused."""
    _arity(args, 3, 5)
    base = args[0]
    if not isinstance(base, Ref):
        return v.VALUE
    sizes = []
    for i, default in enumerate((0.0, 0.0, *map(float, base.shape)), start=1):
        given = _opt(args, i, default)
        if isinstance(given, (Ref, Grid)) and ev.grid(given).shape != (1, 1):
            raise Unsupported("OFFSET given an array (one reference per element)")
        number = _int(ev, given)
        if isinstance(number, Err):
            return number
        sizes.append(number)
    rows, cols, height, width = sizes
    if height < 1 or width < 1:
        if height == 0 or width == 0:
            return v.REF
        raise Unsupported("OFFSET with a negative height or width")
    top, left = base.top + rows, base.left + cols
    bottom, right = top + height - 1, left + width - 1
    if top < 1 or left < 1 or bottom > MAX_ROWS or right > MAX_COLS:
        return v.REF
    return Ref(base.sheet, top, left, bottom, right)


@function("INDIRECT")
def _indirect(ev, args):
    """Microsoft's "INDIRECT function": the reference a text names (A1 style; a defined name
    to a range too); a text naming none, or a missing sheet, #REF!. R1C1 style is refused."""
    _arity(args, 1, 2)
    text = ev.scalar(args[0])
    if isinstance(text, Err):
        return text
    style = v.to_bool(ev.scalar(_opt(args, 1, True)))
    if isinstance(style, Err):
        return style
    if not style:
        raise Unsupported("INDIRECT in R1C1 style")
    if not isinstance(text, str) or not text.strip():
        return v.REF
    text = text.strip()
    try:
        return ev.reference(text)
    except Unsupported:
        pass
    definition = ev.book.defined(text, ev.sheet)
    if definition is not None:
        try:
            return ev.reference(definition.lstrip("="))
        except Unsupported:
            return v.REF
    return v.REF


@function("TRANSPOSE")
def _transpose(ev, args):
    _arity(args, 1)
    return Grid(ev.grid(args[0]).columns())


from shared.calc.corrections.dynamic import arrays as _arrays  # noqa: F401 - registers
from shared.calc.corrections.dynamic import classic as _classic  # noqa: F401 - registers
from shared.calc.corrections.dynamic import criteria as _criteria  # noqa: F401 - registers
from shared.calc.corrections.dynamic import lookup as _lookup  # noqa: F401 - registers
from shared.calc.corrections.dynamic import paired as _paired  # noqa: F401 - registers
from shared.calc.corrections.dynamic import regex_functions as _regex_functions  # noqa: F401 - registers
from shared.calc.corrections.dynamic import regression as _regression  # noqa: F401 - registers
from shared.calc.corrections.dynamic import text as _text_functions  # noqa: F401 - registers
