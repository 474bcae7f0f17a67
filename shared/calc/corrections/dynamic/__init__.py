"""Excel 365's dynamic arrays and LAMBDA functions, evaluated by the correction layer.

IronCalc 0.9.1 calculates many of these functions, but not all as Excel does: BYROW given a
function by name (`_xleta.SUM`), SCAN and REDUCE over array constants or from an error, COUNT
of a computed array, GROUPBY and PIVOTBY, TEXTSPLIT/TEXTAFTER given arrays, binary-search
XMATCH (measured on the corpus, formulas/test/test_files/test.xlsx). And the cells a dynamic
array spills into hold, in its model, the values the file saved until it spills again.

So every cell whose formula calls one of these functions (FAMILY) or reads a spill (`A1#`) is
evaluated here after IronCalc (functions/layer.py runs the fixed point): its formula, as
IronCalc holds it, is parsed (parse.py) and evaluated over the model's values (evaluate.py,
functions.py, arrays.py, lookup.py, text.py); an array result is written into the anchor and
the cells it spills into, or #SPILL! when one of them holds something (Microsoft: "Dynamic
array formulas and spilled array behavior"). A cell we cannot evaluate as Excel would keeps
IronCalc's value and is flagged with the reason.

SUMPRODUCT's arguments are arrays in every version of Excel: a one-value function given a range
there is applied to each of its cells (`SUMPRODUCT(--ISNUMBER(SEARCH("a",A1:A9)))` counts the
cells holding an "a"; Microsoft: "SUMPRODUCT function"). IronCalc 0.9.1 reads such a range as
one cell, the one in the formula's row (it renders it `@A1:A9`), and answers a wrong number
without an error; given an array it calculates (`ROUND(B1:B9*1.5,0)`) it answers #N/IMPL!. A
cell whose SUMPRODUCT holds either is evaluated here (`sumproduct_of_arrays`), always, with the
`@` IronCalc put inside SUMPRODUCT's arguments taken out (`lifted`); the same for INDEX's array
and LOOKUP's vectors, which take arrays too (ARRAY_ARGUMENTS). Likewise a legacy
(Ctrl+Shift+Enter) array formula applying ISNUMBER, ISTEXT, ISBLANK, ..., ROUND, MOD, NOT, N,
VALUE, IFS or SWITCH to an array (`{=SUM(IF(ISNUMBER(B1:B9),B1:B9))}`), which IronCalc answers as if every
element were the first (`legacy_of_arrays`).

At load (`clear_spill_tails`) the cells a dynamic array spilled into in the file are emptied,
so no saved value is ever read as a constant, and their areas are kept in the model's
corrections (`spill_areas`), to tell them from cells a user filled.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

from shared.calc.corrections.dynamic import (
    complex_text,
    date_text,
    distributions,
    one_value,
)
from shared.calc.corrections.dynamic.parse import bare as parse_bare
from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.functions.text_format import Unsupported
from shared.calc.refs import cell_name, column_number

FAMILY = (
    "LET", "LAMBDA", "MAP", "REDUCE", "SCAN", "MAKEARRAY", "BYROW", "BYCOL", "ISOMITTED",
    "FILTER", "SORT", "SORTBY", "UNIQUE", "SEQUENCE", "RANDARRAY", "XLOOKUP", "XMATCH",
    "VSTACK", "HSTACK", "TAKE", "DROP", "EXPAND", "CHOOSECOLS", "CHOOSEROWS", "TOCOL", "TOROW",
    "WRAPROWS", "WRAPCOLS", "TEXTSPLIT", "TEXTBEFORE", "TEXTAFTER", "VALUETOTEXT", "ARRAYTOTEXT",
    "GROUPBY", "PIVOTBY", "PERCENTOF", "ANCHORARRAY", "TREND", "LINEST", "LOGEST", "GROWTH", "BAHTTEXT",
    "NUMBERVALUE", "REGEXTEST", "REGEXEXTRACT", "REGEXREPLACE", "TRIMRANGE", "_TRO_LEADING", "_TRO_TRAILING",
    "_TRO_ALL",
)
# The FAMILY functions IronCalc 0.9.1 does not implement at all, evaluated only here: not unknown
# to the service (GROUPBY and PIVOTBY, ANCHORARRAY, which is how a file writes a spill
# reference `A1#`, BAHTTEXT, and the trim references `A1:.A9`, which a file writes
# `_TRO_TRAILING(A1:A9)`: arrays.py); the forms the layer leaves out are flagged cell by cell instead.
EVALUATED = frozenset(
    name for base in ("GROUPBY", "PIVOTBY", "ANCHORARRAY", "BAHTTEXT", "_TRO_LEADING", "_TRO_TRAILING", "_TRO_ALL")
    for name in (base, "_XLFN." + base)
)
# Older functions, written without a prefix, evaluated here because IronCalc 0.9.1 answers
# them wrongly in forms the corpus shows (regression.py) or lacks them (BAHTTEXT, text.py):
# always ours (_ROUTED).
CLASSIC = ("TREND", "LINEST", "LOGEST", "GROWTH", "BAHTTEXT")
# every other FAMILY function is written with a prefix in a file
HINTS = (b"_XLFN.", b"_XLETA.", *(name.encode() + b"(" for name in CLASSIC), b"SUMPRODUCT(", b"INDEX(", b"CHOOSE({",
         b"LOOKUP(", b"MATCH(", b"CONVERT(", b"VALUE(", b"&AMP;", b"CONCATENATE(", *complex_text.HINTS,
         *(name.encode() + b"(" for name in (*distributions.ROUTED, *distributions.COUNTS) if "." not in name))
_MENTION = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.|_xlws\.)*(?:" + "|".join(sorted(FAMILY, key=len, reverse=True))
    + r")\s*\(|_xleta\.|\$?[A-Za-z]{1,3}\$?\d+#",
    re.IGNORECASE,
)


def mentions(formula: str) -> bool:
    """Whether the evaluator here takes a formula that is not an array formula (`select`)."""
    return select(formula) is not None


def may_spill(formula: str) -> bool:
    """Whether a formula the evaluator takes may answer an array that spills: any it takes but
    for its approximate lookups or the errors of IronCalc's it corrects alone (Selected.watched),
    which are not parsed here."""
    return select(formula, watch=False) is not None


@dataclass
class Selected:
    """A formula the evaluator here takes (`select`): as evaluated (`lifted`), its parse tree (or
    the Unsupported the parser raised; None until first needed), and whether it is always
    evaluated here, whatever IronCalc answers: an array IronCalc reads as one value, in SUMPRODUCT
    (`sumproduct_of_arrays`), a legacy array formula (`legacy_of_arrays`) or criteria
    (`criteria_of_arrays`)."""

    formula: str
    tree: object = None
    always: bool = False
    # taken only for its approximate lookups or for IronCalc's errors (when_error): one value in
    # its own cell, never a spill (`may_spill`)
    watched: bool = False
    # the references and names approximate lookups read their lookup values from
    # (`approximate_lookups`): ours in a calculation where one holds a text or a logical value
    when_text: list = field(default_factory=list)
    # errors of IronCalc's that make the cell ours, beyond the engine's own (#N/IMPL!, #ERROR!)
    when_error: tuple = ()
    # it joins text: ours where IronCalc's text shows a number as Excel does not (settle.py)
    when_digits: bool = False
    # (test, reference or name) pairs (`watched_values`, settle.VALUE_TESTS): ours where the cell
    # holds a value its test picks: "long", a number given to a text function whose text Excel
    # writes otherwise (numbers_given_as_text); "fraction", a MOD divisor that is not whole;
    # "large", a count above distributions.EXACT_COUNT given to a discrete distribution
    when_value: list = field(default_factory=list)
    # one call answering a complex number: ours where IronCalc writes a part as Excel does not
    # (complex_text.py)
    when_complex: bool = False
    # a legacy array formula over several cells: ours where IronCalc fills its area's cells
    # beyond the result with #VALUE! (`area_watch`)
    when_area: bool = False
    # taken for the dates held as text its when_text cells give an operator or a date function
    # (`date_text_watch`): planned only where one of them holds such a text at load
    date_text: bool = False
    # arithmetic over an array (`_arithmetic_of_array`): ours also where a cell IronCalc spilled
    # from it shows #VALUE!
    when_spill: bool = False

    def parsed(self):
        if self.tree is None:
            self.tree = _parsed(self.formula)
        return self.tree


def select(formula: str, array_formula: bool = False, watch: bool = True) -> Selected | None:
    """Whether the evaluator here takes a formula (None: IronCalc's alone): it calls a FAMILY
    function or reads a spill, gives SUMPRODUCT an array IronCalc reads as one value, CHOOSE an
    array of indexes, or a criteria argument an array constant; an array formula (legacy or
    dynamic, `array_formula`) also a NOT_LIFTED function or criteria given an array. And, only
    in the calculations where IronCalc would differ (`watched`), one with approximate lookups
    (`approximate_lookups`) or the functions of _WHEN_ERROR, whose every function the evaluator
    has. Cheap for the formulas of a large workbook: a formula is parsed once, and only when one
    of these functions is in it. `watch` False: none is taken for its approximate lookups or the
    functions of _WHEN_ERROR (`watched`)."""
    unquoted = TEXT_LITERAL.sub('""', formula)  # the calls the tests below look for are outside text
    if not array_formula and "(" not in unquoted and "#" not in unquoted and "&" not in unquoted:
        return None  # arithmetic of cells (`=A1*2`): every test below needs a call, a spill or a join
    family = bool(_MENTION.search(formula)) and bool(_MENTION.search(unquoted))
    choose = bool(_CHOOSE_OF_ARRAY.search(formula))  # always ours (_engine_misreads)
    index_array = array_formula and bool(_INDEX_OF_ARRAY.search(formula))
    sumproduct = bool(_SUMPRODUCT.search(formula))
    array_arguments = bool(_ARRAY_ARGUMENT_CALL.search(formula))  # INDEX's or LOOKUP's, as SUMPRODUCT's
    # an array formula applying one to a range or an array; any formula, to an array constant
    legacy = (array_formula or "{" in formula) and bool(_NOT_LIFTED_MENTION.search(formula))
    counted = (array_formula or "{" in formula or sumproduct or array_arguments) \
        and bool(_MISCOUNTED_MENTION.search(formula))
    references = (array_formula or sumproduct) and bool(_REFERENCE_CALL.search(formula))
    not_equal = "<>" in formula and bool(_NOT_EQUAL_CALL.search(formula))
    logical_order = bool(_LOGICAL_ORDER.search(formula)) and bool(_criteria_call().search(formula))
    # criteria given an array select an array formula or one with an array constant; in any
    # formula selected otherwise, they make it always ours
    criteria_select = array_formula or "{" in formula
    criteria = (family or choose or sumproduct or legacy or criteria_select) \
        and bool(_CRITERIA_CALL.search(formula))
    lookup = watch and bool(_LOOKUP_CALL.search(formula))
    when_error = tuple(code for call, codes in _WHEN_ERROR if watch and call.search(formula) for code in codes)
    joins = watch and bool(_JOINS.search(unquoted))
    as_text = watch and bool(_TEXT_OF_NUMBER_CALL.search(unquoted))
    complex_number = watch and complex_text.whole_call(formula)
    radix_text = watch and bool(_RADIX_TEXT_CALL.search(formula))
    fixed = watch and bool(_FIXED_CALL.search(unquoted))
    valued = watch and (bool(_MOD_CALL.search(unquoted))
                        and len(_MOD_CALL.findall(unquoted)) != len(_WHOLE_DIVISOR.findall(unquoted))
                        or bool(_COUNT_CALL.search(unquoted)))
    distribution = watch and bool(_DISTRIBUTION_CALL.search(unquoted))
    if radix_text and "#VALUE!" not in when_error:
        when_error += ("#VALUE!",)
    switch = watch and bool(_SWITCH_CALL.search(formula))  # ours where a cell it compares is blank
    arithmetic = watch and (array_formula or sumproduct) and bool(_ARITHMETIC.search(unquoted))
    # INDEX's or LOOKUP's arrays: a range IronCalc intersects there (`@`) or a function of one value
    array_arguments = array_arguments and ("@" in formula or bool(_elementwise_call().search(formula)))
    if not (family or choose or index_array or sumproduct or array_arguments or legacy or counted or references or not_equal
            or logical_order or radix_text or fixed or valued or distribution
            or criteria or lookup or when_error or joins or as_text or complex_number or switch or arithmetic):
        return None
    found = Selected((lifted(formula) if "@" in formula else None) or formula)
    # what the functions are given, a name LET binds written as its value
    given = _lets_inlined(found.parsed()) if _LET_CALL.search(formula) else found.parsed()
    if arithmetic and _arithmetic_of_array(given, array_formula):
        when_error += () if "#VALUE!" in when_error else ("#VALUE!",)
        found.when_spill = array_formula
    in_sumproduct = (sumproduct or array_arguments) and (
        found.formula != formula
        or bool(_elementwise_call().search(formula)) and _elementwise_of_array(given, False)
    )
    in_legacy = legacy and _not_lifted_of_array(given, ranges=array_formula) \
        or counted and _miscounted_of_array(given, ranges=array_formula) \
        or references and _references_of_array(given)
    in_criteria = criteria and _criteria_of_array(given)
    in_not_equal = not_equal and _not_equal_text(given)
    in_index = index_array and _index_of_array(given)
    lookups = approximate_lookups(found.parsed()) if lookup else []
    decided, found.when_value = watched_values(found.parsed()) if valued else (False, [])
    decided = decided and _evaluable(found.parsed(), scratch=True)  # else IronCalc's, as before
    tail = distribution and _evaluable(found.parsed(), scratch=True)  # likewise
    misread = any(table[0] == "array" or value[0] in ("str", "bool") or descending
                  for value, table, descending in lookups) or lookup and _computed_vectors(found.parsed())
    found.when_text = [value for value, _, _ in lookups if value[0] in ("ref", "name") and ":" not in value[1]]
    if when_error and _TRAPS.search(formula):
        found.when_text += trapped_readings(found.parsed())
    found.watched = not (family or choose or in_sumproduct or in_legacy or in_criteria and criteria_select
                         or in_not_equal or in_index or logical_order or decided or tail)
    if found.watched and not ((lookups or when_error or switch) and _evaluable(found.parsed())
                              or (joins or as_text or complex_number or radix_text or fixed or found.when_value)
                              and _evaluable(found.parsed(), scratch=True)):
        return None  # (a job would find out only then that the layer cannot answer it)
    # an empty value in SWITCH is 0 in Excel (formulas' test.xlsx LOGICAL!R25 matches it with a
    # 0 cell), never matched by IronCalc 0.9.1: always ours
    empty_case = switch and _empty_switch_value(found.parsed())
    found.always = bool(in_sumproduct or in_legacy or in_criteria or misread or empty_case or in_not_equal or logical_order
                        or in_index or decided or tail or joins and _skips_empty_text(found.parsed()))
    found.when_error = when_error
    found.when_digits = joins or as_text or fixed
    if as_text:
        found.when_value += [("long", node) for node in numbers_given_as_text(found.parsed())]
    found.when_complex = complex_number
    return found


# A criterion that orders logical values ("<=TRUE", ">FALSE"): Excel compares the cells holding
# TRUE or FALSE, FALSE before TRUE, and no other (Excel-saved: formulas' test.xlsx STATISTICAL!Y24
# COUNTIF(...,"<=TRUE") 1 over "29/02/1900" and TRUE; MATH & TRIG!Y73 SUMIF over "ciao" and TRUE
# sums TRUE's row alone); IronCalc 0.9.1 matches none of them (criteria.criterion has the rule).
_LOGICAL_ORDER = re.compile(r'"\s*[<>]=?\s*(?:TRUE|FALSE)\s*"', re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _criteria_call() -> re.Pattern:
    """A call of any function that takes criteria (criteria.CRITERIA_ARGUMENTS)."""
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS

    names = "|".join(sorted(map(re.escape, CRITERIA_ARGUMENTS), key=len, reverse=True))
    return re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + names + r")\s*\(", re.IGNORECASE)


_NOT_EQUAL_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:AVERAGEIFS?|MAXIFS|MINIFS)\s*\(", re.IGNORECASE)
_NOT_EQUAL_TAKEN = frozenset({"AVERAGEIF", "AVERAGEIFS", "MAXIFS", "MINIFS"})


def _not_equal_text(node) -> bool:
    """Whether AVERAGEIF(S), MAXIFS or MINIFS is given a criterion "not equal to a text"
    (`"<>Closed"`, `"<>"&B1`): Excel keeps blank, numeric and logical cells there, IronCalc 0.9.1
    only the other texts (COUNTIF(S) and SUMIF(S) are rewritten for IronCalc instead:
    functions/not_equal.py)."""
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS, plain_text

    if not isinstance(node, tuple):
        return False
    if node[0] == "call":
        args = node[2]
        for i in CRITERIA_ARGUMENTS[node[1]](len(args)) if node[1] in _NOT_EQUAL_TAKEN else ():
            arg = args[i] if i < len(args) else None
            if arg and (arg[0] == "str" and arg[1].startswith("<>") and plain_text(arg[1][2:])
                        or arg[0] == "op" and arg[1] == "&" and arg[2] == ("str", "<>") and arg[3][0] == "ref"):
                return True
        return any(_not_equal_text(arg) for arg in args)
    return any(_not_equal_text(part) for part in node[1:] if isinstance(part, tuple))


def _skips_empty_text(node) -> bool:
    """Whether TEXTJOIN is asked to ignore empty values (ignore_empty not a literal FALSE or 0):
    Excel leaves out an empty text ("" typed or a formula's) as it does an empty cell (the
    idiom `TEXTJOIN(", ",TRUE,IF(A1:A9="x",B1:B9,""))` joins the matches alone); IronCalc
    0.9.1 leaves out only empty cells (`TEXTJOIN("-",TRUE,"a","","b")` is "a--b")."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call":
        if node[1] == "TEXTJOIN" and len(node[2]) > 1 and node[2][1] not in _EXACT:
            return True
        return any(_skips_empty_text(arg) for arg in node[2])
    return any(_skips_empty_text(part) for part in node[1:] if isinstance(part, tuple))


def area_watch(formula: str) -> Selected | None:
    """A legacy array formula over several cells that `select` does not take, watched for the
    cells beyond its result: Excel repeats a result of one row down its area and one of one
    column across it, and shows #N/A in the other cells beyond the result ("Guidelines and
    examples of array formulas"; ECMA-376 Part 4, single- and multi-cell formulas), where
    IronCalc 0.9.1 shows #VALUE! (measured: `{={1;2;3}}` over five cells, `{={1,2}}` over three
    rows). Ours in the calculations where a cell of the area shows #VALUE!, when the evaluator
    here has every function the formula calls (settle._fitted places the result); else None."""
    found = Selected(formula, watched=True, when_area=True)
    return found if _evaluable(found.parsed()) else None


def date_text_watch(formula: str) -> Selected | None:
    """A formula giving a one-cell reference to an operator or as a date function's date
    (date_text.readings), watched for the dates and times held there as text: ours in the
    calculations where one holds text, when the evaluator here has every function it calls; else
    None. `targets` plans it only where such a cell holds a date as text at load."""
    found = Selected(formula, watched=True, date_text=True)
    tree = found.parsed()
    if isinstance(tree, Unsupported):
        return None
    found.when_text = date_text.readings(tree)
    return found if found.when_text and _evaluable(tree, scratch=True) else None


def _evaluable(node, scratch: bool = False) -> bool:
    """Whether the evaluator here has every function a parse tree calls; `scratch`: counting the
    functions of one value it has IronCalc calculate in its scratch model (one_value.py)."""
    from shared.calc.corrections.dynamic.functions import FUNCTIONS, SPECIAL

    if isinstance(node, Unsupported):
        return False
    if isinstance(node, list):
        return all(_evaluable(item, scratch) for item in node)
    if not isinstance(node, tuple):
        return True
    if node[0] == "call" and node[1] not in FUNCTIONS and node[1] not in SPECIAL and not (
            scratch and (node[1] in one_value.ONE_VALUE or node[1] in one_value.PARTLY_ONE_VALUE)):
        return False
    return all(_evaluable(part, scratch) for part in node[1:] if isinstance(part, (tuple, list)))


# Functions taken in the calculations where IronCalc answers one of these errors where Excel
# does not (Selected.when_error): CONVERT with a unit IronCalc lacks (#N/A where Excel converts,
# classic.CONVERT); VALUE, DATEVALUE, TIMEVALUE and NUMBERVALUE of a text IronCalc cannot read
# (#VALUE! where Excel reads a date, a time or a number: number_text); the statistics of paired
# data given arrays of different shapes (#VALUE! where Excel pairs them), the covariances given
# an empty cell, text or a logical value (#N/A where Excel leaves the pair out) and any of them
# given an error among the values (IronCalc's error is not always Excel's: paired.py).
_READERS = ("VALUE", "DATEVALUE", "TIMEVALUE", "NUMBERVALUE")
_PAIRED = ("COVAR", "COVARIANCE.P", "COVARIANCE.S", "CORREL", "PEARSON", "RSQ", "SLOPE", "INTERCEPT",
           "STEYX", "FORECAST", "FORECAST.LINEAR")
WHEN_ERROR = {("CONVERT",): ("#N/A",), _READERS: ("#VALUE!",), _PAIRED: ("#VALUE!", "#N/A", "#DIV/0!", "#NUM!", "#REF!", "#NAME?", "#NULL!")}
# ARABIC and DECIMAL, taken where IronCalc answers #VALUE!: Excel reads any string of Roman digits
# (ARABIC("IIIIIIV") is -1) and answers #NUM! for a digit outside the radix (functions._arabic,
# _decimal, with the Excel-saved cells they follow)
_RADIX_TEXT_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:ARABIC|DECIMAL)\s*\(", re.IGNORECASE)
_WHEN_ERROR = tuple(
    (re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(map(re.escape, names)) + r")\s*\(", re.IGNORECASE), codes)
    for names, codes in WHEN_ERROR.items()
)


