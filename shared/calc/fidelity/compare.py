"""Comparing Excel's cached value with an engine's, and showing values in a report.

Numbers match within a relative tolerance of 1e-9, text and booleans exactly, errors by their
code; an engine's empty result reads as 0 or "" as Excel shows it.
"""

from __future__ import annotations

import math
from typing import Any

from shared.calc.values import CellValue

REL_TOL = 1e-9
# Below this magnitude a difference is floating-point noise Excel itself rounds away
# (Excel shows 0 where an engine computes 1e-17 for 0.1+0.2-0.3).
ABS_TOL = 1e-12


def values_match(expected: CellValue, actual: CellValue) -> bool:
    """Excel's cached value against an engine's, by the corpus rules."""
    kind, want = expected
    got_kind, got = actual
    if got_kind == "empty":  # an empty result reads as 0 or "" in Excel
        got_kind, got = ("n", 0.0) if kind == "n" else ("s", "")
    if kind != got_kind:
        return False
    if kind == "n":
        return math.isclose(want, got, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return want == got


def display(value: CellValue | None) -> Any:
    """A value as the report shows it: numbers, text, booleans, error codes, null."""
    if value is None:
        return None
    kind, raw = value
    if kind == "n":
        if math.isfinite(raw) and raw.is_integer() and abs(raw) < 2**53:
            return int(raw)
        return raw if math.isfinite(raw) else str(raw)
    return raw
