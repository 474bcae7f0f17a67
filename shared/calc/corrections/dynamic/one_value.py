"""Functions of one value applied to every element of an array, as Excel applies them in an
array formula, a dynamic array, SUMPRODUCT and a LAMBDA.

Excel calculates a function whose parameters each take one value once per element when it is
given an array or a range there, and answers the array of results (Microsoft: "Guidelines and
examples of array formulas"; "Dynamic array formulas and spilled array behavior"):
`{=SUM(TRUNC(A1:A9))}` adds the truncated values, `=NORM.S.DIST(A1:A9,TRUE)` spills nine
probabilities. IronCalc 0.9.1 does so for some functions (ABS, EXP, LN, LEN, ...:
IRONCALC_LIFTS) and, for the others, reads the range as the one cell in the formula's row or
column (#VALUE! outside it) and answers #N/IMPL! for an array constant: `{=SUM(TRUNC(A1:A3))}`
is the truncation of one cell, `=SUM(ROUND({1.2,2.7},0))` #N/IMPL!.

The evaluator here (evaluate.py) broadcasts the arguments as Excel does and has each element's
value computed by IronCalc itself, in a scratch model of its own (`compute`): the function's
arguments are written into cells and the function called on them, so the number is IronCalc's
for that one value, with the correction layer's formula rewrites applied (arguments.py,
charset.py, dates.py). The functions the layer computes itself after IronCalc (TAN, COT, CSC,
SEC, BESSELJ, BESSELY and the base conversions: functions/registry.py) are computed by the
layer's own implementations here too.

Functions of the Analysis ToolPak (ANALYSIS_TOOLPAK: EDATE, EOMONTH, ISEVEN, WEEKNUM,
YEARFRAC, the engineering and bond functions, ...) are the exception Excel keeps from the
add-in they came from: given a range of several cells where one value is expected they answer
#VALUE!, given an array they are applied to each element (formulas' test.xlsx, saved by Excel:
`{=ISEVEN(C9:J9)}`, `{=EDATE(E9:I9,C9:G9)}` and `{=BESSELJ(C4:D4,E4)}` are #VALUE!, while
`{=BITLSHIFT(C11:P11,D11:Q11)}` and `{=DATEDIF(E4:F4,C4:D4,"D")}` take their first elements).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from shared.calc.corrections.dynamic import date_text
from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.values import MISSING, Err, Grid, Lambda, Ref
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.refs import column_letters

# Excel functions whose every parameter takes one value (Excel's function reference), not
# volatile. Those the evaluator implements itself (functions.py, classic.py, text.py) keep
# their own implementation; the rest are computed by IronCalc here.
ONE_VALUE = frozenset("""
ABS ACOS ACOSH ACOT ACOTH ARABIC ASIN ASINH ATAN ATAN2 ATANH BASE CEILING CEILING.MATH
CEILING.PRECISE COMBIN COMBINA COS COSH COT COTH CSC CSCH DECIMAL DEGREES EVEN EXP FACT
FACTDOUBLE FLOOR FLOOR.MATH FLOOR.PRECISE INT ISO.CEILING LN LOG LOG10 MOD MROUND ODD POWER
QUOTIENT RADIANS ROMAN ROUND ROUNDDOWN ROUNDUP SEC SECH SIGN SIN SINH SQRT SQRTPI TAN TANH TRUNC
BETA.DIST BETA.INV BETADIST BETAINV BINOM.DIST BINOM.DIST.RANGE BINOM.INV BINOMDIST CHIDIST
CHIINV CHISQ.DIST CHISQ.DIST.RT CHISQ.INV CHISQ.INV.RT CONFIDENCE CONFIDENCE.NORM CONFIDENCE.T
CRITBINOM EXPON.DIST EXPONDIST F.DIST F.DIST.RT F.INV F.INV.RT FDIST FINV FISHER FISHERINV
GAMMA GAMMA.DIST GAMMA.INV GAMMADIST GAMMAINV GAMMALN GAMMALN.PRECISE GAUSS HYPGEOM.DIST
HYPGEOMDIST LOGINV LOGNORM.DIST LOGNORM.INV LOGNORMDIST NEGBINOM.DIST NEGBINOMDIST NORM.DIST
NORM.INV NORM.S.DIST NORM.S.INV NORMDIST NORMINV NORMSDIST NORMSINV PERMUT PERMUTATIONA PHI
POISSON POISSON.DIST STANDARDIZE T.DIST T.DIST.2T T.DIST.RT T.INV T.INV.2T TDIST TINV WEIBULL
WEIBULL.DIST
DATE DATEDIF DATEVALUE DAY DAYS DAYS360 EDATE EOMONTH HOUR ISOWEEKNUM MINUTE MONTH SECOND TIME
TIMEVALUE WEEKDAY WEEKNUM YEAR YEARFRAC
BESSELI BESSELJ BESSELK BESSELY BIN2DEC BIN2HEX BIN2OCT BITAND BITLSHIFT BITOR BITRSHIFT BITXOR
COMPLEX CONVERT DEC2BIN DEC2HEX DEC2OCT DELTA ERF ERF.PRECISE ERFC ERFC.PRECISE GESTEP HEX2BIN HEX2DEC
HEX2OCT IMABS IMAGINARY IMARGUMENT IMCONJUGATE IMCOS IMCOSH IMCOT IMCSC IMCSCH IMDIV IMEXP IMLN
IMLOG10 IMLOG2 IMPOWER IMREAL IMSEC IMSECH IMSIN IMSINH IMSQRT IMSUB IMTAN OCT2BIN OCT2DEC
OCT2HEX
ACCRINT ACCRINTM AMORDEGRC AMORLINC COUPDAYBS COUPDAYS COUPDAYSNC COUPNCD COUPNUM COUPPCD CUMIPMT
CUMPRINC DB DDB DISC DOLLARDE DOLLARFR DURATION EFFECT FV INTRATE IPMT ISPMT MDURATION NOMINAL
NPER ODDFPRICE ODDFYIELD ODDLPRICE ODDLYIELD PDURATION PMT PPMT PRICE PRICEDISC PRICEMAT PV RATE
RECEIVED RRI SLN SYD TBILLEQ TBILLPRICE TBILLYIELD VDB YIELD YIELDDISC YIELDMAT
ASC CHAR CLEAN CODE CONCATENATE DOLLAR FIXED LEFT LEN LOWER MID PROPER REPLACE REPT RIGHT SUBSTITUTE
TRIM UNICHAR UNICODE UPPER VALUE
ISBLANK ISERR ISERROR ISEVEN ISLOGICAL ISNA ISNONTEXT ISNUMBER ISODD ISTEXT N T NOT ERROR.TYPE
""".split())

# Functions with some parameters that take one value (their positions here) and others that
# take an array or a range whole (Excel's function reference): the first are applied to each
# element, the others passed to each call as they are (`PERCENTILE(A1:A9,{0.1,0.9})` is two
# percentiles of A1:A9).
PARTLY_ONE_VALUE = {
    **dict.fromkeys(("LARGE", "SMALL", "PERCENTILE", "PERCENTILE.INC", "PERCENTILE.EXC", "QUARTILE",
                     "QUARTILE.INC", "QUARTILE.EXC", "TRIMMEAN", "IRR"), (1,)),
    **dict.fromkeys(("PERCENTRANK", "PERCENTRANK.INC", "PERCENTRANK.EXC", "Z.TEST", "ZTEST", "MIRR"), (1, 2)),
    **dict.fromkeys(("RANK", "RANK.EQ", "RANK.AVG"), (0, 2)),
    **dict.fromkeys(("NPV", "XNPV", "FORECAST", "FORECAST.LINEAR"), (0,)),
    "XIRR": (2,),
    **dict.fromkeys(("WORKDAY", "NETWORKDAYS"), (0, 1)),
    **dict.fromkeys(("WORKDAY.INTL", "NETWORKDAYS.INTL"), (0, 1, 2)),
    "PROB": (2, 3),
    **dict.fromkeys(("T.TEST", "TTEST"), (2, 3)),
    # every argument whole: functions of a list of values, for a LAMBDA or LET calling them
    **dict.fromkeys((
        "STDEV", "STDEV.S", "STDEV.P", "STDEVP", "STDEVA", "STDEVPA", "VAR", "VAR.S", "VAR.P", "VARP",
        "VARA", "VARPA", "AVERAGEA", "MAXA", "MINA", "GEOMEAN", "HARMEAN", "MODE", "MODE.SNGL", "KURT",
        "SKEW", "SKEW.P", "DEVSQ", "AVEDEV", "SUMSQ", "CORREL", "COVAR", "COVARIANCE.P", "COVARIANCE.S",
        "SLOPE", "INTERCEPT", "RSQ", "PEARSON", "STEYX",
    ), ()),
}
_WHOLE_CELLS = 100_000  # an array passed whole to each call: larger is refused (flagged)

# The Analysis ToolPak's functions (Excel 2003's add-in, built in since Excel 2007), and the
# complex-number and error functions Excel 2010 and 2013 added beside them: a range of several
# cells where one value is expected is #VALUE! (see the module's docstring; formulas' test.xlsx
# ENGINEERING!AH22:AH53 for IMCOSH ... IMTAN, ERF.PRECISE and ERFC.PRECISE).
ANALYSIS_TOOLPAK = frozenset("""
ACCRINT ACCRINTM AMORDEGRC AMORLINC BESSELI BESSELJ BESSELK BESSELY BIN2DEC BIN2HEX BIN2OCT
COMPLEX CONVERT COUPDAYBS COUPDAYS COUPDAYSNC COUPNCD COUPNUM COUPPCD CUMIPMT CUMPRINC DEC2BIN
DEC2HEX DEC2OCT DELTA DISC DOLLARDE DOLLARFR DURATION EDATE EFFECT EOMONTH ERF ERFC FACTDOUBLE
GESTEP HEX2BIN HEX2DEC HEX2OCT IMABS IMAGINARY IMARGUMENT IMCONJUGATE IMCOS IMDIV IMEXP IMLN
IMLOG10 IMLOG2 IMPOWER IMREAL IMSIN IMSQRT IMSUB INTRATE ISEVEN ISODD MDURATION MROUND NOMINAL
OCT2BIN OCT2DEC OCT2HEX ODDFPRICE ODDFYIELD ODDLPRICE ODDLYIELD PRICE PRICEDISC PRICEMAT
QUOTIENT RECEIVED SQRTPI TBILLEQ TBILLPRICE TBILLYIELD WEEKNUM YEARFRAC YIELD YIELDDISC
YIELDMAT WORKDAY NETWORKDAYS XIRR XNPV IMCOSH IMCOT IMCSC IMCSCH IMSEC IMSECH IMSINH IMTAN ERF.PRECISE ERFC.PRECISE
""".split())

# Measured (tests/calc/test_one_value.py keeps it true): in an array formula IronCalc 0.9.1
# applies these to each element of a range as Excel does; the others of ONE_VALUE it reads as
# one cell.
IRONCALC_LIFTS = frozenset("""
ABS ACOS ACOSH ACOT ACOTH ASIN ASINH ATAN ATANH COS COSH COT COTH CSC CSCH DEGREES EVEN EXP
FACT INT LN LOG10 ODD RADIANS SEC SECH SIGN SIN SINH SQRT TAN TANH
POWER DAY MONTH YEAR WEEKDAY ISOWEEKNUM DATE LEN UPPER LOWER
TRIM CLEAN PROPER LEFT RIGHT MID REPT
""".split())

# what an array formula must have the layer evaluate: IronCalc reads a range as one cell there,
# or applies an Analysis ToolPak function to each cell of a range where Excel answers #VALUE!
NOT_LIFTED_BY_IRONCALC = (ONE_VALUE - IRONCALC_LIFTS) | (ONE_VALUE & ANALYSIS_TOOLPAK) | set(PARTLY_ONE_VALUE)
_ERROR_CODES = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"})

_ENGINE_ERRORS = ("#N/IMPL!", "#ERROR!", "#NAME?")
_CACHE_LIMIT = 65536
_CHUNK = 10_000  # elements calculated in one evaluation of the scratch model
_SPARE_ROWS = 256  # formula rows of an earlier, larger call kept beyond twice the current one
_cache: dict[tuple, object] = {}


# The text arguments of the text functions calculated in the scratch model: a number given
# there is written as the text Excel makes of it (15 significant digits, values.general),
# which IronCalc would write with up to 17 (`SUBSTITUTE(0.1+0.2,".",",")` "0,3" in Excel).
TEXT_ARGUMENTS = {
    **dict.fromkeys(("SUBSTITUTE",), (0, 1, 2)), **dict.fromkeys(("REPLACE", "REPLACEB"), (0, 3)),
    **dict.fromkeys(("FIND", "FINDB", "SEARCH", "SEARCHB", "EXACT"), (0, 1)),
    **dict.fromkeys(("TRIM", "CLEAN", "PROPER", "LOWER", "REPT", "LENB", "LEFTB", "RIGHTB", "MIDB"), (0,)),
}


def _as_text(name: str, position: int, value):
    """A number given to a text argument, as Excel's text of it; anything else as it is."""
    if isinstance(value, float) and position in TEXT_ARGUMENTS.get(name, ()):
        return v.to_text(value)
    return value