# Arithmetic over an array (SUMPRODUCT's arguments, an array formula): Excel reads each text as it
# reads a number typed into a cell, `"1,234"*1` 1234 ("Calculation operators and precedence in
# Excel", converting values in formulas). IronCalc 0.9.1 does in one value and through `--`, but
# over a range only plain numbers: `SUMPRODUCT(A1:A9*1)` is #VALUE! where a cell holds "1,234",
# "$1,000.50", "50%", "12:30", " 12 " or "3/4/2020" (measured). Such a formula is ours in the
# calculations where IronCalc answers #VALUE! (Selected.when_error).
_ARITHMETIC_OPERATORS = frozenset("+-*/^")
_ARITHMETIC = re.compile("[" + re.escape("".join(sorted(_ARITHMETIC_OPERATORS))) + "]")


def _arithmetic_of_array(node, inside: bool) -> bool:
    """Whether an operator `+ - * / ^` has an operand holding an array (or a defined name, which
    may be a range), inside SUMPRODUCT or anywhere in an array formula (`inside`)."""
    return _read_as_array(node, inside, lambda part: part[0] == "op" and part[1] in _ARITHMETIC_OPERATORS and any(
        isinstance(operand, tuple) and (operand[0] == "name" or _holds_array(operand)) for operand in part[2:4]))


