"""FORMULATEXT of a cell the correction layer rewrote: the formula as the user wrote it.

Excel's rule (Microsoft support, "FORMULATEXT function"): the formula of the referenced cell as
text. IronCalc answers the formula its model holds, which for a rewritten cell is the corrected
one (`=IF(AND(NOT(ISTEXT(A2)),...),DAY(A2))` for `=DAY(A2)`). So each FORMULATEXT whose
argument is a single cell the layer rewrote is itself rewritten, in the model only, to the text
of the upload's formula: the formula of a cell never changes in a job (jobs write values into
input cells, never formulas). The same holds for a cell the layer evaluates after IronCalc and
whose value it writes in as a constant (TEXT, TAN, FILTER, ...): without the rewrite its
FORMULATEXT would be #N/A.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import replace_call, rewrite_calls, tokenize, without_spaces
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.package import survey
from shared.calc.refs import column_number

MENTION = re.compile(rb"(?i)FORMULATEXT\(")
_CELL = re.compile(
    r"(?:(?:'(?P<quoted>(?:[^']|'')+)'|(?P<plain>[^'!\[\]:*?/\\,()\s]+))!)?\$?(?P<col>[A-Za-z]{1,3})\$?(?P<row>\d{1,7})"
)


def _shown(original: str) -> str:
    """The formula as FORMULATEXT shows it: "=" and IronCalc's text without its `@` marks of
    implicit intersection (the file has none)."""
    tokens = tokenize(original)
    if tokens is None:
        return "=" + original
    for token in tokens:
        if token.value.startswith("@") and token.type in (Token.FUNC, Token.OPERAND):
            token.value = token.value[1:]
    return "=" + "".join(t.value for t in tokens)


def _evaluated_after(model, sheet: int, row: int, col: int) -> str | None:
    """The formula of a cell the layer evaluates after IronCalc (a corrected function such as
    TEXT or TAN, or an Excel 365 array function), whose value it may write in as a constant:
    FORMULATEXT must read the formula from here, not from the cell."""
    from shared.calc.corrections import dynamic
    from shared.calc.corrections.functions import registry

    formula = model.get_cell_formula(sheet, row, col)
    if formula and (registry.mentions(formula) or dynamic.mentions(formula)):
        return formula.lstrip("=")
    return None


def keep_formula_text(model, data: bytes, rewrites: list[Rewrite]) -> list[Rewrite]:
    """Rewrite the FORMULATEXT calls that read a rewritten cell (module docstring); a workbook
    without FORMULATEXT costs one scan of its sheet XML."""
    candidates, arrays = survey(data, MENTION, (b"FORMULATEXT(",))
    if not candidates:
        return []
    index_of = {p["name"].lower(): i for i, p in enumerate(model.get_worksheets_properties())}
    originals = {(w.sheet, w.row, w.col): w.original for w in rewrites}

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        def handle(tokens, values, name, opened, closed, args) -> bool:
            if name != "FORMULATEXT" or len(args) != 1:
                return False
            meaningful = without_spaces(tokens, args[0])
            match = _CELL.fullmatch(tokens[meaningful[0]].value.lstrip("@")) if len(meaningful) == 1 else None
            if match is None:
                return False
            named = match.group("quoted")
            named = named.replace("''", "'") if named is not None else match.group("plain")
            target = sheet if named is None else index_of.get(named.lower())
            cell = (target, int(match.group("row")), column_number(match.group("col")))
            original = originals.get(cell)
            if original is None and target is not None:
                original = _evaluated_after(model, *cell)
            if original is None:
                return False
            replace_call(values, opened, closed, '"' + _shown(original).replace('"', '""') + '"')
            return True

        return rewrite_calls(formula, handle)

    return rewrite_cells(model, sorted(candidates - arrays), rewrite)
