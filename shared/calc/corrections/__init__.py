"""The correction layer between the engine interface and IronCalc: a defect we know about is
fixed once, here, in Python, and so applies to the upload check, the background check and every
job alike (they all load models through shared.calc.ironcalc.engine).

Mechanisms:

- Formula rewrites at model load (`correct_model`): a formula IronCalc gets wrong is replaced,
  in the model only, by one it calculates right where Excel's meaning allows it. Today:
  approximate-match VLOOKUP/HLOOKUP/MATCH/LOOKUP over whole columns or blank-tailed ranges are
  bounded to the cells that can hold values (lookups.py, model.py). The decision is made once
  per uploaded model and kept in its serialized form: a job pays nothing, and a workbook with no
  lookup costs one scan of its sheet XML at upload. The exported workbook shows the formulas as
  written (`restore_formulas`).
- Our own implementations of functions, evaluated after IronCalc (subpackage `functions`).
- Flags (`flagged_cells`): cells known to be wrong in an engine that no correction can fix are
  named in the version's fidelity report and the upload warnings.

Models serialized before this layer existed are used as they were stored (no formula text of
the upload is kept to tell their array formulas apart); a re-upload corrects them.
"""

from __future__ import annotations

from shared.calc.corrections.flags import flagged_cells
from shared.calc.corrections.model import (
    InputBox,
    ModelCorrections,
    Rewrite,
    adjust_to_inputs,
    bound_lookups,
)
from shared.calc.corrections.package import restore_formulas as _restore, survey

__all__ = [
    "InputBox", "ModelCorrections", "Rewrite", "adjust_to_inputs", "correct_model", "flagged_cells",
    "restore_formulas",
]


def correct_model(model, data: bytes, inputs: list[InputBox]) -> ModelCorrections:
    """Apply every formula rewrite to an IronCalc `model` freshly loaded from the xlsx `data`;
    `inputs` are the named input ranges (sheet index, top, left, bottom, right)."""
    candidates, arrays = survey(data)
    if not candidates:
        return ModelCorrections()
    return bound_lookups(model, inputs, sorted(candidates - arrays))


def restore_formulas(xlsx: bytes, corrections: ModelCorrections) -> bytes:
    """An exported workbook with the rewritten formulas shown as the user wrote them."""
    if not corrections:
        return xlsx
    return _restore(xlsx, {(w.sheet, w.row, w.col): w.original for w in corrections.rewrites})
