"""Cells calling a function the correction layer cannot compute as Excel would, flagged at
upload (flags.py): in the version's fidelity report and warnings, whether or not the file
carries Excel's values.

- STDEV, VAR, DEVSQ, AVEDEV, SUMSQ, KURT... given typed text that may read as a number or a
  date ("50%", "1/2/2020"): the rule and the reason live in arguments.py.
- GETPIVOTDATA(data_field, pivot_table, [field1, item1], ...): the answer is read from a pivot
  table's cache (Microsoft's "GETPIVOTDATA function" page), which neither engine reads; IronCalc
  0.9.1 answers #NAME? (measured). Cell values alone cannot rebuild it (the pivot's fields,
  filters and summary function live in the pivot cache definition), so it is flagged.
- COUNT and AVERAGE given an array: "If an argument is an array or reference, only numbers in
  that array or reference are counted" (COUNT and AVERAGE pages). IronCalc 0.9.1 answers 0 for
  COUNT of any array, constant or computed (COUNT({1,2,"a",TRUE}): Excel 2;
  {=COUNT(IF(A1:A4>15,A1:A4))} over 10, 20, 30, 40: Excel 3), and AVERAGE counts the array's
  logical values ({=AVERAGE(IF(A1:A4>15,A1:A4))}: 22.5, Excel 30; AVERAGE({1,2,TRUE}): 1.333,
  Excel 1.5) (measured). Flagged: COUNT with an array constant or, in an array formula (CSE or
  a dynamic array: t="array" in the package), with a computed argument; AVERAGE with an array
  constant holding TRUE or FALSE or, in an array formula, with an IF(...) argument (the IF's
  FALSE for the rows it leaves out). An array constant of literals outside an array formula is
  rewritten at load (arguments.py), not flagged. References, names and typed values are read
  right. Outside an array formula a computed argument is one value (implicit intersection),
  read alike.
"""

from __future__ import annotations

import re

from shared.calc.corrections.arguments import array_numbers, typed_text_reason
from shared.calc.corrections.functions.subtotal import call_arguments

_STRING = re.compile(r'"(?:[^"]|"")*"')
_PIVOT = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?GETPIVOTDATA\s*\(", re.IGNORECASE)
_STATISTIC = re.compile(r"(?<![A-Za-z0-9_.])(AVERAGE|COUNT)\s*\(", re.IGNORECASE)
# An argument read as it is: a reference or range (sheet-qualified or not), a name, a literal.
_PLAIN = re.compile(
    r"\s*(?:(?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?[$A-Za-z0-9_.]+(?::[$A-Za-z0-9_.]+)?\s*"
    r"|\s*[+-]?[0-9.]+(?:[eE][+-]?\d+)?\s*|\s*\"\"\s*|\s*"
)
_IF = re.compile(r"\s*IF\s*\(", re.IGNORECASE)
_LOGICAL = re.compile(r"(?<![A-Za-z0-9_.])(?:TRUE|FALSE)(?![A-Za-z0-9_.(])", re.IGNORECASE)

PIVOT_REASON = (
    "GETPIVOTDATA reads a pivot table's cache, which is not calculated from cell values: "
    "IronCalc 0.9.1 answers #NAME?"
)
COUNT_REASON = (
    "COUNT given an array: Excel counts the array's numbers, IronCalc 0.9.1 answers 0"
)
AVERAGE_REASON = (
    "AVERAGE given an array holding logical values: Excel ignores them, IronCalc 0.9.1 counts "
    "them (TRUE 1, FALSE 0)"
)


def _statistic_reason(function: str, arguments: list[str], array_formula: bool) -> str | None:
    for argument in arguments:
        constant = argument.strip().startswith("{")
        if constant and not array_formula and array_numbers(argument) is not None:
            continue  # an array constant of literals: rewritten at load (arguments.py)
        if function == "COUNT":
            if constant or (array_formula and not _PLAIN.fullmatch(argument)):
                return COUNT_REASON
        elif (constant and _LOGICAL.search(argument)) or (array_formula and _IF.match(argument)):
            return AVERAGE_REASON
    return None


def reasons(formula: str, array_formula: bool = False) -> list[str]:
    """Why a formula cannot be computed as Excel would ([] when it can)."""
    text = _STRING.sub('""', formula)
    found = []
    typed = typed_text_reason(formula)
    if typed is not None:
        found.append(typed)
    if _PIVOT.search(text):
        found.append(PIVOT_REASON)
    for match in _STATISTIC.finditer(text):
        arguments = call_arguments(text, match.end())
        reason = _statistic_reason(match.group(1).upper(), arguments or [], array_formula)
        if reason is not None and reason not in found:
            found.append(reason)
    return found


def unfixable_functions(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells the layer cannot compute as Excel would;
    a cell an array formula fills is its formula's cell's business."""
    found = []
    for cell in book.cells:
        if cell.array_area:
            continue
        found_reasons = reasons(cell.formula, cell.array_formula)
        if found_reasons:
            found.append((cell, "; ".join(found_reasons)))
    return found
