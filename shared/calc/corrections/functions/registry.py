"""The functions we evaluate ourselves, and their bridge to the `formulas` evaluator.

A planned formula is parsed by formulas with each corrected function renamed to
`SHEETCALC.<NAME>`, a name no workbook uses, registered in formulas' function table: formulas'
own TEXT, AGGREGATE, ... (and so the formulas engine) are left as they are.
"""

from __future__ import annotations

import collections
import functools
import math
import re
import threading

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.functions import aggregate as aggregate_module
from shared.calc.corrections.functions import bases, bessel, sums, trig
from shared.calc.corrections.functions.errors import ExcelError
from shared.calc.corrections.functions.text_format import Unsupported, excel_text

SUMS = ["SUMX2MY2", "SUMX2PY2", "SUMXMY2"]
BESSEL = ["BESSELJ", "BESSELY"]  # Excel's own approximations (bessel.py); IronCalc has I and K right
# Excel's reduction by the x87 π (trig.py): decisive near the poles of these four; SIN and COS
# differ from the exact functions by less than the check's absolute 1e-12 there, and are left
# to IronCalc rather than slow every trigonometric workbook down (the formulas engine uses all six)
TRIG = ["TAN", "COT", "CSC", "SEC"]
# Volatile functions answered from the job's run context (shared/calc/run_context.py).
VOLATILE = ["NOW", "TODAY", "RAND", "RANDBETWEEN"]
CORRECTED = ["TEXT", "AGGREGATE", *bases.NAMES, *SUMS, *BESSEL, *TRIG, *VOLATILE]
_PREFIX = "SHEETCALC."
RANGE_ARGUMENTS = {"AGGREGATE", *SUMS}  # functions whose arguments may be ranges
_NAME = re.compile(
    r"(?<![A-Za-z0-9_.])((?:_xlfn\.)?)(" + "|".join(sorted(CORRECTED, key=len, reverse=True))
    + r")(\s*\()",
    re.IGNORECASE,
)

_installed = False
_lock = threading.Lock()


_HINT = "TEXT|AGGREGATE|2DEC|2BIN|2OCT|2HEX|SUMX|BESSEL|TAN|COT|CSC|SEC|NOW|TODAY|RAND"  # in every corrected function's name
_HINT_TEXT = re.compile(_HINT, re.IGNORECASE)
HINTS = tuple(h.encode() for h in _HINT.split("|"))


def mentions(formula: str) -> bool:
    """A quick test at load: does the formula (outside text literals) call a corrected function.
    A plain search first: most formulas of a large workbook are rejected by it alone."""
    if not _HINT_TEXT.search(formula):
        return False
    return bool(_NAME.search(formula)) and bool(_NAME.search(TEXT_LITERAL.sub('""', formula)))


def called(formula: str) -> list[str]:
    """The corrected functions a formula calls, in order of first use."""
    names: list[str] = []
    for m in _NAME.finditer(TEXT_LITERAL.sub('""', formula)):
        if m.group(2).upper() not in names:
            names.append(m.group(2).upper())
    return names