def lifted_positions(name: str, count: int) -> list[int]:
    """The positions, among `count` arguments, where NAME takes one value (applied to each
    element of an array given there): all of them but for PARTLY_ONE_VALUE's functions."""
    lifted = PARTLY_ONE_VALUE.get(name)
    return list(range(count)) if lifted is None else [i for i in lifted if i < count]


def refuses_range(name: str, args: list) -> bool:
    """Whether an Analysis ToolPak function is given a range of several cells where it takes one
    value (Excel's #VALUE!)."""
    return name in ANALYSIS_TOOLPAK and any(
        isinstance(args[i], Ref) and args[i].shape != (1, 1) for i in lifted_positions(name, len(args))
    )


@dataclass(frozen=True)
class Whole:
    """An array or a range passed whole to a function (its values, row by row)."""

    rows: tuple


@dataclass(frozen=True)
class Literal:
    """One value typed where a function takes a list (`STDEV(A1:A9,TRUE)`): written into the
    call, since such a function reads a logical value or a text typed there, not in a cell."""

    value: object


def call(ev, name: str, args: list):
    """NAME over the evaluated arguments, each array where one value is expected broadcast as
    Excel does (evaluate.lift). The elements are collected first and calculated together
    (`compute_all`)."""
    if refuses_range(name, args):
        return v.VALUE
    at = lifted_positions(name, len(args))
    fixed = list(args)
    for i, arg in enumerate(args):
        if i in at:
            continue
        if isinstance(arg, (Ref, Grid)):
            grid = ev.grid(arg)
            rows, cols = grid.shape
            if rows * cols > _WHOLE_CELLS:
                raise Unsupported(f"{name} given an array of more than {_WHOLE_CELLS} cells")
            fixed[i] = Whole(tuple(tuple(row) for row in grid.rows))
        elif isinstance(arg, (bool, str, Err)):
            fixed[i] = Literal(arg)
        elif isinstance(arg, float) and i in TEXT_ARGUMENTS.get(name, ()):
            fixed[i] = Literal(_as_text(name, i, arg))
    pending: list[_Pending] = []

    def later(*items):
        for i, item in zip(at, items):
            fixed[i] = date_text.as_number(name, i, _as_text(name, i, item))
        pending.append(_Pending(tuple(fixed)))
        return pending[-1]
    shaped = ev.lift(later, *[args[i] for i in at])
    values = dict(zip(map(id, pending), compute_all(name, [p.items for p in pending])))
    if isinstance(shaped, _Pending):
        return values[id(shaped)]
    if isinstance(shaped, Grid):
        return Grid([[values[id(x)] if isinstance(x, _Pending) else x for x in row] for row in shaped.rows])
    return shaped


