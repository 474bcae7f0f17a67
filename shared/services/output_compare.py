"""Comparing a job's outputs with expected ones, output by output, under a tolerance.

One rule for test cases, shadow replays and anything else that asks "did this output move?":

- Numbers (and numbers inside ranges) are *identical* when equal, *within* tolerance when
  ``|got - expected| <= absolute`` or ``|got - expected| <= relative * |expected|`` (either
  bound suffices; a bound left out is not applied), *changed* otherwise.
- Text (dates come back as ISO text), booleans, errors (``"#N/A"``), nulls and shapes are exact:
  identical or changed, never within tolerance. ``True`` is not the number 1.
- A range (a list, or a list of rows) is compared cell by cell; its verdict is the worst of its
  cells, its difference the largest numeric one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["identical", "within", "changed"]
_RANK = {"identical": 0, "within": 1, "changed": 2}


@dataclass(frozen=True)
class Tolerance:
    """How far a number may move and still pass: absolute, relative (a fraction), or neither."""

    absolute: float | None = None
    relative: float | None = None

    @classmethod
    def exact(cls) -> "Tolerance":
        return cls()


@dataclass(frozen=True)
class Comparison:
    verdict: Verdict
    difference: float | None = None  # got - expected for a number; the largest |diff| for a range

    @property
    def passed(self) -> bool:
        return self.verdict != "changed"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare_scalar(expected: Any, got: Any, tolerance: Tolerance) -> Comparison:
    if _is_number(expected) and _is_number(got):
        if expected == got:
            return Comparison("identical", 0.0)
        if math.isnan(expected) or math.isnan(got):
            return Comparison("changed", None)
        diff = float(got) - float(expected)
        within = (tolerance.absolute is not None and abs(diff) <= tolerance.absolute) or (
            tolerance.relative is not None and abs(diff) <= tolerance.relative * abs(expected)
        )
        return Comparison("within" if within else "changed", diff)
    same = type(expected) is type(got) and expected == got
    return Comparison("identical" if same else "changed", None)


def compare(expected: Any, got: Any, tolerance: Tolerance = Tolerance()) -> Comparison:
    """One output's expected value against the value a job returned."""
    if isinstance(expected, list) or isinstance(got, list):
        if not (isinstance(expected, list) and isinstance(got, list)) or len(expected) != len(got):
            return Comparison("changed", None)
        worst: Verdict = "identical"
        largest: float | None = None
        for want, have in zip(expected, got):
            part = compare(want, have, tolerance)
            if _RANK[part.verdict] > _RANK[worst]:
                worst = part.verdict
            if part.difference is not None:
                largest = abs(part.difference) if largest is None else max(largest, abs(part.difference))
        return Comparison(worst, largest)
    return _compare_scalar(expected, got, tolerance)


def compare_outputs(
    expected: dict[str, Any], got: dict[str, Any], tolerances: dict[str, Tolerance] | None = None,
) -> dict[str, Comparison]:
    """Every expected output compared; an output missing from `got` is changed."""
    tolerances = tolerances or {}
    result: dict[str, Comparison] = {}
    for name, want in expected.items():
        if name not in got:
            result[name] = Comparison("changed", None)
            continue
        result[name] = compare(want, got[name], tolerances.get(name, Tolerance()))
    return result
