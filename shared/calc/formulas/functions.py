"""Our implementations of the functions where `formulas` disagrees with Excel.

formulas looks every function up in one table, `formulas.get_functions()` (built once and
cached), and documents adding to it as the way to supply functions. `install()` puts the ones
below into that table, once per process, before a workbook is parsed. Each is a disagreement
the Excel-saved corpus showed (docs/fidelity.md), fixed to Excel's own rules:

- COMPLEX and the IM* functions: Excel writes each part with 15 significant digits, in
  scientific notation only when the plain form would need more than 19 decimals (or the number
  reaches 1E+15), and drops a zero real part, a zero imaginary part and a coefficient of 1.
  formulas wrote Python's 17-digit repr ("30.300000000000004+41.5j", "-0").
- YEARFRAC (shared/calc/formulas/yearfrac.py): Excel's day counts (US 30/360 with its
  end-of-February rules; actual/actual with a 365 or 366 day year for spans up to a year and
  the average length of the years spanned for longer ones), and its order of errors (the basis
  is checked before the dates).
- N: N(TRUE) is 1 in Excel; formulas answered the boolean.
- SCAN and MAP: an error inside the lambda stays an error; formulas turned it into the text
  "#VALUE!" when it built the result array.
- SWITCH compares text without regard to case and never takes TRUE for 1, as Excel's = does.
- LOOKUP: with one range (the array form) it searches the first row of a range wider than tall,
  else the first column, and answers from the last row or column; with a result range, that
  range must be one row or one column (#N/A otherwise), and a blank result is 0. formulas
  searched and answered from the whole range flattened.
- LINEST and TREND (shared/calc/formulas/regression.py): an empty `const` means TRUE, shapes that
  do not fit are #REF!, and collinear variables are dropped (coefficient 0) as Excel drops them.
- TIMEVALUE of text that is only a number ("1.25") is #VALUE! in Excel; formulas read it as a time.
- TRIM removes every space but single spaces between words ("  a   b " is "a b"); formulas'
  TRIM removed the spaces at both ends only.
- `^` is POWER ("The ^ operator can be used instead of POWER", Microsoft's POWER page): formulas'
  own POWER (0^0 #NUM!, 0 to a negative power #DIV/0!, a result beyond the largest number
  #NUM!); formulas' `^` was Python's `**` (0^-1 #VALUE!, 0^0 1, an overflow #VALUE!).
- ROUND, ROUNDUP, ROUNDDOWN and FIXED round the number as Excel shows it (ROUND(1.005,2) 1.01,
  ROUND(-1.475,2) -1.48: the ROUND page's examples; numfmt.rounding.excel_round, the layer's
  own rule); formulas rounded the binary value (1.00, -1.47). This is also the rest of a formula
  the layer evaluates with formulas, `TEXT(ROUND(A1,2),"0.00")`.
- IPMT answers positive interest (formulas answered #NUM! for any: IPMT(0.05/12,1,360,-200000)
  is 833.33 on Microsoft's IPMT page's terms); VALUE reads text as the layer does ("1,234.5" is
  1234.5, where formulas read a date, 85469); ROWS and COLUMNS of a reference given as its
  values (how the layer runs a formula with TEXT, NOW, RAND...) count them (formulas: #VALUE!).
- DATEDIF reads its unit without regard to case ("d" was #NUM!), counts "MD" from the start's
  day in the end's previous month and "YD" from the start's day in the end's year, as DATE puts
  them (formulas' differed from IronCalc in 20% of random date pairs).
- CEILING.MATH and FLOOR.MATH keep a negative number's sign; XNPV and XIRR with a date before
  the first are #NUM!.
- `--x` is x as a number: formulas folded `--` into a unary plus, which keeps TRUE a logical
  value (`SUMPRODUCT(--(A1:A9="x"),B1:B9)` was 0).
- Criteria (COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS, MINIFS) are read by the layer's rule
  (dynamic/criteria.py): wildcards after "<>" too, matching the whole text without case, and
  "<>x" finding blank, numeric and logical cells (formulas: "<>*" found every text, "a?" found
  "abc", "<>x" only other texts).
"""

from __future__ import annotations

import calendar
import math
import threading
from typing import Any

