"""Checking execute inputs before a job is queued: the input schema, then the input plan.

The plan (shared.calc.input_plan) runs here as a dry run on the version's stored named ranges,
with the same rules the worker's engine writes cells by, so an input the worker would refuse
(a wrong shape, text that is not a date for a date cell) is a 400 now, not a failed job later.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft7Validator, FormatChecker
from jsonschema.exceptions import SchemaError, best_match

from shared.calc.base import NamedRange
from shared.calc.input_plan import plan_inputs
from shared.errors import InputValidationError, Invalid

_FORMATS = FormatChecker()


def check_schema(schema: dict | None, label: str) -> None:
    """Refuse a schema that is not valid JSON Schema Draft 7."""
    if schema is None:
        return
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        raise Invalid(f"{label} is not a valid JSON Schema (Draft 7): {exc.message}") from exc


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft7Validator:
    return Draft7Validator(json.loads(schema_json), format_checker=_FORMATS)


def _where(error) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    return f" (at '{path}')" if path else ""


def validate(inputs: dict[str, Any], *, input_schema: dict | None, named_ranges: list[dict]) -> None:
    """Raise InputValidationError naming the first problem with ``inputs`` (nothing is written)."""
    if input_schema is not None:
        validator = _validator(json.dumps(input_schema, sort_keys=True))
        error = best_match(validator.iter_errors(inputs))
        if error is not None:
            raise InputValidationError(error.message + _where(error))
    plan_inputs(inputs, [NamedRange.from_dict(r) for r in named_ranges], date_inputs(input_schema))


def date_inputs(input_schema: dict | None) -> frozenset[str]:
    """Input names the schema declares as ``"format": "date"`` (or date-time)."""
    props = (input_schema or {}).get("properties") or {}
    return frozenset(
        name for name, spec in props.items() if isinstance(spec, dict) and spec.get("format") in ("date", "date-time")
    )