class _Pending:
    """An element's arguments, calculated with the other elements of its call."""

    __slots__ = ("items",)

    def __init__(self, items: tuple):
        self.items = items


def compute_all(name: str, batch: list[tuple]) -> list:
    """NAME of each tuple of arguments, as IronCalc answers it (those of one kind in one
    calculation of the scratch model), or the layer's own implementation where it has one
    (`_OURS`); answers are kept (at most _CACHE_LIMIT)."""
    out: list = [None] * len(batch)
    asked: dict[tuple, dict[tuple, list[int]]] = {}  # types of the arguments -> key -> positions
    refused, ours, kept = _REFUSED.get(name), _OURS.get(name), _cache.get
    for n, items in enumerate(batch):
        types = tuple(map(type, items))  # TRUE is not 1 (they are equal in Python)
        if Lambda in types:
            out[n] = v.CALC
            continue
        key = (name, items, types)
        result = kept(key)
        if result is None:
            result = refused(items) if refused is not None else None
            if result is None and ours is not None:
                result = ours(*items)
            if result is None:
                asked.setdefault(types, {}).setdefault(key, []).append(n)
                continue
            _keep(key, result)
        out[n] = result
    for group in asked.values():
        keys = list(group)
        answers = []
        for start in range(0, len(keys), _CHUNK):  # the scratch model holds at most _CHUNK formulas
            answers += _scratch().compute_many(name, [key[1] for key in keys[start:start + _CHUNK]])
        for key, result in zip(keys, answers):
            _keep(key, result)
            for n in group[key]:
                out[n] = result
    return out


