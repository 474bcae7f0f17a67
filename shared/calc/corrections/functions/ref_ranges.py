"""A range between deleted references, `#REF!:#REF!`, as the #REF! it stands for.

Excel writes `#REF!` where a reference was deleted, and a range whose ends were both deleted
(`SUM(#REF!:#REF!)`) is a #REF! error ("How to correct a #REF! error", support.microsoft.com).
IronCalc 0.9.1 and formulas answer #VALUE! for such a range (measured), which IFERROR would turn
into a plausible value; both answer #REF! for a lone `#REF!` argument. So each `#REF!:#REF!`
outside text literals is written as `#REF!` at load. An array formula is left alone.
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.corrections.model import Rewrite
from shared.calc.corrections.package import rewrite_formulas

MENTION = re.compile(rb"#REF!\s*:\s*#REF!")
KEYWORDS = (b"#REF!",)
_RANGE = re.compile(r"(?<![!A-Za-z0-9_.'])#REF!\s*:\s*#REF!", re.IGNORECASE)


def collapsed(formula: str) -> str | None:
    """The formula with each range of deleted references as `#REF!`, or None when it has none."""
    if "#REF!" not in formula.upper():
        return None
    pieces, last, changed = [], 0, False
    for text in (*TEXT_LITERAL.finditer(formula), None):
        end = text.start() if text is not None else len(formula)
        outside, count = _RANGE.subn("#REF!", formula[last:end])
        changed |= count > 0
        pieces.append(outside)
        if text is not None:
            pieces.append(text.group(0))
            last = text.end()
    return "".join(pieces) if changed else None


def correct_ref_ranges(model, data: bytes) -> list[Rewrite]:
    """Rewrite the cells holding a range of deleted references; a workbook without `#REF!` in a
    formula costs one scan of its sheet XML."""
    return rewrite_formulas(model, data, MENTION, KEYWORDS, collapsed)
