"""PRODUCT, CONCAT and TEXTJOIN given an array constant.

IronCalc 0.9.1 answers #N/IMPL! for an array constant among their arguments (`PRODUCT({2,3})`,
`CONCAT({"a","b"})`, `TEXTJOIN(",",TRUE,{1,2})`, measured), which IFERROR would turn into a
plausible value. Microsoft's pages give the rules that make the array's elements ordinary
arguments: PRODUCT multiplies "only numbers in the array" (PRODUCT function page); CONCAT and
TEXTJOIN join the elements of an array as they join separate text arguments, row by row (CONCAT
and TEXTJOIN pages). So each array constant of literals among those arguments is written out as
its elements at load: PRODUCT keeps the numbers, CONCAT and TEXTJOIN every element (TEXTJOIN's
delimiter and ignore_empty stay as they are). AVERAGEA answers #N/IMPL! the same way
(`AVERAGEA({10,7,9,2,"Not available"})`, measured); its page says "array or reference arguments
that contain text evaluate as 0", so a number is kept, a text element becomes 0 and an error
stays; an array holding a logical value is left as it is (the page states the rule for
arguments, not for an array's elements). An array formula is left alone.
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.model import Rewrite
from shared.calc.corrections.package import rewrite_formulas

FUNCTIONS = {"PRODUCT": 0, "CONCAT": 0, "TEXTJOIN": 2, "AVERAGEA": 0}  # the first argument that may be an array
MENTION = re.compile(rb"(?:PRODUCT|CONCAT|TEXTJOIN|AVERAGEA)\(")
KEYWORDS = (b"PRODUCT(", b"CONCAT(", b"TEXTJOIN(", b"AVERAGEA(")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(PRODUCT|CONCAT|TEXTJOIN|AVERAGEA)\s*\(", re.IGNORECASE)
_ELEMENT = re.compile(
    r'\s*("(?:[^"]|"")*"|TRUE|FALSE|[+-]?(?:\d+\.?\d*|\.\d+)(?:[Ee][+-]?\d+)?|#(?:NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A))\s*',
    re.IGNORECASE,
)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[Ee][+-]?\d+)?")


def _arguments(text: str, start: int) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of the call whose list begins at text[start]."""
    spans, depth, begin = [], 0, start
    for index in range(start, len(text)):
        ch = text[index]
        if ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                spans.append((begin, index))
                return spans
            depth -= 1
        elif ch == "," and depth == 0:
            spans.append((begin, index))
            begin = index + 1
    return None


def elements(constant: str) -> list[str] | None:
    """The literals of an array constant `{1,"a";TRUE,2}` row by row, or None when it is not one."""
    inner = constant.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        return None
    found, position, body = [], 0, inner[1:-1]
    while position <= len(body):
        match = _ELEMENT.match(body, position)
        if match is None:
            return None
        found.append(match.group(1))
        position = match.end()
        if position == len(body):
            return found
        if body[position] not in ",;":
            return None
        position += 1
    return None


def expanded(formula: str) -> str | None:
    """The formula with the array constants among those functions' arguments written out, or
    None when there is none to write out."""
    if "{" not in formula:
        return None
    blank = TEXT_LITERAL.sub(lambda m: '"' + "_" * (len(m.group()) - 2) + '"', formula)
    edits = []
    for match in _CALL.finditer(blank):
        name = match.group(1).upper()
        spans = _arguments(blank, match.end())
        if spans is None:
            continue
        for number, (start, end) in enumerate(spans):
            if number < FUNCTIONS[name] or "{" not in blank[start:end]:
                continue
            items = elements(formula[start:end])
            if items is None:
                continue
            if name == "PRODUCT":
                items = [item for item in items if _NUMBER.fullmatch(item) or item.startswith("#")]
                if not items:
                    continue  # nothing to multiply from it: left as it is
            elif name == "AVERAGEA":
                if any(item.upper() in ("TRUE", "FALSE") for item in items):
                    continue
                items = ["0" if item.startswith('"') else item for item in items]
            edits.append((start, end, ",".join(items)))
    if not edits:
        return None
    for start, end, text in sorted(edits, reverse=True):
        formula = formula[:start] + text + formula[end:]
    return formula


def correct_array_constants(model, data: bytes) -> list[Rewrite]:
    """Rewrite the cells giving those functions an array constant; a workbook without them costs
    one scan of its sheet XML."""
    return rewrite_formulas(model, data, MENTION, KEYWORDS, expanded)