def _outside_strings(formula: str, transform) -> str:
    """The formula with `transform` applied to each part between its text literals."""
    pieces, last = [], 0
    for m in TEXT_LITERAL.finditer(formula):
        pieces.append(transform(formula[last : m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(transform(formula[last:]))
    return "".join(pieces)


# A number IronCalc writes with an exponent without its sign (`1.5e20`), which formulas' parser
# refuses: written `1.5E+20`.
_UNSIGNED_EXPONENT = re.compile(r"(?<![A-Za-z0-9_.$])(\d+\.?\d*|\.\d+)[eE](?=\d)")


def rename(formula: str) -> str:
    """The formula with corrected functions calling our implementations (and its numbers as
    formulas reads them)."""
    return _outside_strings(formula, lambda part: _NAME.sub(
        lambda m: _PREFIX + m.group(2).upper() + m.group(3), _UNSIGNED_EXPONENT.sub(r"\1E+", part)))


def rename_back(formula: str) -> str:
    """The formula as the file keeps it (IronCalc lower-cases names it does not know)."""
    return _outside_strings(formula, lambda part: _NAME.sub(lambda m: m.group(1) + m.group(2).upper() + m.group(3), part))


# --- values between IronCalc's cells and formulas --------------------------------------------


def to_formulas(cell: tuple):
    import schedula as sh
    from formulas.tokens.operand import Error

    kind, value = cell
    if kind == "n":
        return float(value)
    if kind in ("s", "b"):
        return value
    if kind == "empty":
        return sh.EMPTY
    if value in Error.errors:
        return Error.errors[value]
    raise Unsupported(f"a precedent holds the engine's error {value}")


def from_formulas(result) -> tuple:
    import numpy as np
    import schedula as sh
    from formulas.tokens.operand import XlError

    if isinstance(result, np.ndarray):
        if result.size != 1:
            raise Unsupported("an array result")
        result = result.ravel()[0]
    if isinstance(result, XlError):
        return ("e", str(result))
    if result is sh.EMPTY:
        return ("n", 0.0)
    if isinstance(result, (bool, np.bool_)):
        return ("b", bool(result))
    if isinstance(result, (int, float, np.integer, np.floating)):
        number = float(result)
        if math.isnan(number) or math.isinf(number):
            return ("e", "#NUM!")
        return ("n", number)
    if isinstance(result, str):
        return ("s", result)
    raise Unsupported(f"a result of type {type(result).__name__}")


def _scalar(value):
    """A formulas argument value as a Python scalar (None for a blank)."""
    import numpy as np
    import schedula as sh

    if isinstance(value, np.ndarray):
        value = value.ravel()[0] if value.size else sh.EMPTY
    if value is sh.EMPTY:
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (np.integer, np.floating, int)) and not isinstance(value, bool):
        return float(value)
    return value


def _report(reason: str) -> None:
    from shared.calc.corrections.functions.layer import current

    evaluation = current.get()
    if evaluation is not None and evaluation.unsupported is None:
        evaluation.unsupported = reason


def _error(code: str):
    from formulas.tokens.operand import Error

    return Error.errors[code]


# --- the implementations as formulas functions -----------------------------------------------


def _text(value, format_code):
    value, code = _scalar(value), _scalar(format_code)
    if code is None:
        code = ""
    elif isinstance(code, bool):
        code = "TRUE" if code else "FALSE"
    elif isinstance(code, float):
        code = str(int(code)) if code.is_integer() else repr(code)
    from shared.calc.corrections.functions.layer import current

    evaluation = current.get()
    try:
        result = excel_text(value, str(code), bool(evaluation and evaluation.date1904))
    except Unsupported as exc:
        _report(f"TEXT: {exc}")
        return _error("#VALUE!")
    return _error(result) if result == "#VALUE!" else result


def _base(source: str, target: str):
    def convert(number, places=None):
        number = _scalar(number)
        if places is not None:
            places = _scalar(places)
            if places is None:
                places = 0.0
        result = bases.convert(source, target, number, places)
        if isinstance(result, tuple):
            return _error(result[1])
        return result

    return convert


def _bessel(name: str):
    """A Bessel function on formulas' argument values. Excel's answer to a range of several cells
    is #VALUE! in an array formula (formulas' test.xlsx ENGINEERING!AG4:AH4) but a value where a
    plain cell's implicit intersection picks one: after IronCalc, which did that intersection,
    such a cell is reported and keeps IronCalc's value; in the formulas engine it is #VALUE!."""
    import numpy as np

    function = {"BESSELJ": bessel.besselj, "BESSELY": bessel.bessely, "BESSELI": bessel.besseli,
                "BESSELK": bessel.besselk}[name]

    def compute(x, n):
        if any(isinstance(a, np.ndarray) and a.size > 1 for a in (x, n)):
            from shared.calc.corrections.functions.layer import current

            if current.get() is not None:
                _report(f"{name}: a range of several cells as an argument")
            return _error("#VALUE!")
        from formulas.tokens.operand import XlError

        x, n = _scalar(x), _scalar(n)
        for value in (x, n):
            if isinstance(value, XlError):  # the first error among the arguments is the answer
                return value
        try:
            return function(x, n)
        except ExcelError as exc:
            return _error(exc.code)
        except Unsupported as exc:
            _report(f"{name}: {exc}")
            return _error("#NUM!")

    return compute


def _trig(name: str):
    """A trigonometric function on one scalar as formulas passes it: Excel's value or its error.
    Text is read as Excel reads it (numbers, times, ISO dates: `COT("2024-01-10")` is the
    cotangent of the date's serial, IronCalc's TRIGONOMETRIC.xlsx); text in a locale's date
    order is reported, not guessed."""
    from formulas.tokens.operand import XlError

    from shared.calc.corrections.functions.text_format import (
        _NUMBER_TEXT,
        _text_to_number,
    )

    def compute(x):
        x = _scalar(x)
        if isinstance(x, XlError):
            return x
        if isinstance(x, str) and x != x.strip() and not _NUMBER_TEXT.fullmatch(x):
            return _error("#VALUE!")  # a date with spaces around it is not read (TRIGONOMETRIC.xlsx)
        if isinstance(x, str):
            from shared.calc.corrections.functions.layer import current

            evaluation = current.get()
            try:
                x = _text_to_number(x, bool(evaluation and evaluation.date1904))
            except Unsupported as exc:
                _report(f"{name}: {exc}")
                return _error("#VALUE!")
            if x is None:
                return _error("#VALUE!")
        try:
            return trig.excel_trig(name, 0.0 if x is None else float(x))
        except ExcelError as exc:
            return _error(exc.code)

    return compute


@functools.cache
def trig_functions() -> dict:
    """formulas' table entries for SIN, COS, TAN, COT, CSC and SEC as Excel answers them (built
    once: the layer calls them per job)."""
    from formulas.functions import get_error, wrap_ufunc

    keep = lambda *a: a  # noqa: E731 - text and blanks reach compute as they are
    return {
        prefix + name: wrap_ufunc(_trig(name), input_parser=keep, args_parser=keep, check_error=get_error)
        for name in trig.NAMES for prefix in ("", "_XLFN.")
    }


def _aggregate(function_num, options=None, *refs):
    import numpy as np
    from formulas.tokens.operand import XlError

    from shared.calc.corrections.functions.layer import current, range_flags

    for arg in (function_num, options):
        arg = _scalar(arg) if arg is not None else None
        if isinstance(arg, XlError):
            return arg
    arguments = []
    evaluation = current.get()
    number = _scalar(function_num)
    if isinstance(number, float) and 14 <= number < 20 and len(refs) >= 2:
        k = refs[-1]
        if isinstance(k, np.ndarray) and k.size > 1:
            # LARGE ... QUARTILE.EXC with several k answer an array (Excel spills it)
            _report("AGGREGATE: k given as an array (an array result)")
            return _error("#VALUE!")
    for ref in refs:
        flags = range_flags(evaluation, ref) if evaluation is not None else None
        values = np.asarray(ref, object).ravel() if isinstance(ref, np.ndarray) else [ref]
        items = []
        for n, value in enumerate(values):
            item = _item(value)
            if flags is not None:
                item.hidden, item.nested = flags[0][n], flags[1][n]
            items.append(item)
        arguments.append(items)
    try:
        return aggregate_module.aggregate(
            _scalar(function_num), None if options is None else _scalar(options), arguments
        )
    except ExcelError as exc:
        return _error(exc.code)
    except Unsupported as exc:
        _report(f"AGGREGATE: {exc}")
        return _error("#VALUE!")


def _sum_of_pairs(kind: str):
    def compute(array_x, array_y):
        import numpy as np

        def values(arg):
            flat = np.asarray(arg, object).ravel() if isinstance(arg, np.ndarray) else [arg]
            return [(i.kind, i.value) for i in map(_item, flat)]

        try:
            return sums.sum_of_pairs(kind, values(array_x), values(array_y))
        except ExcelError as exc:
            return _error(exc.code)

    return compute


def _bound(value) -> float | None:
    """A RANDBETWEEN bound as Excel reads it: a number, numeric text, a blank as 0; None otherwise."""
    value = _scalar(value)
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return value if isinstance(value, float) else None


def _volatile(name: str):
    """NOW, TODAY, RAND, RANDBETWEEN answered from the calculation's run context, the random
    numbers keyed by the cell being evaluated."""

    def compute(*arguments):
        from shared.calc import run_context
        from shared.calc.corrections.functions.layer import current

        evaluation = current.get()
        date1904 = bool(evaluation and evaluation.date1904)
        cell = evaluation.cell if evaluation is not None else None
        if name == "NOW":
            return run_context.now_serial(date1904)
        if name == "TODAY":
            return float(run_context.today_serial(date1904))
        if name == "RAND":
            return run_context.rand(cell)
        from formulas.tokens.operand import XlError

        errors = [v for v in map(_scalar, arguments) if isinstance(v, XlError)]
        if errors:  # the first error among the arguments is the answer
            return errors[0]
        bounds = [_bound(a) for a in arguments]
        if None in bounds:
            return _error("#VALUE!")
        drawn = run_context.randbetween(*bounds, cell)
        return _error("#NUM!") if drawn is None else float(drawn)

    return compute


def _item(value) -> aggregate_module.Item:
    import schedula as sh
    from formulas.tokens.operand import XlError

    if value is sh.EMPTY:
        return aggregate_module.Item("empty", None)
    if isinstance(value, XlError):
        return aggregate_module.Item("e", str(value))
    value = _scalar(value)
    if isinstance(value, bool):
        return aggregate_module.Item("b", value)
    if isinstance(value, float):
        return aggregate_module.Item("n", value)
    return aggregate_module.Item("s", value)


def call(name: str, values: list):
    """A corrected function on argument values as formulas passes them (scalars, 2-D arrays
    of references, XlError, schedula's EMPTY), with formulas' rule for the scalar functions:
    the first error among the arguments is the answer."""
    from formulas.tokens.operand import XlError

    if name in RANGE_ARGUMENTS:
        function = _aggregate if name == "AGGREGATE" else _sum_of_pairs(name)
        return function(*values)
    scalars = [_scalar(v) for v in values]
    for value in scalars:
        if isinstance(value, XlError):
            return value
    if name in VOLATILE:
        if len(values) != (2 if name == "RANDBETWEEN" else 0):
            return _error("#VALUE!")
        return _volatile(name)(*values)
    if name == "TEXT":
        if len(values) != 2:
            return _error("#VALUE!")
        return _text(*values)
    if name in BESSEL:
        if len(values) != 2:
            return _error("#VALUE!")
        return _bessel(name)(*values)
    if name in TRIG:
        return trig_functions()[name](*values) if len(values) == 1 else _error("#VALUE!")
    source, target = name.split("2")
    if not 1 <= len(values) <= (1 if target == "DEC" else 2):
        return _error("#VALUE!")
    return _base(source, target)(*values)


def volatile_functions() -> dict:
    """formulas' table entries for NOW, TODAY, RAND, RANDBETWEEN answering from the run context;
    impure as formulas' own, so never folded into a constant when a formula is compiled."""
    from formulas.functions import COMPILING, wrap_func, wrap_impure_func

    return {
        name: {
            "extra_inputs": collections.OrderedDict([(COMPILING, False)]),
            "function": wrap_impure_func(wrap_func(_volatile(name))),
        }
        for name in VOLATILE
    }


def bessel_functions() -> dict:
    """formulas' table entries for BESSELJ, BESSELY, BESSELI and BESSELK as Excel answers them
    (bessel.py); the layer uses the first two (IronCalc answers the others as Excel does)."""
    from formulas.functions import wrap_func

    return {name: wrap_func(_bessel(name)) for name in ("BESSELJ", "BESSELY", "BESSELI", "BESSELK")}


def install() -> None:
    """Register our implementations in formulas' function table (idempotent)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        import formulas
        from formulas.functions import get_error, wrap_func, wrap_ufunc

        from shared.calc.formulas import functions as formulas_fixes

        formulas_fixes.install()  # formulas with its Excel-rule fixes for the rest of a formula
        table = formulas.get_functions()
        keep = lambda *a: a  # noqa: E731 - arguments as they come, blanks included
        table[_PREFIX + "TEXT"] = wrap_ufunc(
            _text, input_parser=keep, args_parser=keep, check_error=get_error
        )
        for name in bases.NAMES:
            source, target = name.split("2")
            table[_PREFIX + name] = wrap_ufunc(
                _base(source, target), input_parser=keep, args_parser=keep,
                check_error=get_error,
            )
        table.update({_PREFIX + name: entry for name, entry in bessel_functions().items() if name in BESSEL})
        table.update({_PREFIX + name: trig_functions()[name] for name in TRIG})
        table[_PREFIX + "AGGREGATE"] = wrap_func(_aggregate)
        for name in SUMS:
            table[_PREFIX + name] = wrap_func(_sum_of_pairs(name))
        table.update({_PREFIX + name: entry for name, entry in volatile_functions().items()})
        _installed = True
