"""Checking execute inputs before a job is queued: what can be stored, the input schema, then the input plan.

Whatever execute accepts must be storable on SQLite and PostgreSQL and returned as JSON by the
job's GET and its webhook, so the inputs are refused first when they could not be: numbers that
are not finite (``NaN``, ``Infinity``: not JSON, RFC 8259), lone UTF-16 surrogates and NUL
characters (PostgreSQL refuses ``\\u0000``), nesting deeper than ``MAX_DEPTH``, more keys or
bytes than the settings allow. The same storability rule applies to the schemas an
administrator saves (``check_schema``), which must also be safe to run (``schema_safety``).

The plan (shared.calc.input_plan) runs here as a dry run on the version's stored named ranges,
with the same rules the worker's engine writes cells by, so an input the worker would refuse
(a wrong shape, text that is not a date for a date cell) is a 400 now, not a failed job later.
"""

from __future__ import annotations

import json
import math
from typing import Any

from referencing.exceptions import Unresolvable

from shared.calc.base import NamedRange
from shared.calc.input_plan import plan_inputs
from shared.config import get_settings
from shared.errors import InputValidationError, Invalid, PayloadTooLarge
from shared.services import schema_safety

# Objects and arrays inside one another, the inputs object itself counting as 1. Named-range
# values need 3 (inputs, rows, cells); this leaves room for schemas and unmapped keys while
# keeping every reader's recursion (jsonschema, the encoders, the presenters) far from its limit.
MAX_DEPTH = 64


def json_problem(value: Any, *, max_keys: int | None = None) -> str | None:
    """Why ``value`` cannot be stored and returned as JSON everywhere, or None when it can.

    Iterative (no recursion), and stops at the first problem. The answer never quotes the
    offending text itself (it could not be returned either), only where it is.
    """
    return _scan(value, max_keys)[0]


def _scan(value: Any, max_keys: int | None) -> tuple[str | None, int]:
    """``json_problem``'s answer, and how many JSON values were looked at."""
    keys = values = 0
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        values += 1
        if isinstance(item, (dict, list)) and depth > MAX_DEPTH:
            return f"nesting deeper than {MAX_DEPTH} levels{_at(path)}", values
        if isinstance(item, dict):
            keys += len(item)
            if max_keys is not None and keys > max_keys:
                return f"more than {max_keys} keys, nested objects included", values
            for key, child in item.items():
                problem = _text_problem(key) if isinstance(key, str) else "is not text"
                if problem:
                    return f"a key{_at(path)} {problem}", values
                stack.append((child, depth + 1, (*path, key)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, (*path, str(i))) for i, child in enumerate(item))
        elif isinstance(item, str):
            problem = _text_problem(item)
            if problem:
                return f"the text{_at(path)} {problem}", values
        elif isinstance(item, float):
            if not math.isfinite(item):
                spelled = "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
                return f"{spelled}{_at(path)} is not a JSON number: numbers must be finite (RFC 8259)", values
        elif not (item is None or isinstance(item, (bool, int))):
            return f"a value that is not JSON{_at(path)}", values
    return None, values


def _at(path: tuple[str, ...]) -> str:
    if not path:
        return ""
    shown = "/".join(path[:4]) + ("/..." if len(path) > 4 else "")
    return f" at '{shown}'"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate (like \\ud800), which is not Unicode text"
    return None


def check_schema(schema: dict | None, label: str) -> None:
    """Refuse a schema that is not valid JSON Schema Draft 7, cannot be stored, or is not safe to run."""
    if schema is None:
        return
    stored = json_problem(schema)
    if stored:
        raise Invalid(f"{label} cannot be stored: {stored}")
    problem = schema_safety.problem(schema)
    if problem:
        raise Invalid(f"{label} is not a valid JSON Schema (Draft 7): {problem}")


def check_storable(inputs: dict[str, Any]) -> int:
    """Refuse inputs over the size or key limits, or that could not be stored and returned as JSON;
    the number of JSON values they hold otherwise."""
    settings = get_settings()
    problem, values = _scan(inputs, settings.max_input_keys)
    if problem:
        raise InputValidationError(problem)
    size = len(json.dumps(inputs, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > settings.max_input_bytes:
        raise PayloadTooLarge(
            f"The inputs are {size} bytes as JSON; the limit is {settings.max_input_bytes} bytes"
        )
    return values


def _where(error) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    return f" (at '{path}')" if path else ""


def validate(inputs: dict[str, Any], *, input_schema: dict | None, named_ranges: list[dict]) -> None:
    """Raise InputValidationError naming the first problem with ``inputs`` (nothing is written)."""
    values = check_storable(inputs)
    if input_schema is not None:
        error = _schema_error(inputs, input_schema, values)
        if error is not None:
            raise InputValidationError(error.message + _where(error))
    plan_inputs(inputs, [NamedRange.from_dict(r) for r in named_ranges], date_inputs(input_schema))


def _schema_error(inputs: dict[str, Any], input_schema: dict, values: int):
    # A schema stored before the schema rules (a remote $ref, a backreference) is refused here
    # as the administrator's to correct; nothing is fetched, read or run with backtracking.
    try:
        return schema_safety.first_error(schema_safety.validator_for(input_schema), inputs, values=values)
    except (schema_safety.UnsafeSchema, Unresolvable, RecursionError) as exc:
        reason = exc.reason if isinstance(exc, schema_safety.UnsafeSchema) else "its references cannot be followed"
        raise InputValidationError(
            f"the engine's input_schema cannot be used ({reason}); an administrator must correct it"
        ) from None


def date_inputs(input_schema: dict | None) -> frozenset[str]:
    """Input names the schema declares as ``"format": "date"`` (or date-time)."""
    props = (input_schema or {}).get("properties") or {}
    return frozenset(
        name for name, spec in props.items() if isinstance(spec, dict) and spec.get("format") in ("date", "date-time")
    )