_installed = False
_lock = threading.Lock()


def install() -> None:
    """Put our implementations into formulas' function table (idempotent)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        import formulas
        from formulas.functions import eng, get_error, wrap_func, wrap_ufunc

        from shared.calc.formulas import regression, yearfrac

        # Every COMPLEX/IM* function formats its answer through this one module function.
        eng._fmt_complex = format_complex
        table = formulas.get_functions()
        table["YEARFRAC"] = table["_XLFN.YEARFRAC"] = wrap_func(yearfrac.yearfrac_cell)
        table["N"] = wrap_func(_n)
        table["SCAN"] = table["_XLFN.SCAN"] = wrap_func(_scan)
        table["MAP"] = table["_XLFN.MAP"] = wrap_func(_map)
        table["SWITCH"] = table["_XLFN.SWITCH"] = {
            "function": wrap_ufunc(
                _switch, input_parser=lambda *a: a,
                check_error=lambda first, *a: get_error(first),
            )
        }
        # Excel 365's empty array is #CALC!, an error formulas does not have (it answers #VALUE!).
        from formulas.functions import Error, look
        from formulas.tokens.operand import XlError

        Error.errors.setdefault("#CALC!", XlError("#CALC!"))
        table["FILTER"] = table["_XLFN._XLWS.FILTER"] = wrap_func(_filter)
        table["TAKE"] = table["_XLFN.TAKE"] = wrap_ufunc(_take, **look.kw_drop)
        table["DROP"] = table["_XLFN.DROP"] = wrap_ufunc(_drop, **look.kw_drop)
        table["LOOKUP"] = wrap_ufunc(
            _lookup, input_parser=lambda *a: a, args_parser=_lookup_arguments,
            check_error=lambda *a: get_error(a[1]), excluded={3, 4, 5, 6, 7, 8},
        )
        table.update(regression.functions())  # LINEST, TREND
        from formulas.functions import text as text_functions

        table["TRIM"] = wrap_ufunc(excel_trim, **text_functions._kw1)
        # NOW, TODAY, RAND, RANDBETWEEN from the job's run context (shared/calc/run_context.py).
        from shared.calc.corrections.functions.registry import (
            bessel_functions,
            trig_functions,
            volatile_functions,
        )

        table.update(volatile_functions())
        table.update(bessel_functions())  # Excel's approximations, not the exact functions
        table.update(trig_functions())  # reduced by the x87 π, as Excel does
        table["TIMEVALUE"] = wrap_ufunc(
            _timevalue_text, input_parser=lambda *a: a, check_error=lambda *a: None
        )
        from formulas.functions import math as formulas_math
        from formulas.functions import operators

        operators.OPERATORS["^"] = wrap_ufunc(formulas_math.xpower)
        import formulas.functions as formulas_functions
        from formulas.functions import convert2float, text2num

        # ROUND, ROUNDUP, ROUNDDOWN and FIXED on the number as Excel shows it
        table["ROUND"] = wrap_ufunc(_rounding("round"))
        table["ROUNDUP"] = wrap_ufunc(_rounding("up"))
        table["ROUNDDOWN"] = wrap_ufunc(_rounding("down"))
        table["FIXED"] = wrap_ufunc(_fixed, input_parser=lambda *a: a, args_parser=lambda *a: a)
        table["IPMT"] = wrap_ufunc(_ipmt, input_parser=convert2float)
        table["VALUE"] = wrap_ufunc(_value, input_parser=lambda *a: a)
        formulas_functions.__dict__["__xfilter"] = _criteria_mask(formulas_functions.__dict__["__xfilter"])
        _double_negation(wrap_ufunc)
        for name, up in (("CEILING.MATH", True), ("FLOOR.MATH", False)):
            table[name] = table["_XLFN." + name] = wrap_ufunc(_multiple(up))
        table["DATEDIF"] = wrap_ufunc(_datedif, input_parser=lambda *a: text2num(a))
        table["XNPV"] = wrap_func(_dates_from_the_first(table["XNPV"]))
        table["XIRR"] = table["_XLFN.XIRR"] = wrap_func(_dates_from_the_first(table["XIRR"], dates_at=1))
        table["ROWS"] = wrap_func(_dimension(0), ranges=True)
        table["COLUMNS"] = wrap_func(_dimension(1), ranges=True)
        _installed = True


def _multiple(up: bool):
    """CEILING.MATH (up) and FLOOR.MATH: to a multiple of |significance| (default 1), a positive
    number up (CEILING) or down (FLOOR); a negative number toward zero for CEILING and away from
    it for FLOOR, the other way with a nonzero mode (Microsoft's pages: CEILING.MATH(-8.1,2) is
    -8, CEILING.MATH(-5.5,2,-1) -6, FLOOR.MATH(-8.1,2) -10, FLOOR.MATH(-5.5,2,-1) -4). formulas
    dropped the sign when significance was left out (FLOOR.MATH(-2.5) was 2)."""
    from shared.calc.numfmt.rounding import shown

    def run(number, significance=1, mode=0):
        if not significance:
            return 0.0
        quotient = shown(number / abs(significance))
        toward_plus = up if number >= 0 or not mode else not up
        return float(math.ceil(quotient) if toward_plus else math.floor(quotient)) * abs(significance)
    return run


def _datedif(start, end, unit):
    """DATEDIF on Excel's calendar (Microsoft: DATEDIF function): the unit without regard to case
    (formulas answered #NUM! for "d"); "MD" the days from the start's day in the month before
    the end's (DATE(year, month-1, day): negative where that day does not exist, as the page
    warns), "YD" the days from the start's month and day in the end's year, or the year before.
    formulas counted "MD" from the start's month (DATEDIF(18-Jun-2020,15-Jan-2024,"md") 27, not
    28) and "YD" likewise."""
    from formulas.functions import Error
    from formulas.functions.date import _int2date, xdate

    first, last = int(start), int(end)
    if first > last or first < 0:
        return Error.errors["#NUM!"]
    unit = str(unit).upper()
    if unit == "D":
        return float(last - first) if last <= 2958465 else Error.errors["#NUM!"]
    (y1, m1, d1), (y2, m2, d2) = _int2date(first), _int2date(last)
    months = (y2 - y1) * 12 + m2 - m1 - (1 if d2 < d1 else 0)
    if unit in ("M", "Y", "YM"):
        return float(months if unit == "M" else months // 12 if unit == "Y" else months % 12)
    if unit == "MD":
        if d2 >= d1:
            return float(d2 - d1)
        return float(last - (xdate(y2, m2 - 1, d1) if m2 > 1 else xdate(y2 - 1, 12, d1)))
    if unit == "YD":  # from the start's month and day in the end's year (or the one before),
        # 29 February where that year has none the 28th (29-Feb-1992 to 24-Mar-2007: 24)
        def anniversary(year):
            day = d1 if (m1, d1) != (2, 29) or calendar.isleap(year) else 28
            return xdate(year, m1, day)
        if first < 61:  # a start before March 1900, Excel's year with a 29 February: the end's
            # month and day in 1900 (or 1901) instead (test.xlsx 'DATE & TIME'!R4, 8 to 1987: 153)
            moved = xdate(1900, m2, d2)
            return float((moved if moved >= first else xdate(1901, m2, d2)) - first)
        moved = anniversary(y2)
        if moved > last:
            moved = anniversary(y2 - 1)
        return float(last - moved)
    return Error.errors["#NUM!"]


def _dates_from_the_first(own, dates_at: int = 2):
    """XNPV and XIRR: "if any number in dates precedes the starting date", #NUM! (Microsoft's
    XNPV and XIRR pages); formulas discounted it as a negative time."""
    from formulas.functions import Error

    function = own["function"] if isinstance(own, dict) else own

    def run(*args):
        import numpy as np

        if len(args) > dates_at:
            dates = [d for d in np.ravel(np.asarray(args[dates_at], dtype=object))
                     if isinstance(d, (int, float, np.number)) and not isinstance(d, (bool, np.bool_))]
            if dates and any(int(d) < int(dates[0]) for d in dates[1:]):
                return Error.errors["#NUM!"]
        return function(*args)
    return run


def _double_negation(wrap_ufunc) -> None:
    """`--x` is x as a number (TRUE 1, "3" 3: Excel's idiom, `SUMPRODUCT(--(A1:A9="x"),B1:B9)`).
    formulas' tokenizer folds a run of signs into one, `--` into `+`, and its unary plus keeps a
    logical value a logical value (SUMPRODUCT then counted none); such a plus, folded from an
    even number of minus signs, is compiled as a conversion to a number."""
    from formulas.tokens.operator import Operator, OperatorToken

    if getattr(OperatorToken, "_sheetcalc_negation", False):
        return
    own_process = OperatorToken.process
    as_number = wrap_ufunc(lambda x: x)  # formulas' numeric argument reading (TRUE 1.0, "3" 3.0)

    def process(self, match, context=None, parser=None):
        attr = own_process(self, match, context=context, parser=parser)
        minus = attr.get("sum_minus", "").count("-")
        if minus >= 2 and minus % 2 == 0:
            attr["negated_twice"] = True
        return attr

    def compile(self):
        if self.name == "u+" and self.attr.get("negated_twice"):
            return as_number
        return Operator.compile(self)

    OperatorToken.process = process
    OperatorToken.compile = compile
    OperatorToken._sheetcalc_negation = True


def _criteria_mask(formulas_own):
    """The cells of a range a criterion finds, for COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS,
    MINIFS: the layer's reading of a criterion (dynamic/criteria.py, Microsoft's pages), where
    formulas matched wildcards only after "=", from the start of the text and with case, and
    left blank, numeric and logical cells out of "<>x". A criterion the layer leaves to the
    reader's locale (a date as text) is reported as such and answered by formulas' own rule."""
    import numpy as np
    from formulas.tokens.operand import XlError

    from shared.calc.corrections.dynamic.criteria import criterion, plain_text
    from shared.calc.corrections.dynamic.values import Err
    from shared.calc.corrections.functions.layer import current
    from shared.calc.corrections.functions.registry import _report, _scalar
    from shared.calc.corrections.functions.text_format import Unsupported

    def layer_value(x):  # formulas gives a blank cell of a criteria range as ""
        x = _scalar(x)
        return Err(str(x)) if isinstance(x, XlError) else None if x == "" else x

    def mask(test_range, condition):
        try:
            test = criterion(layer_value(condition))
            if isinstance(condition, str) and condition.startswith("<>") and plain_text(condition[2:]) \
                    and current.get() is not None:
                # the layer runs a formula as IronCalc holds it, whose "<>x" not_equal.py
                # completed with "<>*" for IronCalc's reading (other texts only): read so here
                other = test
                test = lambda x: isinstance(x, str) and other(x)
        except Unsupported as exc:
            _report(f"COUNTIF: {exc}")
            return formulas_own(test_range, condition)
        return np.vectorize(lambda x: bool(test(layer_value(x))), otypes=[bool])(test_range["raw"])
    return mask


def _dimension(axis: int):
    """ROWS (0) or COLUMNS (1) of a reference, or of the values of one, as the layer gives a
    formula's references to formulas (formulas answered #VALUE! for those)."""
    import numpy as np
    from formulas.functions.look import xcolumns

    def run(ref):
        if hasattr(ref, "ranges"):
            return xcolumns(ref, axis=axis)
        shape = np.shape(ref)
        return shape[axis] if len(shape) == 2 else 1
    return run