# Functions that turn an error into a value: a #VALUE! of IronCalc's inside them never shows in
# the cell (`IFERROR(VALUE(A1),0)`), so the text they read is watched instead (trapped_readings)
_TRAPS = re.compile(r"(?<![A-Za-z0-9_.])(?:IFERROR|IFNA|ISERROR|ISERR|ISNUMBER|ISNA)\s*\(", re.IGNORECASE)


def trapped_readings(node, out: list | None = None) -> list:
    """The cells and names (of one cell) whose text VALUE, DATEVALUE, TIMEVALUE or NUMBERVALUE
    (without separators) reads in a parse tree: ours in a calculation where one holds a text
    (Selected.when_text), since IronCalc 0.9.1 answers #VALUE! for many forms of date Excel reads
    (number_text) and a function of _TRAPS would hide it."""
    out = [] if out is None else out
    if not isinstance(node, tuple):
        return out
    if node[0] == "call" and node[1] in _READERS and len(node[2]) == 1:
        argument = node[2][0][1] if node[2][0][0] == "at" else node[2][0]
        if argument[0] in ("ref", "name") and ":" not in argument[1]:
            out.append(argument)
    for part in node[1:]:
        if isinstance(part, (tuple, list)):
            for item in part if isinstance(part, list) else [part]:
                trapped_readings(item, out)
    return out


_SWITCH_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?SWITCH\s*\(", re.IGNORECASE)


# Text joined from values (`&`, CONCATENATE, CONCAT, TEXTJOIN): IronCalc 0.9.1 writes a number
# in it with up to 17 significant digits (`=""&(0.1+0.2)` is "0.30000000000000004") and never
# in E notation, where Excel writes 15 (`"0.3"`, values.general); such a cell is ours in the
# calculations where IronCalc's text shows a number Excel would write otherwise
# (settle.long_number).
_JOINS = re.compile(r"&|(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:CONCATENATE|CONCAT|TEXTJOIN)\s*\(", re.IGNORECASE)

# FIXED and DOLLAR: IronCalc 0.9.1 writes the binary value's digits, saturated at 2^64 - 1
# (`FIXED(1E+20,2)` "18,446,744,073,709,551,615.00", `FIXED(0.1+0.2,20)` "0.18446744073709551615"),
# where Excel writes 15 significant digits and zeros after them (formulas' Excel-saved test.xlsx
# TEXT!R18 "123,456,789,076,754,000,000"): ours in the calculations where IronCalc's text shows
# more digits (settle.long_number; text.py has FIXED and DOLLAR).
_FIXED_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:FIXED|DOLLAR)\s*\(", re.IGNORECASE)
# MOD of a divisor that is not a whole number: Excel answers the exact remainder, IronCalc 0.9.1
# number - divisor*INT(number/divisor), 0 or a tiny negative number where the quotient rounds up
# to a whole number (MOD(10,0.1) is 0.1 in Excel, 0 in IronCalc: functions._mod). A divisor
# written as such a number is always ours; one read from a cell, in the calculations where it
# holds such a number (`watched_values`). Whole divisors give both the same remainder.
_MOD_CALL = re.compile(r"(?<![A-Za-z0-9_.])MOD\s*\(", re.IGNORECASE)
# MOD(x,2), MOD(ROW(),3): a divisor written as a whole number, the same remainder in both; a
# formula whose every MOD is one is not parsed at load (a workbook may hold thousands)
_WHOLE_DIVISOR = re.compile(r"(?<![A-Za-z0-9_.])MOD\s*\((?:[^(),]|\([^()]*\))*,\s*[-+]?\d+\s*\)", re.IGNORECASE)
# Student's t, F, chi-squared, beta and gamma distributions where IronCalc 0.9.1 loses digits (right
# tails below about 1e-8, inverses, T.TEST, CHISQ.TEST, F.TEST), the hypergeometric one, whose
# coefficients overflow there, and the cumulative normal family and error functions, 1e-11 to
# 1e-10 off everywhere (distributions.py has the functions and the measurements).
# Always ours where the evaluator here has every function the formula calls; else IronCalc's.
_DISTRIBUTION_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(
        re.escape(name) for name in sorted(distributions.ROUTED, key=len, reverse=True)) + r")\s*\(",
    re.IGNORECASE,
)
# Discrete distributions (distributions.COUNTS): ours where a count they are given is large
_COUNT_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(
        re.escape(name) for name in sorted(distributions.COUNTS, key=len, reverse=True)) + r")\s*\(",
    re.IGNORECASE,
)
_CONSTANT_OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                       "/": lambda a, b: a / b if b else None}


def _constant(node) -> float | None:
    """The number an expression of number literals stands for (`1/24`, `-0.05`), or None."""
    if node[0] == "num":
        return node[1]
    if node[0] in ("neg", "pos"):
        x = _constant(node[1])
        return None if x is None else -x if node[0] == "neg" else x
    if node[0] == "op" and node[1] in _CONSTANT_OPERATORS:
        a, b = _constant(node[2]), _constant(node[3])
        return None if a is None or b is None else _CONSTANT_OPERATORS[node[1]](a, b)
    return None


