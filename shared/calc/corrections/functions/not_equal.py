"""Criteria "not equal to a text" (`"<>Closed"`, `"<>"&B1`) in COUNTIF, COUNTIFS, SUMIF and SUMIFS.

Excel's `"<>x"` criterion keeps every cell that `"x"` does not find: blank cells, numbers and
logical values as well as other texts (Microsoft's COUNTIF page: `<>` is "not equal to";
`COUNTIF(A2:A5,"<>"&B4)` counts every cell but those equal to B4), so
`SUMIF(status,"<>Closed",amount)` adds the rows whose status is blank too. IronCalc 0.9.1 keeps
only the texts that differ (measured: a blank, 12, 0 and TRUE are all left out; an empty text a
formula answers is kept), a plausible wrong total. Its `"<>*"` keeps exactly the cells that are
not text (a blank, a number, a logical value: measured), so for a plain text x the cells Excel
keeps are IronCalc's `"<>x"` and its `"<>*"`, two sets that do not meet. The call is rewritten as
the sum of both at load: `COUNTIF(r,"<>x")` becomes `(COUNTIF(r,"<>x")+COUNTIF(r,"<>*"))`, and
with several such criteria in one COUNTIFS or SUMIFS every combination is added (two criteria,
four calls). A criterion built from one cell (`"<>"&B1`) adds its second call only while the
cell holds such a text (IF). IronCalc's own answer stands for `"<>"` alone, a number, a
logical value, an error code, text with wildcards (its `"<>c*"` keeps blanks and numbers
already) and text that reads as a date (locale).

AVERAGEIF, AVERAGEIFS, MAXIFS and MINIFS with such a criterion are evaluated by the layer
(dynamic/criteria.py, routed by `dynamic._not_equal_text`); which criterion text counts
as "plain" is criteria.plain_text; calls with more than MAX_SPLIT of
them, and such criteria in an array formula (not rewritten), are flagged at upload
(`unfixable_not_equal`), not answered.
"""

from __future__ import annotations

import itertools
import re

from shared.calc.corrections.formula_tokens import (
    calls,
    replace_call,
    rewrite_calls,
    text_and_cell,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.package import survey

# the functions rewritten here (their criteria positions: dynamic/criteria.CRITERIA_ARGUMENTS)
REWRITTEN = frozenset({"COUNTIF", "COUNTIFS", "SUMIF", "SUMIFS"})
MAX_SPLIT = 3
# in a sheet's upper-cased XML: one of these calls with "<>" after it in the same formula
MENTION = re.compile(rb"(?:COUNTIFS?|SUMIFS?)\([^<]*&LT;&GT;")
KEYWORDS = (b"&LT;&GT;",)
_ALL_TEXT = '"<>*"'
_CALL = re.compile(r"(?:COUNT|SUM)IFS?\(", re.IGNORECASE)
# a cell's text that, after "<>", is such a criterion (criteria.plain_text, at run time)
_PLAIN_CELL = (
    'AND(ISTEXT({c}),{c}<>"",ISERROR(--{c}),ISERROR(FIND("*",{c})),ISERROR(FIND("?",{c})),'
    'ISERROR(FIND("~",{c})),UPPER({c})<>"TRUE",UPPER({c})<>"FALSE",LEFT({c},1)<>"#")'
)


def _criteria_positions(name: str, count: int) -> list[int]:
    """Where a function rewritten here takes its criteria among `count` arguments (none for the
    others). The criteria rules are the evaluator's (imported when a "<>" criterion is met)."""
    if name not in REWRITTEN:
        return []
    from shared.calc.corrections.dynamic.criteria import CRITERIA_ARGUMENTS

    return [i for i in CRITERIA_ARGUMENTS[name](count) if i < count]


def _split(tokens, positions: list[int]) -> tuple[str, str | None] | None:
    """("literal", None) for a criterion `"<>x"` of plain text, ("cell", its reference) for
    `"<>"&cell`, None otherwise."""
    form = text_and_cell(tokens, positions)
    if form is None:
        return None
    _, text, cell = form
    if cell is None:
        from shared.calc.corrections.dynamic.criteria import plain_text

        return ("literal", None) if text.startswith("<>") and plain_text(text[2:]) else None
    return ("cell", cell) if text == "<>" else None


def _rewrite_call(tokens, values, name, opened, closed, args) -> bool:
    found = [(i, kind) for i in _criteria_positions(name, len(args))
             for kind in [_split(tokens, args[i])] if kind is not None]
    if not found or len(found) > MAX_SPLIT:
        return False
    terms = []
    for chosen in itertools.product((False, True), repeat=len(found)):
        text = list(values[opened:closed + 1])
        conditions = []
        for (i, (kind, cell)), other in zip(found, chosen):
            if not other:
                continue
            meaningful = without_spaces(tokens, args[i])
            text[meaningful[0] - opened] = _ALL_TEXT
            for position in meaningful[1:]:
                text[position - opened] = ""
            if kind == "cell":
                conditions.append(_PLAIN_CELL.format(c=cell))
        call = "".join(text)
        if conditions:
            call = f"IF({'AND(' + ','.join(conditions) + ')' if len(conditions) > 1 else conditions[0]},{call},0)"
        terms.append(call)
    replace_call(values, opened, closed, "(" + "+".join(terms) + ")")
    return True


def rewrite_formula(formula: str) -> str | None:
    """The formula with Excel's "<>text" criteria, or None when nothing changes."""
    if "<>" not in formula:
        return None
    return rewrite_calls(formula, _rewrite_call)


def correct_not_equal(model, data: bytes) -> list[Rewrite]:
    """Rewrite the COUNTIF/COUNTIFS/SUMIF/SUMIFS calls with such criteria; a workbook without
    "<>" in a formula costs one scan of its sheet XML."""
    candidates, arrays = survey(data, MENTION, KEYWORDS)
    if not candidates:
        return []
    return rewrite_cells(model, sorted(candidates - arrays), lambda formula, *_: rewrite_formula(formula))


def flag_reason(formula: str, array_formula: bool = False) -> str | None:
    """Why a formula's "<>text" criterion in COUNTIF(S) or SUMIF(S) cannot be calculated as
    Excel does (more than MAX_SPLIT in one call; an array formula, which is not rewritten), or
    None."""
    if "<>" not in formula or not _CALL.search(formula):  # "<>" alone is common: not tokenized
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    for name, _, _, args in calls(tokens):
        count = sum(1 for i in _criteria_positions(name, len(args)) if _split(tokens, args[i]) is not None)
        if count and (count > MAX_SPLIT or array_formula):
            return (f"{name} with a criterion \"<>text\": Excel keeps blank cells, numbers and logical values "
                    "there, IronCalc 0.9.1 only the other texts")
    return None


def unfixable_not_equal(book) -> list[tuple[object, str]]:
    """(cell, reason) of the formulas flag_reason names (array formulas included)."""
    found = []
    for cell in book.cells:
        if "<>" in cell.formula and not cell.array_area:  # an array formula once, at its own cell
            reason = flag_reason(cell.formula, cell.array_formula)
            if reason is not None:
                found.append((cell, reason))
    return found