def _ipmt(rate, per, nper, pv, fv=0, type=0):
    """IPMT as Excel answers it, positive interest included (formulas answered #NUM! for any)."""
    import numpy_financial as npf
    from formulas.functions import Error

    if per < 1 or per >= nper + 1:
        return Error.errors["#NUM!"]
    return float(npf.ipmt(rate, per, nper, pv, fv=fv, when=type))


def _value(x):
    """VALUE by the layer's reading of text as Excel reads it (dynamic/number_text.py): "1,234.5"
    is 1234.5, "$1,000" 1000, "12%" 0.12, "(100)" -100; a blank cell 0, a logical value #VALUE!."""
    from formulas.functions import Error

    from shared.calc.corrections.dynamic import number_text
    from shared.calc.corrections.functions.registry import _report, _scalar
    from shared.calc.corrections.functions.text_format import Unsupported

    value = _scalar(x)
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return Error.errors["#VALUE!"]
    if isinstance(value, float):
        return value
    text = str(value)
    if not text.strip():
        return Error.errors["#VALUE!"]
    try:
        number = number_text.value(text)
    except Unsupported as exc:  # a form the layer does not settle: flagged, not guessed
        _report(f"VALUE: {exc}")
        return Error.errors["#VALUE!"]
    return Error.errors["#VALUE!"] if number is None else number