# The arguments whose value decides, calculation by calculation, whether a cell is ours
# (Selected.when_value): by function, the test (settle.VALUE_TESTS), the argument positions, and
# whether an argument that is neither a number, a one-cell reference nor a name (an expression)
# makes the cell always ours. MOD's divisor stays IronCalc's there, as it was; a discrete
# distribution's count is ours, whatever it turns out to be.
_VALUE_WATCHES = {
    "MOD": ("fraction", (1,), False),
    **{name: ("large", positions, True) for name, positions in distributions.COUNTS.items()},
}


def watched_values(node, found: list | None = None) -> tuple[bool, list]:
    """Whether an argument of _VALUE_WATCHES is written as a number its test picks (or, where
    the watch says so, as an expression), which makes the cell always ours, and the (test,
    reference or name) pairs of those read from one cell."""
    from shared.calc.corrections.dynamic.settle import VALUE_TESTS

    found = [] if found is None else found
    always = False
    if isinstance(node, list):
        for item in node:
            always |= watched_values(item, found)[0]
    elif isinstance(node, tuple):
        if node[0] == "call" and node[1] in _VALUE_WATCHES:
            test, positions, expressions = _VALUE_WATCHES[node[1]]
            for i in positions:
                if i >= len(node[2]) or node[2][i] is None:
                    continue
                argument = node[2][i]
                constant = _constant(argument)
                if constant is not None:
                    always |= math.isfinite(constant) and VALUE_TESTS[test](("n", constant))
                elif argument[0] == "ref" and ":" not in argument[1] or argument[0] == "name":
                    found.append((test, argument))
                else:
                    always |= expressions
        for part in node[1:]:
            if isinstance(part, (tuple, list)):
                always |= watched_values(part, found)[0]
    return always, found


# Text functions given a number read it as text the same way (Microsoft: "Excel specifications
# and limits", 15 digits of precision): `LEN(0.1+0.2)` is 3 in Excel, 19 in IronCalc 0.9.1, and
# `LEFT(1/3,20)` "0.333333333333333". Such a cell is ours in the calculations where its text
# result shows a number Excel would write otherwise, or where a cell given directly to one of
# these functions holds a number whose text Excel writes otherwise (settle.long_value).
TEXT_OF_NUMBER = frozenset({
    "LEN", "LENB", "LEFT", "LEFTB", "RIGHT", "RIGHTB", "MID", "MIDB", "FIND", "FINDB", "SEARCH", "SEARCHB",
    "SUBSTITUTE", "REPLACE", "REPLACEB", "UPPER", "LOWER", "PROPER", "TRIM", "CLEAN", "REPT", "EXACT",
    "TEXTBEFORE", "TEXTAFTER",
})
_TEXT_OF_NUMBER_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(sorted(TEXT_OF_NUMBER, key=len, reverse=True)) + r")\s*\(",
    re.IGNORECASE,
)


def numbers_given_as_text(node, out: list | None = None) -> list:
    """The one-cell references and names given directly as an argument to a TEXT_OF_NUMBER
    function."""
    out = [] if out is None else out
    if isinstance(node, list):
        for item in node:
            numbers_given_as_text(item, out)
    elif isinstance(node, tuple):
        if node[0] == "call" and node[1] in TEXT_OF_NUMBER:
            out.extend(arg for arg in node[2] if isinstance(arg, tuple) and arg[0] in ("ref", "name"))
        for part in node[1:]:
            if isinstance(part, (tuple, list)):
                numbers_given_as_text(part, out)
    return out


