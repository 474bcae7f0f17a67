"""Functions IronCalc lacks or gets wrong, evaluated by us after IronCalc (see layer.py).

`plan(model)` once per model at load (None: nothing to correct, nothing to pay),
`apply(model, plan)` after each `model.evaluate()`, `restore_formulas(xlsx, outcome)` on the
export, and each outcome's / plan's `flags`: cells we could not compute as Excel would.
"""

from shared.calc.corrections.functions.registry import CORRECTED
from shared.calc.corrections.functions.layer import (
    Flag,
    Outcome,
    Plan,
    apply,
    may_need_plan,
    plan,
    restore_formulas,
    uses_1904_dates,
)

NAMES = frozenset(CORRECTED) | {"_XLFN." + n for n in CORRECTED}

__all__ = [
    "NAMES", "Flag", "Outcome", "Plan", "apply", "may_need_plan", "plan", "restore_formulas",
    "uses_1904_dates",
]