def _rounding(mode: str):
    from shared.calc.numfmt.rounding import excel_round

    return lambda x, digits: excel_round(x, digits, mode)


def _fixed(number, decimals=2, no_commas=False):
    """formulas' FIXED given the number rounded as ROUND rounds it: FIXED(1.005,2) is "1.01"."""
    from formulas.functions.text import replace_empty, xfixed

    from shared.calc.numfmt.rounding import excel_round

    places = int(float(replace_empty(decimals)))
    value = float(replace_empty(number))
    if places <= 127 and abs(value) < 1e15:  # from 1E+15 formulas writes 15 digits itself
        number = excel_round(value, places)
    return xfixed(number, decimals, no_commas)


# --- numbers as Excel writes them in text ----------------------------------------------------


def excel_number_text(value: float) -> str:
    """A number as Excel turns it into text (15 significant digits, Excel's notation rules)."""
    if value == 0:
        return "0"
    mantissa, exponent_text = f"{value:.14e}".split("e")
    exponent = int(exponent_text)
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    decimals = len(digits) - 1 - exponent
    if exponent >= 15 or decimals > 19:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}E{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    fraction = digits[exponent + 1:]
    return sign + whole + ("." + fraction if fraction else "")


def format_complex(real: float, imaginary: float, suffix: str = "i") -> str:
    """COMPLEX's text: "3+4i", "-i", "2.5", "0"."""
    from formulas.errors import FoundError
    from formulas.functions import Error

    if not (math.isfinite(real) and math.isfinite(imaginary)):
        raise FoundError(err=Error.errors["#NUM!"])
    real_text = excel_number_text(real)
    imaginary_text = excel_number_text(imaginary)
    out = "" if real_text == "0" else real_text
    if imaginary_text != "0":
        coefficient = {"1": "", "-1": "-"}.get(imaginary_text, imaginary_text)
        if out and not coefficient.startswith("-"):
            out += "+"
        out += coefficient + suffix
    return out or "0"


# --- errors ------------------------------------------------------------------------------


def excel_error(code: str):
    """formulas' FoundError carrying Excel's error `code` ("#VALUE!"), for a function to raise."""
    from formulas.errors import FoundError
    from formulas.functions import Error

    return FoundError(err=Error.errors[code])


# --- empty arrays: FILTER, TAKE, DROP -----------------------------------------------------------

_NOT_GIVEN = object()


def _filter(array: Any, condition: Any, if_empty: Any = _NOT_GIVEN) -> Any:
    """FILTER, whose nothing-matched answer is #CALC! unless ``if_empty`` is given."""
    from formulas.functions import Error
    from formulas.functions.look import xfilter

    return xfilter(array, condition, Error.errors["#CALC!"] if if_empty is _NOT_GIVEN else if_empty)


def _count(value: Any) -> int | None:
    from formulas.functions import _convert2float

    return None if value is None else int(_convert2float(value))


def _take(array: Any, rows: int, columns: Any = None) -> Any:
    """TAKE: taking no rows or no columns is the empty array, #CALC!."""
    from formulas.functions.look import xtake

    if rows == 0 or _count(columns) == 0:
        raise excel_error("#CALC!")
    return xtake(array, rows, columns)


def _drop(array: Any, rows: int, columns: Any = 0) -> Any:
    """DROP: dropping every row or every column (or more) is the empty array, #CALC!."""
    from formulas.functions.look import xdrop

    if abs(rows) >= array.shape[0] or abs(_count(columns or 0)) >= array.shape[1]:
        raise excel_error("#CALC!")
    return xdrop(array, rows, columns)


# --- N, SCAN, MAP ----------------------------------------------------------------------------


def _n(value: Any):
    import numpy as np
    from formulas.functions import Array, raise_errors

    value = np.asarray(value, object).ravel()[0]
    raise_errors(value)
    if isinstance(value, (bool, np.bool_)):
        value = float(value)
    elif not isinstance(value, (int, float, np.integer, np.floating)):
        value = 0
    return np.asarray([[value]], object).view(Array)


def _first(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.ravel()[0] if value.size else value
    return value


def _scan(initial_value: Any, array: Any, func: Any):
    import numpy as np
    from formulas.functions import Array, flatten, replace_empty

    array = np.atleast_2d(array)
    out, accumulated = [], replace_empty(initial_value)
    for item in flatten(array, None):
        accumulated = func(accumulated, item)
        out.append(_first(accumulated))
    return np.asarray(out, object).reshape(array.shape).view(Array)


def _map(array: Any, func: Any, *arrays: Any):
    import numpy as np
    from formulas.functions import Array, Error, flatten

    if arrays:  # MAP(array1, array2, ..., lambda): the lambda comes last
        arrays = (func,) + arrays
        func, arrays = arrays[-1], arrays[:-1]
    first = np.atleast_2d(array)
    every = [first] + [np.atleast_2d(a) for a in arrays]
    if any(a.shape != first.shape for a in every):
        return np.asarray([[Error.errors["#VALUE!"]]], object).view(Array)
    out = [_first(func(*args)) for args in zip(*(flatten(a, None) for a in every))]
    return np.asarray(out, object).reshape(first.shape).view(Array)


# --- TRIM ----------------------------------------------------------------------------------


def excel_trim(text: str) -> str:
    """TRIM: "Removes all spaces from text except for single spaces between words" (the TRIM page:
    the space character 32 only, not the nonbreaking space)."""
    return " ".join(part for part in text.split(" ") if part)


# --- SWITCH, TIMEVALUE -----------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Excel's = for two plain values: text ignores case, booleans are not numbers."""
    import numpy as np

    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    a_bool, b_bool = isinstance(a, (bool, np.bool_)), isinstance(b, (bool, np.bool_))
    if a_bool or b_bool:
        return a_bool and b_bool and bool(a) == bool(b)
    if isinstance(a, str) or isinstance(b, str):
        return False
    return a == b


def _switch(value: Any, *cases: Any) -> Any:
    from formulas.functions import Error, XlError

    for case, result in zip(cases[::2], cases[1::2]):
        if isinstance(case, XlError):
            return case
        if _same(value, case):
            return result
    return cases[-1] if len(cases) % 2 else Error.errors["#N/A"]


def _timevalue_text(text: Any) -> Any:
    from formulas.functions import Error, XlError
    from formulas.functions.date import xtimevalue

    if isinstance(text, XlError):
        return text
    if not isinstance(text, str):
        return Error.errors["#VALUE!"]
    try:
        float(text)
    except ValueError:
        return xtimevalue(text)
    return Error.errors["#VALUE!"]


# --- LOOKUP ----------------------------------------------------------------------------------


def _lookup_arguments(value: Any, lookup_range: Any, result_range: Any = None) -> tuple:
    """formulas' MATCH arguments for the row or column Excel searches, and the answers."""
    import numpy as np
    from formulas.functions.look import args_parser_lookup_array

    table = np.atleast_2d(np.asarray(lookup_range, object))
    wide = table.shape[1] > table.shape[0]
    searched = table[0] if wide else table[:, 0]
    if result_range is None:
        answers = table[-1] if wide else table[:, -1]
    else:
        answers = np.atleast_2d(np.asarray(result_range, object))
        if 1 not in answers.shape:  # several rows and columns: Excel answers #N/A
            from formulas.functions import Error

            answers = np.asarray([Error.errors["#N/A"]], object)
    return args_parser_lookup_array(value, searched, answers, 1)


def _lookup(*args: Any) -> Any:
    import numpy as np
    import schedula as sh
    from formulas.functions import Error, XlError
    from formulas.functions.look import xmatch

    *match_args, answers = args
    if not np.size(answers):
        return Error.errors["#N/A"]
    position = xmatch(*match_args)
    if isinstance(position, XlError):
        return position
    answers = np.ravel(answers)
    if position > answers.size:
        return Error.errors["#N/A"]
    answer = answers[position - 1]
    return 0 if answer is sh.EMPTY else answer