_LOOKUP_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:[VH]?LOOKUP|MATCH)\s*\(", re.IGNORECASE)


def approximate_lookups(node, out: list | None = None) -> list[tuple]:
    """(lookup value, lookup range or array, whether a literal negative match_type) of the
    approximate VLOOKUP, HLOOKUP, MATCH (1 or -1) and LOOKUP calls in a parse tree:
    range_lookup or match_type absent or not a literal 0 or FALSE. IronCalc 0.9.1 answers them
    as Excel does over numbers sorted ascending, not otherwise: a text or logical lookup value
    among numbers finds the last number (Excel: #N/A), MATCH -1 over data not sorted descending
    the last item (Excel: #N/A), and over array constants of mixed or unsorted items it differs
    in 102 of the 543 lookups Excel saved in formulas' test.xlsx
    (lookup.approximate_position); a two-dimensional lookup_vector is #ERROR!."""
    out = [] if out is None else out
    if not isinstance(node, tuple):
        return out
    if node[0] == "call":
        name, args = node[1], node[2]
        flag = {"VLOOKUP": 3, "HLOOKUP": 3, "MATCH": 2}.get(name)
        if name in ("VLOOKUP", "HLOOKUP", "MATCH", "LOOKUP") and len(args) > 1 \
                and (flag is None or len(args) <= flag or args[flag] not in _EXACT):
            descending = name == "MATCH" and len(args) > 2 and args[2][0] == "neg"
            out.append((args[0][1] if args[0][0] == "at" else args[0], args[1], descending))
        for arg in args:
            approximate_lookups(arg, out)
        return out
    for part in node[1:]:
        if isinstance(part, tuple):
            approximate_lookups(part, out)
    return out


_EXACT = (("num", 0.0), ("bool", False))


def _computed(node) -> bool:
    """An array the formula calculates (`1/(A1:A9="x")`, `IF(A1:A9>0,B1:B9)`), not a range,
    a name or an array constant as written."""
    return isinstance(node, tuple) and node[0] not in ("ref", "name", "array") and _holds_array(node)


def _computed_from_spill(node) -> bool:
    """An array calculated from a spill (`D1#*10`, `_xlfn.ANCHORARRAY(D1)*10`), not the spill
    itself."""
    def reads_spill(part) -> bool:
        if not isinstance(part, tuple):
            return False
        if part[0] == "spill" or (part[0] == "call" and part[1] == "ANCHORARRAY"):
            return True
        return any(reads_spill(item) for piece in part[1:]
                   for item in (piece if isinstance(piece, list) else [piece]))

    return isinstance(node, tuple) and node[0] in ("op", "neg", "pos", "percent") and reads_spill(node)


def _computed_vectors(node) -> bool:
    """Whether LOOKUP is given a calculated lookup_vector or result_vector: Excel calculates the
    whole array there in any formula (its vectors take arrays; `=LOOKUP(2,1/(A1:A9="x"),B1:B9)`
    finds the last row holding "x" without Ctrl+Shift+Enter), IronCalc 0.9.1 one cell of it."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call":
        if node[1] == "LOOKUP" and any(_computed(arg) for arg in node[2][1:3]):
            return True
        return any(_computed_vectors(arg) for arg in node[2])
    return any(_computed_vectors(part) for part in node[1:] if isinstance(part, tuple))


# Functions of one value IronCalc 0.9.1 does not apply to each element of an array even in a
# legacy (Ctrl+Shift+Enter) array formula: it answers the first element's result for all of
# them, or FALSE for each, or #N/IMPL! (measured: {=ISNUMBER(B1:B4)} is FALSE four times for 1.4,
# "x", -3.6, TRUE, {=ISERROR(A1:A4)} FALSE four times with two errors among them;
# {=SUM(IF(ISNUMBER(B1:B3),B1:B3))} 0; ROUND, MOD, NOT alike; N and VALUE #N/IMPL! or #VALUE!;
# IFS over a range #VALUE!, SWITCH #N/A: pycel's logical.xlsx Logical!O26:O44, Switch!A44); and
# the other functions of one value it reads a range as one cell for (one_value.py: TRUNC,
# NORM.DIST, PMT, EDATE, ...), or applies to each cell where Excel answers #VALUE! (the
# Analysis ToolPak's). Given an array constant outside an array formula, IronCalc answers
# #N/IMPL! for them (`SUM(ROUND({1.2,2.7},0))`): such a formula is ours too (`select`).
# (ISNUMBER, ..., ROUND, MOD, NOT, N and VALUE are functions of one value IronCalc does not lift.)
NOT_LIFTED = frozenset({"IFS", "SWITCH"}) | one_value.NOT_LIFTED_BY_IRONCALC
# MATCH given several lookup values (`MATCH(A1:A9,A1:A9,0)`, one position for each) in an array
# formula: IronCalc 0.9.1 reads the range as the cell in the formula's row (#N/A or one position),
# which breaks the idioms that count distinct values (`SUM(IF(FREQUENCY(MATCH(...),MATCH(...))>0,1))`)
# and find the most frequent text (`INDEX(A1:A9,MODE(MATCH(A1:A9,A1:A9,0)))`)
_NOT_LIFTED_MENTION = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(re.escape(n) for n in sorted({*NOT_LIFTED, "MATCH"}, key=len, reverse=True))
    + r")\s*\(",
    re.IGNORECASE,
)
# Functions of a list of values that IronCalc 0.9.1 answers wrongly given an array it calculated
# (not a range or an array constant as written) in an array formula or beside an array constant
# (measured; Excel's pages: "If an array or reference argument contains text, logical values, or
# empty cells, those values are ignored"): COUNT counts none of its numbers (`{=COUNT(IF(A1:A9=
# "x",B1:B9))}` 0, `COUNT(SEARCH({"red","blue"},A1))` 0), AVERAGE, MEDIAN, GEOMEAN, HARMEAN,
# KURT and SKEW count the FALSE of an IF without its else as 0 (`{=AVERAGE(IF(A1:A9="x",
# B1:B9))}` averages over every row), PRODUCT answers #N/IMPL!. STDEV, VAR, MIN, MAX, SMALL,
# LARGE, PERCENTILE, ... are right and left to IronCalc; the ...A functions too (their pages
# say both that logical values in an array count and that they are ignored).
MISCOUNTED = frozenset({"COUNT", "AVERAGE", "MEDIAN", "GEOMEAN", "HARMEAN", "KURT", "SKEW", "SKEW.P", "PRODUCT"})
_MISCOUNTED_MENTION = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:" + "|".join(re.escape(n) for n in sorted(MISCOUNTED, key=len, reverse=True))
    + r")\s*\(",
    re.IGNORECASE,
)
# in a sheet's XML: an array formula or an array constant, and one of those functions
# (functions/layer.may_need_plan)
_LEGACY_HINT = re.compile(
    b"(?:" + b"|".join(re.escape(name.encode()) for name in sorted(NOT_LIFTED | MISCOUNTED, key=len, reverse=True))
    + rb")\("
)


def may_hold_legacy_arrays(sheet_xml_upper: bytes) -> bool:
    return (b'T="ARRAY"' in sheet_xml_upper or b"({" in sheet_xml_upper or b",{" in sheet_xml_upper) \
        and _LEGACY_HINT.search(sheet_xml_upper) is not None


def legacy_of_arrays(formula: str) -> bool:
    """Whether a formula applies a NOT_LIFTED function to a range or an array: in a legacy
    array formula, IronCalc 0.9.1 answers that wrongly."""
    return _not_lifted_of_array(_parsed(formula))


def _miscounted_of_array(node, ranges: bool = True) -> bool:
    """Whether a MISCOUNTED function is given an array calculated in the formula (through an
    operator or a function applied to each element), directly or as INDEX(array,0) hands it
    on (`COUNT(INDEX(1/(A1:A9="x"),0))`); `ranges` as for `_not_lifted_of_array`, and true
    in an argument that takes an array in any formula (ARRAY_ARGUMENTS: SUMPRODUCT's...)."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call" and node[1] in MISCOUNTED and any(
        arg[0] not in ("ref", "array", "name") and (_holds_array(arg, ranges) or _whole_index_of_array(arg))
        for arg in node[2]
    ):
        return True
    if node[0] == "call":
        taking = ARRAY_ARGUMENTS.get(node[1], ())
        return any(_miscounted_of_array(a, ranges or _takes_array(taking, i)) for i, a in enumerate(node[2]))
    return any(_miscounted_of_array(part, ranges) for part in node[1:] if isinstance(part, tuple))


def _whole_index_of_array(node) -> bool:
    """INDEX(array, 0) or INDEX(array,) of an array calculated in the formula: the whole array,
    the idiom that has Excel calculate an array without Ctrl+Shift+Enter."""
    if node[0] != "call" or node[1] != "INDEX" or len(node[2]) < 2 or node[2][1] not in (("num", 0.0), ("missing",)):
        return False
    return node[2][0][0] not in ("ref", "array", "name") and _holds_array(node[2][0])


def _not_lifted_of_array(node, ranges: bool = True) -> bool:
    """`ranges` False: only an array constant counts (outside an array formula, a range there
    is one cell)."""
    if not isinstance(node, tuple):  # a leaf, or the Unsupported of an unreadable formula
        return False
    if node[0] == "call" and node[1] == "MATCH" and _lifts_array(node[1], node[2], ranges):
        return True  # a position for each lookup value (_NOT_LIFTED_MENTION)
    if node[0] == "call" and node[1] in NOT_LIFTED and any(
        _holds_array(node[2][i], ranges) for i in one_value.lifted_positions(node[1], len(node[2]))
    ):
        return True
    parts = node[2] if node[0] == "call" else [p for p in node[1:] if isinstance(p, tuple)]
    return any(_not_lifted_of_array(part, ranges) for part in parts)


_LET_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?LET\s*\(", re.IGNORECASE)


def _lets_inlined(node):
    """A parse tree with each LET call written as its values and its calculation, each name it
    binds replaced by the value bound to it (`LET(x,A1:C1,CONCATENATE(x,"-"))`: CONCATENATE
    given A1:C1), to tell what its functions are given (select's tests, not evaluation)."""
    if isinstance(node, list):
        return [_lets_inlined(item) for item in node]
    if not isinstance(node, tuple):
        return node
    if node[0] == "call" and node[1] == "LET" and len(node[2]) % 2 == 1:
        args, bound, parts = node[2], {}, []
        for name, value in zip(args[:-1:2], args[1::2]):
            if not (isinstance(name, tuple) and name[0] == "name"):
                break
            value = _inlined(_lets_inlined(value), bound)
            bound[parse_bare(name[1])] = value
            parts.append(value)
        else:
            return ("call", "LET", [*parts, _inlined(_lets_inlined(args[-1]), bound)])
    return tuple(_lets_inlined(part) if isinstance(part, (tuple, list)) else part for part in node)


def _inlined(node, bound: dict):
    if isinstance(node, list):
        return [_inlined(item, bound) for item in node]
    if not isinstance(node, tuple):
        return node
    if node[0] == "name" and parse_bare(node[1]) in bound:
        return bound[parse_bare(node[1])]
    return tuple(_inlined(part, bound) if isinstance(part, (tuple, list)) else part for part in node)


_SUMPRODUCT = re.compile(r"(?<![A-Za-z0-9_.])SUMPRODUCT\s*\(", re.IGNORECASE)
# The arguments Excel calculates as arrays in any formula, without Ctrl+Shift+Enter ("all": every
# one): SUMPRODUCT's (ECMA-376 Part 1, 18.17.7, "array of numbers"), INDEX's array (its page:
# "If you set row_num or column_num to 0, INDEX returns the array of values for the entire column
# or row", the idiom MAX(INDEX((YEAR(A1:A9)=2024)*B1:B9,0))) and LOOKUP's vectors (its array form;
# the idiom LOOKUP(2,1/(A1:A9="x"),B1:B9) for the last match). A function of one value given a
# range there is applied to every cell, where IronCalc 0.9.1 intersects it (`YEAR(@A1:A9)`).
ARRAY_ARGUMENTS: dict[str, tuple | str] = {"SUMPRODUCT": "all", "INDEX": (0,), "LOOKUP": (1, 2)}
# (SUMPRODUCT has its own flags in `select`)
_ARRAY_ARGUMENT_CALL = re.compile(
    r"(?<![A-Za-z0-9_.])(?:" + "|".join(name for name in ARRAY_ARGUMENTS if name != "SUMPRODUCT") + r")\s*\(",
    re.IGNORECASE,
)


def _takes_array(taking: tuple | str, argument: int) -> bool:
    return taking == "all" or argument in taking


_CRITERIA_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:COUNTIFS?|SUMIFS?|AVERAGEIFS?)\s*\(", re.IGNORECASE)
# in a sheet's XML (uppercased): such a call with an array constant after it, in one formula
_CRITERIA_HINT = re.compile(rb"(?:COUNTIFS?|SUMIFS|AVERAGEIFS?)\([^<]*\{")
_NOT_EQUAL_HINT = re.compile(rb"(?:AVERAGEIFS?|MAXIFS|MINIFS)\([^<]*&LT;&GT;")


def may_hold_criteria_arrays(sheet_xml_upper: bytes) -> bool:
    """An array of criteria (_CRITERIA_HINT), or a criterion "<>..." given AVERAGEIF(S), MAXIFS
    or MINIFS (`_not_equal_text`), in a sheet's upper-cased XML."""
    return bool(_CRITERIA_HINT.search(sheet_xml_upper) or _NOT_EQUAL_HINT.search(sheet_xml_upper))


def criteria_of_arrays(formula: str) -> bool:
    """Whether COUNTIF(S), SUMIFS or AVERAGEIF(S) is given an array of criteria
    (`SUM(COUNTIF(A:A,{"x","y"}))`): IronCalc 0.9.1 answers 0 where Excel counts each. SUMIF
    alone is right in IronCalc (measured) and left to it."""
    return _criteria_of_array(_parsed((lifted(formula) if "@" in formula else None) or formula))


def _criteria_of_array(node) -> bool:
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS

    if not isinstance(node, tuple):  # a leaf, or the Unsupported of an unreadable formula
        return False
    if node[0] == "call":
        # (SUMIF IronCalc has right; MAXIFS and MINIFS given arrays of criteria are not measured)
        positions = CRITERIA_ARGUMENTS.get(node[1]) if node[1] not in ("SUMIF", "MAXIFS", "MINIFS") else None
        args = node[2]
        if positions and any(i < len(args) and _holds_array(args[i]) for i in positions(len(args))):
            return True
        return any(_criteria_of_array(a) for a in args)
    return any(_criteria_of_array(part) for part in node[1:] if isinstance(part, tuple))


_CHOOSE_OF_ARRAY = re.compile(r"(?<![A-Za-z0-9_.])CHOOSE\s*\(\s*\{", re.IGNORECASE)
# INDEX given an array constant of positions as the whole of an array formula (`{=INDEX(B1:B9,
# {1,2,3})}` spills the three items, Exceljet "Return array with INDEX function"; IronCalc
# 0.9.1: #N/IMPL!). Inside another function (`SUM(INDEX(B1:B9,{1,2,3}))`) legacy Excel passes
# on only the first item, and the engine's #N/IMPL! is named at upload.
_INDEX_OF_ARRAY = re.compile(r"^=?\s*INDEX\s*\([^{}]*?,\s*\{", re.IGNORECASE)


def _index_of_array(node) -> bool:
    """Whether a parse tree is INDEX with an array constant of several positions."""
    return isinstance(node, tuple) and node[0] == "call" and node[1] == "INDEX" and any(
        arg[0] == "array" and len(arg[1]) * len(arg[1][0]) > 1 for arg in node[2][1:3])


def sumproduct_of_arrays(formula: str) -> bool:
    """Whether IronCalc would read an array argument of SUMPRODUCT as one value: a range it
    intersects (`lifted`), or a function of one value given a range or an array there
    (`SUMPRODUCT(ROUND(B1:B9*1.5,0))`, #N/IMPL! in IronCalc 0.9.1)."""
    if "@" in formula and lifted(formula) is not None:
        return True
    if not _elementwise_call().search(formula):
        return False  # ranges and operators alone (SUMPRODUCT((A1:A9="x")*B1:B9)): not parsed
    return _elementwise_of_array(_parsed(formula), False)


@functools.lru_cache(maxsize=1)
def _elementwise_call() -> re.Pattern:
    from shared.calc.corrections.dynamic.functions import ELEMENTWISE

    names = "|".join(sorted((re.escape(n) for n in ELEMENTWISE | set(one_value.PARTLY_ONE_VALUE)), key=len, reverse=True))
    return re.compile(r"(?<![A-Za-z0-9_.])(?:" + names + r")\s*\(", re.IGNORECASE)


def _elementwise_of_array(node, inside: bool) -> bool:
    return _read_as_array(node, inside, lambda part: part[0] == "call" and _lifts_array(part[1], part[2]))


def _read_as_array(node, inside: bool, test) -> bool:
    """Whether `test` holds for a part of a parse tree that Excel calculates as an array: in an
    argument that takes one (ARRAY_ARGUMENTS), or anywhere when `inside` (an array formula)."""
    if not isinstance(node, tuple):
        return False
    if inside and test(node):
        return True
    if node[0] == "call":
        taking = ARRAY_ARGUMENTS.get(node[1], ())
        return any(_read_as_array(a, inside or _takes_array(taking, i), test) for i, a in enumerate(node[2]))
    return any(_read_as_array(part, inside, test) for part in node[1:] if isinstance(part, tuple))


def _holds_array(node, ranges: bool = True) -> bool:
    """A range of several cells or an array constant, through operators and functions of one
    value (not through SUM, INDEX, ..., which answer one value or a reference of their own)."""
    from shared.calc.corrections.dynamic.functions import ELEMENTWISE

    if not isinstance(node, tuple):
        return False
    kind = node[0]
    if kind == "ref":
        return ranges and ":" in node[1]
    if kind == "array":
        return len(node[1]) * len(node[1][0]) > 1 if node[1] else False
    if kind == "call":
        name, args = node[1], node[2]
        if name in _CONDITIONAL:  # IF(A1:A9>0,...), IFERROR(1/A1:A9,0): one answer per element
            return bool(args) and _holds_array(args[0], ranges)
        if name in ARRAY_RESULTS:  # an array formula's SEQUENCE(3), FILTER(...), ...
            return ranges
        if name in ("ROW", "COLUMN"):  # ROW(A1:A9) is {1;...;9}, ROW(INDIRECT("1:"&n)) too
            return ranges and bool(args) and (_holds_array(args[0], ranges) or args[0][0] == "call"
                                               and args[0][1] in ("OFFSET", "INDIRECT"))
        return _lifts_array(name, args, ranges)
    if kind in ("op", "neg", "pos", "percent"):
        return any(_holds_array(part, ranges) for part in node[1:] if isinstance(part, tuple))
    return False


def _lifts_array(name: str, args: list, ranges: bool = True) -> bool:
    """Whether a function applied to each element is given an array where it takes one value
    (`LARGE(B1:B9,ROW(1:3))` is three values, `LARGE(B1:B9,2)` one)."""
    from shared.calc.corrections.dynamic.functions import ELEMENTWISE

    if name in ELEMENTWISE:
        return any(_holds_array(a, ranges) for a in args)
    if name in one_value.PARTLY_ONE_VALUE:
        return any(_holds_array(args[i], ranges) for i in one_value.lifted_positions(name, len(args)))
    if name in ("MATCH", "XMATCH"):  # MATCH(B1:B9,{5,9},0): a position for each lookup value
        return bool(args) and _holds_array(args[0], ranges)
    return False


_REFERENCE_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:OFFSET|INDIRECT)\s*\(", re.IGNORECASE)


def _references_of_array(node) -> bool:
    """Whether OFFSET or INDIRECT is given an array (`SUBTOTAL(9,OFFSET(B1,ROW(1:5)-1,0))`, one
    reference per element): IronCalc 0.9.1 answers one value for it, the evaluator refuses it
    (functions._offset), so such a cell is flagged."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call":
        if node[1] in ("OFFSET", "INDIRECT") and any(_holds_array(arg) for arg in node[2][1:] if node[1] == "OFFSET") \
                or node[1] == "INDIRECT" and node[2] and _holds_array(node[2][0]):
            return True
        return any(_references_of_array(arg) for arg in node[2])
    return any(_references_of_array(part) for part in node[1:] if isinstance(part, tuple))


_CONDITIONAL = frozenset({"IF", "IFS", "IFERROR", "IFNA"})
# the FAMILY functions answering an array (a spill)
ARRAY_RESULTS = frozenset({
    "SEQUENCE", "RANDARRAY", "FILTER", "SORT", "SORTBY", "UNIQUE", "VSTACK", "HSTACK", "TAKE", "DROP",
    "EXPAND", "CHOOSECOLS", "CHOOSEROWS", "TOCOL", "TOROW", "WRAPROWS", "WRAPCOLS", "TEXTSPLIT", "MAP",
    "SCAN", "MAKEARRAY", "BYROW", "BYCOL",
})


def lifted(formula: str) -> str | None:
    """The formula (as IronCalc renders it) without the `@` IronCalc put in an argument that
    takes an array (ARRAY_ARGUMENTS), where Excel applies the function to every cell of the range
    (`SUMPRODUCT(--(YEAR(A1:A9)=2024))`, `MAX(INDEX((YEAR(A1:A9)=2024)*B1:B9,0))`); None when it
    has none (or does not tokenize)."""
    from shared.calc.corrections.dynamic.parse import _TOKEN, bare

    text = formula[1:] if formula.startswith("=") else formula
    # one frame per open bracket: [the arguments that take arrays (ARRAY_ARGUMENTS), argument]
    drop, frames, at, pending = [], [], 0, None
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            return None
        kind, value = match.lastgroup, match.group(0)
        if kind == "func":
            pending = bare(value)
        elif kind == "op" and value in ("(", "{"):
            frames.append([ARRAY_ARGUMENTS.get(pending, ()), 0])
            pending = None
        elif kind == "op" and value in (")", "}"):
            if frames:
                frames.pop()
        elif kind == "op" and value == "," and frames:
            frames[-1][1] += 1
        elif kind == "op" and value == "@" and any(_takes_array(taking, argument) for taking, argument in frames):
            drop.append(match.start())
        at = match.end()
    if not drop:
        return None
    dropped = set(drop)
    kept = [ch for i, ch in enumerate(text) if i not in dropped]
    return ("=" if formula.startswith("=") else "") + "".join(kept)


# --- the file's dynamic arrays ------------------------------------------------------------

_CELL = re.compile(rb'<c\b([^>]*)>\s*<f\b([^>]*)>')
_ATTR_R = re.compile(rb'\br="([A-Z]+)(\d+)"')
_REF = re.compile(rb'\bref="\$?([A-Z]+)\$?(\d+)(?::\$?([A-Z]+)\$?(\d+))?"')


def spill_areas(data: bytes) -> list[list[int]]:
    """[sheet index, row, col, bottom, right, dynamic] of every array formula of an xlsx;
    dynamic 1 for Excel 365's dynamic arrays (`t="array"` with cell metadata `cm`), 0 for
    legacy (CSE) array formulas."""
    from shared.calc.corrections.package import workbook_parts
    from shared.calc.xlsx.package import open_package

    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    found = []
    for index, (_, path) in enumerate(parts):
        xml = package.read(path)
        if b't="array"' not in xml:
            continue
        for match in _CELL.finditer(xml):
            cell, formula = match.group(1), match.group(2)
            if b't="array"' not in formula:
                continue
            where, area = _ATTR_R.search(cell), _REF.search(formula)
            if where is None or area is None:
                continue
            row, col = int(where.group(2)), column_number(where.group(1).decode())
            bottom = int(area.group(4) or area.group(2))
            right = column_number((area.group(3) or area.group(1)).decode())
            found.append([index, row, col, bottom, right, int(b"cm=" in cell)])
    return found


def clear_spill_tails(model, areas: list[list[int]]) -> None:
    """Empty the cells the file's dynamic arrays spilled into (their saved values)."""
    for sheet, row, col, bottom, right, is_dynamic in areas:
        if not is_dynamic:
            continue
        for r in range(row, bottom + 1):
            for c in range(col, right + 1):
                if (r, c) != (row, col) and model.get_cell_formula(sheet, r, c) is None:
                    model.clear_cell_contents(sheet, r, c)


# --- targets ------------------------------------------------------------------------------

@dataclass
class DynamicTarget:
    """A planned cell evaluated by this package (functions/layer.py's Target's counterpart)."""

    sheet: int
    row: int
    col: int
    formula: str
    spills: bool  # a dynamic-array formula in the file: an array result spills
    file_area: tuple[int, int] | None  # (bottom, right) of its spill in the file
    # False for a model stored before the file's array formulas were kept: an array result
    # cannot be placed (where it may spill is unknown), so it is reported
    areas_known: bool = True
    # True: always ours; False: ours only where IronCalc answers an error Excel does not have
    always: bool = True
    fixed: bool = False  # a legacy (CSE) array formula: its area is the file's, never spills
    inputs: list = field(default_factory=list)
    # (sheet, row, col) of XLOOKUP/XMATCH lookup values read from a cell: when one is blank in a
    # calculation, the cell is ours (IronCalc reads a blank lookup value as 0)
    when_blank: list = field(default_factory=list)
    # (sheet, row, col) of approximate lookups' lookup values read from a cell: when one holds a
    # text or a logical value in a calculation, the cell is ours (`approximate_lookups`)
    when_text: list = field(default_factory=list)
    # errors IronCalc answers that make the cell ours in a calculation (Selected.when_error)
    when_error: tuple = ()
    # it joins text: ours in a calculation where IronCalc's text shows a number as Excel does
    # not (Selected.when_digits)
    when_digits: bool = False
    # one call answering a complex number: ours where IronCalc writes a part as Excel does not
    # (Selected.when_complex)
    when_complex: bool = False
    # a legacy array formula's area: ours where a cell of it shows #VALUE! (Selected.when_area)
    when_area: bool = False
    # a dynamic array's spill: ours where a cell IronCalc spilled shows #VALUE! (Selected.when_spill)
    when_spill: bool = False
    # (test, (sheet, row, col)) of cells whose value decides: ours where the test picks the
    # value one holds (Selected.when_value)
    when_value: list = field(default_factory=list)

    @property
    def address(self) -> str:
        return cell_name(self.row, self.col)

    def check(self, tree) -> None:
        """Raise Unsupported at load when the formula cannot be read (``tree``: its parse, or
        the Unsupported the parser raised)."""
        if self.formula.startswith("{"):
            raise Unsupported("a legacy array formula")
        if isinstance(tree, Unsupported):
            raise tree


class Occupied:
    """Cells of the model that hold something a spill cannot cover: read once, from the model
    as loaded (before any calculation), without the file's spill areas."""

    def __init__(self, model, areas: list[list[int]]):
        self.cells: set[tuple[int, int, int]] = set()
        self.anchors: set[tuple[int, int, int]] = set()  # the file's dynamic arrays' anchors
        inside = set()
        for sheet, row, col, bottom, right, is_dynamic in areas:
            if not is_dynamic:
                continue
            self.anchors.add((sheet, row, col))
            for r in range(row, bottom + 1):
                for c in range(col, right + 1):
                    if (r, c) != (row, col):
                        inside.add((sheet, r, c))
        for key in model.get_all_cells():
            if key not in inside and model.get_cell_content(*key) != "":
                self.cells.add(key)


# IronCalc 0.9.1 gets these wrong in forms the corpus shows (module docstring; PERCENTOF of a
# range holding an error: #NUM! in Excel, 'MATH & TRIG'!W49 of formulas' test.xlsx; NUMBERVALUE
# with a group separator after the decimal one, #VALUE! in Excel, TEXT!AC28; the REGEX
# functions, whose optional arguments IronCalc lacks and whose patterns it reads with another
# flavour than Excel's PCRE2: regex_functions.py; TRIMRANGE given a fraction or an array for a
# mode, #VALUE! in Excel, LOOKUP!Z135:AC135, and the trim references IronCalc lacks; NOW, TODAY,
# RAND and RANDBETWEEN, which IronCalc answers from the machine's clock and dice, where a job's
# answer comes from its run context): always ours.
_ROUTED = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)*(?:LAMBDA|MAP|REDUCE|SCAN|MAKEARRAY|BYROW|BYCOL|ISOMITTED"
    r"|GROUPBY|PIVOTBY|PERCENTOF|TREND|LINEST|LOGEST|GROWTH|BAHTTEXT|NUMBERVALUE"
    r"|REGEXTEST|REGEXEXTRACT|REGEXREPLACE|TRIMRANGE|_TRO_LEADING|_TRO_TRAILING|_TRO_ALL"
    r"|NOW|TODAY|RAND|RANDBETWEEN)\s*\(|_xleta\.",
    re.IGNORECASE,
)
# COUNT and AVERAGE of a computed array: IronCalc counts none of its numbers (COUNT(TOCOL(...)) is 0)
_COUNTED = re.compile(r"(?<![A-Za-z0-9_.])(?:COUNT|COUNTA|COUNTBLANK|AVERAGE)\s*\(", re.IGNORECASE)
_SPILL_REF = re.compile(r"((?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?\$?([A-Za-z]{1,3})\$?(\d+)#")


def _parsed(formula: str):
    """The formula's parse tree, or the Unsupported the parser raised (kept, not raised: each
    use below decides what an unreadable formula means)."""
    from shared.calc.corrections.dynamic.parse import parse

    try:
        return parse(formula)
    except Unsupported as exc:
        return exc


def _cell_key(sheet_text: str | None, column: str, row: str, sheet: int, sheets_of) -> tuple[int, int, int] | None:
    """(sheet, row, col) of a reference's text parts: its sheet as written (quoted or not; None:
    the formula's own ``sheet``), column letters and row digits. None: no such sheet."""
    if sheet_text is not None:
        if sheet_text.startswith("'") and sheet_text.endswith("'"):
            sheet_text = sheet_text[1:-1].replace("''", "'")
        found = sheets_of(sheet_text)
        if found is None:
            return None
        sheet = found
    return sheet, int(row), column_number(column.upper())


def _always(formula: str, tree) -> bool:
    text = TEXT_LITERAL.sub('""', formula)
    if _ROUTED.search(text) or (_COUNTED.search(text) and _MENTION.search(text)):
        return True
    return not isinstance(tree, Unsupported) and _engine_misreads(tree)


def _one_row(node) -> bool:
    """An array constant or a range written as one row of several columns."""
    if node[0] == "array":
        return len(node[1]) == 1 and len(node[1][0]) > 1
    if node[0] == "ref":
        from shared.calc.corrections.dynamic.evaluate import _REF

        match = _REF.fullmatch(node[1])
        return bool(match and match.group("c2") and match.group("r1") == match.group("r2")
                    and match.group("c1").upper() != match.group("c2").upper())
    return False


def _engine_misreads(node) -> bool:
    """Argument forms IronCalc 0.9.1 answers wrongly without an error of its own (measured with
    the conformance cases): TAKE/DROP with the rows left out (#CALC!), TEXTBEFORE/TEXTAFTER with
    the instance left out before a match mode (#VALUE!) or given several texts (#VALUE!, as
    VALUETOTEXT: Excel answers for each), SORT and SORTBY with an
    argument left out (`SORT(A2:A9,,-1)`: #VALUE!), EXPAND with the rows or the columns left
    out (`EXPAND(A1:B1,,3)`: #VALUE!), XLOOKUP returning a whole row or column of a range
    (#VALUE!), XLOOKUP and XMATCH over an array constant (#N/A where Excel
    finds the item: formulas' test.xlsx LOOKUP!R162:AF197) or given several lookup values
    (`XLOOKUP({"a";"c"},A1:A5,B1:B5)`: #N/A, Excel one answer for each), CHOOSE given an
    array of indexes (`VLOOKUP(x,CHOOSE({1,2},B1:B9,A1:A9),2,FALSE)`: #N/A or #VALUE!)."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call":
        name, args = node[1], node[2]
        if name in ("TAKE", "DROP") and len(args) > 2 and args[1] == ("missing",):
            return True
        if name in ("TEXTBEFORE", "TEXTAFTER") and len(args) > 3 and args[2] == ("missing",):
            return True
        if name in ("TEXTBEFORE", "TEXTAFTER", "VALUETOTEXT") and args and _holds_array(args[0]):
            return True  # `TEXTBEFORE(A1:A9," ")`: #VALUE! in IronCalc, Excel one answer per cell
        if name in ("SORT", "SORTBY") and ("missing",) in args[1:]:
            return True
        if name == "SORTBY" and any(_one_row(by) for by in args[1::2]):
            return True  # sorting columns by a row: IronCalc leaves the array as it is
        if name == "EXPAND" and ("missing",) in args[1:3]:
            return True
        if name in ("XLOOKUP", "XMATCH") and len(args) > 1 and args[1][0] == "array":
            return True
        if name in ("XLOOKUP", "XMATCH") and any(_computed(arg) or _computed_from_spill(arg)
                                                 for arg in args[1:3 if name == "XLOOKUP" else 2]):
            return True  # `XLOOKUP(1,(A1:A9="x")*(B1:B9>4),C1:C9)`: #N/A in IronCalc; `D1#*10`: #VALUE!
        if name == "CHOOSE" and args and args[0][0] == "array":
            return True  # an array of indexes: IronCalc answers #VALUE!, Excel an array of choices
        if name in ("XLOOKUP", "XMATCH") and args and _holds_array(args[0]):
            return True  # several lookup values: IronCalc answers #N/A, Excel one answer each
        if name == "XLOOKUP" and len(args) > 2 and args[2][0] == "ref" and ":" in args[2][1]:
            from shared.calc.corrections.dynamic.evaluate import _REF

            match = _REF.fullmatch(args[2][1])
            if match and match.group("c2") and match.group("c1").upper() != match.group("c2").upper() \
                    and match.group("r1") != match.group("r2"):
                return True
        return any(_engine_misreads(a) for a in args)
    return any(_engine_misreads(part) for part in node[1:] if isinstance(part, tuple)) or any(
        _engine_misreads(item) for part in node[1:] if isinstance(part, list)
        for row in part for item in (row if isinstance(row, list) else [row])
    )


def _switch_values(args: list) -> list:
    """The values SWITCH compares its expression with (value1, value2, ...; not the results,
    nor the default)."""
    return [arg for i, arg in enumerate(args) if i % 2 == 1 and i < len(args) - 1]


def _empty_switch_value(node) -> bool:
    """Whether a parse tree calls SWITCH with an empty value to compare (`SWITCH(x,1,"a",,"b")`)."""
    if not isinstance(node, tuple):
        return False
    if node[0] == "call" and node[1] == "SWITCH" and ("missing",) in _switch_values(node[2]):
        return True
    return any(_empty_switch_value(item) for part in node[1:] if isinstance(part, (tuple, list))
               for item in (part if isinstance(part, list) else [part]))


_BLANK_READERS = re.compile(r"(?:X(?:LOOKUP|MATCH)|SWITCH)\s*\(", re.IGNORECASE)


def _blank_lookups(node, out: list) -> list:
    """The single-cell references XLOOKUP and XMATCH calls in a parsed formula take their lookup
    value from: a blank one is read as 0 by IronCalc 0.9.1 (XMATCH(A1,{-1.1,2.1,3.1,4.1},1) with
    A1 blank is 2, Excel's saved value #N/A: formulas' test.xlsx LOOKUP!W171; over cells too).
    And those SWITCH compares (its expression and values): IronCalc 0.9.1 matches a blank with
    FALSE and "", Excel only with 0 (functions._switch_key)."""
    if not isinstance(node, tuple):
        return out
    if node[0] == "call" and node[1] in ("XLOOKUP", "XMATCH") and node[2] and node[2][0][0] == "ref" \
            and ":" not in node[2][0][1]:
        out.append(node[2][0][1])
    if node[0] == "call" and node[1] == "SWITCH":
        compared = node[2][:1] + _switch_values(node[2])  # the expression and the values
        out += [arg[1] for arg in compared if arg[0] == "ref" and ":" not in arg[1]]
    for part in node[1:]:
        if isinstance(part, tuple):
            _blank_lookups(part, out)
        elif isinstance(part, list):
            for item in part:
                for x in (item if isinstance(item, list) else [item]):
                    _blank_lookups(x, out)
    return out


def _watched_cells(formula: str, tree, sheet: int, sheets_of) -> list[tuple[int, int, int]]:
    if isinstance(tree, Unsupported) or not _BLANK_READERS.search(formula):
        return []
    return _cells(_blank_lookups(tree, []), sheet, sheets_of)


def _reference(node, sheet: int, resolve) -> str | None:
    """A reference node's text, or the one cell a defined name stands for (`Sheet1!$B$2`, by
    `resolve(name, sheet)`; None for any other name)."""
    if node[0] == "ref":
        return node[1]
    text = resolve(node[1], sheet)
    return text.lstrip("=") if text and ":" not in text else None


def _referenced_cells(nodes: list, sheet: int, resolve, sheets_of) -> list[tuple[int, int, int]]:
    """(sheet, row, col) of the one-cell reference and name nodes of a formula of `sheet`."""
    return _cells([_reference(node, sheet, resolve) for node in nodes], sheet, sheets_of)


def _cells(references: list[str | None], sheet: int, sheets_of) -> list[tuple[int, int, int]]:
    """(sheet, row, col) of one-cell references as written in a formula of `sheet`."""
    from shared.calc.corrections.dynamic.evaluate import _REF

    cells = []
    for text in references:
        match = _REF.fullmatch(text) if text else None
        if match is None or not match.group("c1"):
            continue
        written = f"'{match.group('q')}'" if match.group("q") else match.group("p")
        key = _cell_key(written, match.group("c1"), match.group("r1"), sheet, sheets_of)
        if key is not None:
            cells.append(key)
    return cells


def _routed(found, trees: dict, sheets_of) -> set:
    """The cells always evaluated here: _always, and cells reading the spill of one of them."""
    routed = {(s, r, c) for s, r, c, f in found if _always(f, trees[(s, r, c)])}
    spill_readers = []
    for s, r, c, f in found:
        anchors = []
        for m in _SPILL_REF.finditer(TEXT_LITERAL.sub('""', f)):
            key = _cell_key(m.group(1)[:-1] if m.group(1) else None, m.group(2), m.group(3), s, sheets_of)
            if key is not None:
                anchors.append(key)
        if anchors:
            spill_readers.append(((s, r, c), anchors))
    grown = True
    while grown:
        grown = False
        for key, anchors in spill_readers:
            if key not in routed and any(a in routed for a in anchors):
                routed.add(key)
                grown = True
    return routed


def targets(model, selected: list[tuple[int, int, int, Selected]], areas: list[list[int]] | None, resolve,
            text_cells: frozenset = frozenset()):
    """(targets, [(sheet, row, col, reason)]) of the cells `select` took; `areas` None: not
    known (a model stored before they were kept); `resolve(name, sheet)` a defined name's
    formula text, or None; `text_cells` the cells holding a date as text (date_text_watch)."""
    known = areas is not None
    areas = areas or []
    by_anchor = {(s, r, c): (b, rt) for s, r, c, b, rt, d in areas}
    legacy = {(s, r, c) for s, r, c, b, rt, d in areas if not d}
    names = {p["name"].upper(): i for i, p in enumerate(model.get_worksheets_properties())}
    sheets_of = lambda name: names.get(name.upper())  # noqa: E731
    found = [(s, r, c, chosen.formula) for s, r, c, chosen in selected]
    chosen_of = {(s, r, c): chosen for s, r, c, chosen in selected}
    trees = {(s, r, c): chosen.parsed() for s, r, c, chosen in selected}
    routed = _routed(found, trees, sheets_of) | {(s, r, c) for s, r, c, chosen in selected if chosen.always}
    planned, refused = [], []
    for sheet, row, col, formula in found:
        key = (sheet, row, col)
        target = DynamicTarget(sheet, row, col, formula, key in by_anchor, by_anchor.get(key), known,
                               key in routed, key in legacy)
        if not target.always:
            target.when_blank = _watched_cells(formula, trees[key], sheet, sheets_of)
            target.when_text = _referenced_cells(chosen_of[key].when_text, sheet, resolve, sheets_of)
            target.when_error = chosen_of[key].when_error
            target.when_digits = chosen_of[key].when_digits
            target.when_complex = chosen_of[key].when_complex
            target.when_area = chosen_of[key].when_area
            target.when_spill = chosen_of[key].when_spill and target.spills
            target.when_value = [(test, cell) for test, node in chosen_of[key].when_value
                                 for cell in _referenced_cells([node], sheet, resolve, sheets_of)]
            if chosen_of[key].date_text:
                target.when_text = [cell for cell in target.when_text if cell in text_cells]
                if not target.when_text:
                    continue  # no date held as text where it reads: IronCalc's
        try:
            target.check(trees[key])
        except Unsupported as exc:
            if target.always:
                refused.append((sheet, row, col, str(exc)))
            continue
        planned.append(target)
    return planned, refused


def called(formula: str) -> str:
    """The FAMILY functions a formula calls, `BYROW/LAMBDA`, for flags."""
    names: list[str] = []
    for match in re.finditer(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(", TEXT_LITERAL.sub('""', formula or "")):
        name = re.sub(r"^(?:_xlfn\.|_xlws\.)+", "", match.group(1), flags=re.IGNORECASE).upper()
        if name in FAMILY and name not in names:
            names.append(name)
    return "/".join(names) or "dynamic array"


_NEWER = (frozenset(FAMILY) - frozenset(CLASSIC)) | {
    "CONCAT", "TEXTJOIN", "XOR", "IFS", "SWITCH", "MAXIFS", "MINIFS",
}
_WORKSHEET = {"SORT", "FILTER"}


def as_written(formula: str, row: int = 1, col: int = 1) -> str:
    """A formula as IronCalc holds it, with the prefixes Excel writes in a file (`_xlfn.`,
    `_xlfn._xlws.`, `_xlpm.` for LET and LAMBDA names) and R1C1 references as A1 (relative
    to the cell at row, col), "=" first."""
    from shared.calc.corrections.dynamic.parse import parse, tokenize

    text = formula.removeprefix("=")
    params: set[str] = set()

    def collect(node):
        if not isinstance(node, tuple):
            return
        if node[0] == "call" and node[1] in ("LET", "LAMBDA"):
            args = node[2]
            names = args[0:-1:2] if node[1] == "LET" else args[:-1]
            params.update(n[1].upper() for n in names if n[0] == "name")
        for part in node[1:]:
            if isinstance(part, tuple):
                collect(part)
            elif isinstance(part, list):
                for item in part:
                    if isinstance(item, list):
                        for x in item:
                            collect(x)
                    else:
                        collect(item)
    try:
        collect(parse(text))
        tokens = tokenize(text)
    except Unsupported:
        return "=" + text
    out = []
    for kind, value in tokens:
        upper = value.upper()
        if kind == "func" and upper in _NEWER:
            value = ("_xlfn._xlws." if upper in _WORKSHEET else "_xlfn.") + value
        elif kind == "name" and upper in params:
            value = "_xlpm." + value
        elif kind == "rc":
            from shared.calc.corrections.dynamic.evaluate import a1

            value = a1(value, row, col)
        elif kind == "str":
            value = '"' + value[1:-1] + '"'
        out.append(value)
    return "=" + "".join(out)