def _keep(key: tuple, result) -> None:
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = result


class _Scratch:
    """A model of one sheet: each call's arguments in a row from column A, its formula in
    column FORMULA_AT of that row, the arrays passed whole from column BLOCKS_AT."""

    FORMULA_AT, BLOCKS_AT = 64, 100

    def __init__(self):
        import ironcalc

        from shared.calc.ironcalc.model import LOCALE, TIMEZONE

        self.model = ironcalc.create("one-value", LOCALE, TIMEZONE)
        self.formula_key = None  # the function and the pattern of its arguments in the rows
        self.formula_rows = 0  # rows holding that formula
        self.blocks: dict[int, Whole] = {}  # the arrays passed whole, by their first column
        model = self.model
        # how a value of each type is written into a cell (`_write`)
        self.writers = {
            float: model.update_cell_with_number, bool: model.update_cell_with_bool,
            str: model.update_cell_with_text, type(None): lambda sheet, row, col, _: model.clear_cell_contents(sheet, row, col),
        }

    def _write(self, name: str, row: int, col: int, item) -> None:
        write = self.writers.get(type(item))
        if write is not None:
            write(0, row, col, item)
        elif isinstance(item, Err) and item.code in _ERROR_CODES:
            self.model.set_user_input(0, row, col, item.code)
        else:
            raise Unsupported(f"{name} of {item!r}")

    def _pattern(self, name: str, items: tuple) -> tuple:
        """The call's text for each argument: "" left out, a literal, a block's range, or None
        for a value in the row (written per row)."""
        slots, block_col = [], self.BLOCKS_AT
        for item in items:
            if item is MISSING:
                slots.append("")
            elif isinstance(item, Literal):
                slots.append(_literal(name, item.value))
            elif isinstance(item, Whole):
                height, width = len(item.rows), len(item.rows[0])
                if self.blocks.get(block_col) != item:
                    for later in [k for k in self.blocks if k >= block_col]:
                        del self.blocks[later]  # may be written over
                    for r, line in enumerate(item.rows, start=1):
                        for c, value in enumerate(line):
                            self._write(name, r, block_col + c, value)
                    self.blocks[block_col] = item
                slots.append(f"{column_letters(block_col)}1:{column_letters(block_col + width - 1)}{height}")
                block_col += width + 1
            else:
                slots.append(None)
        return tuple(slots)

    def compute_many(self, name: str, batch: list[tuple]) -> list:
        """NAME of each tuple of arguments, all of the same types (`compute_all`). The tuples of
        one call (`call`) differ only in the values where one value is expected: their pattern
        (what is passed whole, typed or left out) is the same."""
        model, at = self.model, self.FORMULA_AT
        pattern = self._pattern(name, batch[0])
        first = tuple(map(type, batch[0]))
        key = (name, pattern)
        if key != self.formula_key:
            for row in range(1, self.formula_rows + 1):
                model.clear_cell_contents(0, row, at)
            self.formula_key, self.formula_rows = key, 0
        if self.formula_rows > 2 * len(batch) + _SPARE_ROWS:
            # a much larger call left its rows: each would be calculated again with this one
            for row in range(len(batch) + 1, self.formula_rows + 1):
                model.clear_cell_contents(0, row, at)
            self.formula_rows = len(batch)
        if self.formula_rows < len(batch):
            columns = [column_letters(c) for c in range(1, len(pattern) + 1)]
            for row in range(self.formula_rows + 1, len(batch) + 1):
                slots = [slot if slot is not None else f"{columns[i]}{row}" for i, slot in enumerate(pattern)]
                model.set_user_input(0, row, at, _formula(name, slots))
            self.formula_rows = len(batch)
        values = [(col, self.writers.get(kind)) for col, (slot, kind) in enumerate(zip(pattern, first), start=1)
                  if slot is None]
        for row, items in enumerate(batch, start=1):
            for col, write in values:
                item = items[col - 1]
                if write is not None:
                    write(0, row, col, item)
                else:
                    self._write(name, row, col, item)
        model.evaluate()
        out = []
        read, kind_of = model.get_cell_value, model.get_cell_type
        for row, items in enumerate(batch, start=1):
            value = read(0, row, at)
            if isinstance(value, str) and value.startswith("#") and str(kind_of(0, row, at)).endswith("ErrorValue"):
                if value in _ENGINE_ERRORS and Err(value) not in items:  # not an argument's own error
                    raise Unsupported(f"{name} (the engine does not calculate it for these arguments)")
                value = Err(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            out.append(value)
        return out


def _literal(name: str, value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, Err) and value.code in _ERROR_CODES:
        return value.code
    raise Unsupported(f"{name} of {value!r}")


def _formula(name: str, slots: list[str]) -> str:
    from shared.calc.corrections import arguments, charset, dates

    formula = f"={name}({','.join(slots)})"
    for rewrite in (arguments.rewrite_formula, charset.rewrite_formula, lambda f: dates.rewrite_formula(f, False)):
        formula = "=" + (rewrite(formula) or formula).removeprefix("=")
    return formula


_local = threading.local()


def _scratch() -> _Scratch:
    scratch = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = _Scratch()
    return scratch


# --- the layer's own implementations ---------------------------------------------------------


def _paired_sizes(items):
    """T.TEST's paired test (type 1) of arrays of different sizes is #N/A (Microsoft: "If
    array1 and array2 have a different number of data points, and type = 1 (paired), T.TEST
    returns the #N/A error value"); IronCalc 0.9.1 answers a number."""
    if len(items) == 4 and all(isinstance(x, Whole) for x in items[:2]) and isinstance(items[3], float) \
            and int(items[3]) == 1:
        sizes = [sum(len(row) for row in x.rows) for x in items[:2]]
        if sizes[0] != sizes[1]:
            return v.NA
    return None


_REFUSED = {"T.TEST": _paired_sizes, "TTEST": _paired_sizes}


def _error_first(items):
    for x in items:
        if isinstance(x, Err):
            return x
    return None


def _trig(name: str):
    def run(x):
        from shared.calc.corrections.functions import trig
        from shared.calc.corrections.functions.errors import ExcelError

        if isinstance(x, Err):
            return x
        n = v.to_number(x)
        if isinstance(n, Err):
            return n
        try:
            return trig.excel_trig(name, n)
        except ExcelError as exc:
            return Err(exc.code)
    return run


def _bessel(name: str):
    def run(x, n=MISSING):
        from shared.calc.corrections.functions import bessel
        from shared.calc.corrections.functions.errors import ExcelError

        if n is MISSING:
            raise Unsupported(f"{name} given the wrong number of arguments")
        error = _error_first((x, n))
        if error is not None:
            return error
        function = bessel.besselj if name == "BESSELJ" else bessel.bessely
        try:
            return function(x, n)
        except ExcelError as exc:
            return Err(exc.code)
    return run


def _base(source: str, target: str):
    def run(number, places=MISSING):
        from shared.calc.corrections.functions import bases

        error = _error_first((number, places))
        if error is not None:
            return error
        result = bases.convert(source, target, number, None if places is MISSING else (places or 0.0))
        return Err(result[1]) if isinstance(result, tuple) else result
    return run


def _ours() -> dict:
    from shared.calc.corrections.functions import bases

    found = {name: _trig(name) for name in ("TAN", "COT", "CSC", "SEC")}
    found.update({name: _bessel(name) for name in ("BESSELJ", "BESSELY")})
    found.update({name: _base(*name.split("2")) for name in bases.NAMES})
    return found


_OURS = _ours()
