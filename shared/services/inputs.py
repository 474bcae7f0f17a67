"""Checking execute inputs before a job is queued: the input schema, then the ranges' shapes."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from jsonschema import Draft7Validator, FormatChecker
from jsonschema.exceptions import SchemaError, best_match

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


def _shape_problem(name: str, rng: dict, value: Any) -> str | None:
    rows, cols = rng["rows"], rng["cols"]
    if isinstance(value, dict):
        return f"'{name}' expects {'a single value' if rows * cols == 1 else 'a list'}, not an object"
    if isinstance(value, float) and not math.isfinite(value):
        return f"'{name}' must be a finite number"
    if rows * cols == 1:
        return f"'{name}' expects a single value, not a list" if isinstance(value, list) else None
    if value is None:
        return None  # clears the whole range
    if not isinstance(value, list):
        return f"'{name}' expects a list of {rows}x{cols} values"
    flat = rows == 1 or cols == 1
    if flat and all(not isinstance(v, list) for v in value):
        if len(value) > rows * cols:
            return f"'{name}' holds at most {rows * cols} values, got {len(value)}"
        return None
    if len(value) > rows:
        return f"'{name}' holds at most {rows} rows, got {len(value)}"
    for row in value:
        if not isinstance(row, list):
            return f"'{name}' expects a list of rows"
        if len(row) > cols:
            return f"'{name}' rows hold at most {cols} values, got {len(row)}"
        if any(isinstance(v, (list, dict)) for v in row):
            return f"'{name}' cells take single values"
    return None


def validate(inputs: dict[str, Any], *, input_schema: dict | None, named_ranges: list[dict]) -> None:
    """Raise InputValidationError naming the first problem with ``inputs``."""
    if input_schema is not None:
        validator = _validator(json.dumps(input_schema, sort_keys=True))
        error = best_match(validator.iter_errors(inputs))
        if error is not None:
            raise InputValidationError(error.message + _where(error))
    ranges = {r["name"].lower(): r for r in named_ranges if r["kind"] == "input"}
    for key, value in inputs.items():
        rng = ranges.get(key.lower())
        if rng is None:
            continue
        problem = _shape_problem(key, rng, value)
        if problem:
            raise InputValidationError(problem)


def date_inputs(input_schema: dict | None) -> frozenset[str]:
    """Input names the schema declares as ``"format": "date"`` (or date-time)."""
    props = (input_schema or {}).get("properties") or {}
    return frozenset(
        name for name, spec in props.items() if isinstance(spec, dict) and spec.get("format") in ("date", "date-time")
    )
