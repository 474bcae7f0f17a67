"""CONVERT as Excel answers it, rewritten at model load where IronCalc 0.9.1 differs.

Excel's rules (Microsoft support, "CONVERT function"):

- Temperatures convert by their scales' offsets: `CONVERT(68,"F","C")` is 20 (the page's
  example), Celsius is kelvin less 273.15. IronCalc 0.9.1 subtracts 273.5 on the way to Celsius
  ("C" or "cel", from every temperature unit, Celsius itself included): 19.65 for the page's
  example, -273.5 for `CONVERT(0,"K","C")` (measured for every pair of C, cel, F, fah, K, kel,
  Rank and Reau; conversions to any other unit are right). The rewrite converts to kelvin,
  which IronCalc gets right, and subtracts 273.15: `CONVERT(x,f,"C")` becomes
  `(CONVERT(x,f,"K")-273.15)`; a unit not a temperature stays #N/A. Where the target unit is a
  cell, the choice is made when the job runs:
  `IF(OR(EXACT(t,"C"),EXACT(t,"cel")),CONVERT(x,f,"K")-273.15,CONVERT(x,f,t))` (unit names are
  case-sensitive in Excel).
- "If number is non-numeric, CONVERT returns the #VALUE! error value": a logical value is not a
  number there (Excel-saved formulas/test.xlsx ENGINEERING!Y16, `CONVERT(J16,"C","F")` with J16
  TRUE, is #VALUE!; a number typed as text, I16 "3.6", converts), while IronCalc 0.9.1 reads
  TRUE as 1. A literal TRUE or FALSE makes the call `#VALUE!`; a number argument given by one
  cell is guarded, `IF(ISLOGICAL(x),#VALUE!,...)`.

Only where the number and the target unit are one value each (a constant, one cell, or
constants and cells joined by operators, repeated as written); ranges, names and calls are left
to IronCalc. Array formulas are left alone, as by every rewrite of the layer.
"""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import one_cell, pure, replace_call, rewrite_calls, without_spaces
from shared.calc.corrections.model import Rewrite, rewrite_cells

MENTION = re.compile(rb"(?i)CONVERT\(")
KEYWORDS = (b"CONVERT(",)
CELSIUS = ("C", "cel")
_KELVIN_OFFSET = "273.15"
_LITERALS = frozenset({Token.NUMBER, Token.TEXT, Token.LOGICAL})


def _logical(tokens: list[Token], positions: list[int]) -> bool:
    kept = without_spaces(tokens, positions)
    return len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND and tokens[kept[0]].subtype == Token.LOGICAL


def _text_literal(tokens: list[Token], positions: list[int]) -> str | None:
    kept = without_spaces(tokens, positions)
    if len(kept) == 1 and tokens[kept[0]].type == Token.OPERAND and tokens[kept[0]].subtype == Token.TEXT:
        return tokens[kept[0]].value[1:-1].replace('""', '"')
    return None


def _convert(tokens, values, name, opened, closed, args) -> bool:
    if name != "CONVERT" or len(args) != 3 or not all(args):
        return False
    if _logical(tokens, args[0]):
        replace_call(values, opened, closed, "#VALUE!")
        return True
    x, unit_from, unit_to = ("".join(values[i] for i in arg).strip() for arg in args)
    prefix = values[opened]  # CONVERT( as written
    to_kelvin = f"{prefix}{x},{unit_from},\"K\")-{_KELVIN_OFFSET}"
    target = _text_literal(tokens, args[2])
    if target is not None:
        if target not in CELSIUS:
            text = None
        else:
            text = f"({to_kelvin})"
    elif all(pure(tokens, args[i], _LITERALS) for i in (2, 0)):
        celsius = ",".join(f'EXACT({unit_to},"{unit}")' for unit in CELSIUS)
        text = f"IF(OR({celsius}),{to_kelvin},{prefix}{x},{unit_from},{unit_to}))"
    else:
        text = None
    if one_cell(tokens, args[0]):
        call = text if text is not None else "".join(values[opened:closed + 1])
        text = f"IF(ISLOGICAL({x}),#VALUE!,{call})"
    if text is None:
        return False
    replace_call(values, opened, closed, text)
    return True


def rewrite_formula(formula: str) -> str | None:
    """The formula with Excel's CONVERT rules (module docstring), or None when nothing changes."""
    return rewrite_calls(formula, _convert)


def correct_units(model, cells: list[tuple[int, int, int]]) -> list[Rewrite]:
    """Rewrite, in `model`, the CONVERT calls of `cells` (sheet index, row, col; array formulas
    left out by the caller). Returns what changed."""
    return rewrite_cells(model, cells, lambda formula, *_: rewrite_formula(formula))
