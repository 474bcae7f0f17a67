"""JSON Schemas that can neither reach out of the service nor hang it.

An administrator's input schema runs in the API at every execute, on a consumer's inputs, so:

- ``$ref`` may point only inside the schema (``#``, ``#/definitions/...``). A remote (``http:``,
  ``https:``) or ``file:`` reference is refused when the schema is saved, and the validator's
  ``referencing`` registry cannot retrieve anything, so a schema stored before this rule fails
  closed (nothing is fetched or read, nothing fetched is echoed).
- ``pattern``, ``patternProperties`` (and ``additionalProperties`` next to them) and
  ``"format": "regex"`` are evaluated by RE2 (``google-re2``), whose time is linear in the text's
  length, instead of Python's backtracking ``re``. A pattern RE2 cannot compile (backreferences,
  lookaround, repetitions over 1000) is refused when the schema is saved.
- ``uniqueItems`` compares items by a canonical key (linear) instead of pair by pair.
- One validation does work in proportion to the inputs it checks (keyword evaluations and
  references followed), so references that fan out (``anyOf`` of ``$ref``s, level after level)
  end in a clear refusal, not a frozen API.
"""

from __future__ import annotations

import contextvars
import functools
import json
from typing import Any

import re2
from jsonschema import Draft7Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is our 4xx, not a line on stderr


class UnsafeSchema(Exception):
    """The schema cannot be used; ``reason`` says why, for the administrator."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _re2_reason(error: BaseException) -> str:
    text = error.args[0] if error.args else str(error)
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


@functools.lru_cache(maxsize=1024)
def _schema_pattern(pattern: str):
    """A schema's pattern, compiled once (schemas are the administrators', checked when saved)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def _matches(pattern: str, text: str) -> bool:
    return _schema_pattern(pattern).search(text) is not None


# --- keywords evaluated with RE2 (same results and messages as jsonschema's own) ---------------


def _pattern(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, additional, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not any(_matches(p, k) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        extras.sort()
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(
                f"{', '.join(map(repr, extras))} {verb} not match any of the regexes: {', '.join(map(repr, sorted(patterns)))}"
            )
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, extras))} {verb} unexpected)")


def _canonical(value: Any) -> Any:
    """A hashable key equal for values JSON Schema calls equal (1 == 1.0, true != 1, key order ignored)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))
    return ("other", repr(value))


def _unique_items(validator, unique, instance, schema):
    if unique and validator.is_type(instance, "array"):
        seen: set = set()
        for item in instance:
            key = _canonical(item)
            if key in seen:
                yield ValidationError(f"{instance!r} has non-unique elements")
                return
            seen.add(key)


def _is_re2(instance: object) -> bool:
    if isinstance(instance, str):
        re2.compile(instance, _RE2_OPTIONS)  # a consumer's text: compiled, never cached
    return True


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    checker.checks("regex", raises=re2.error)(_is_re2)
    return checker


_FORMATS = _format_checker()

# The work one validation may do, in proportion to the inputs it checks (``first_error``). Without
# references a schema's work is at most its size times the inputs'; `$ref`s under `anyOf` can
# double it per level (a 20-level chain is a million evaluations for one value), and following a
# reference is the costliest step. A linear schema stays far below both: a few keywords and at
# most a reference or two per value.
STEPS_PER_VALUE, BASE_STEPS = 50, 100_000
REFS_PER_VALUE, BASE_REFS = 4, 10_000
_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("schema_budget", default=None)


class TooMuchWork(UnsafeSchema):
    """The validation went over its budget of keyword evaluations or references followed."""


def _counted(keyword, slot: int):
    @functools.wraps(keyword)
    def counted(validator, value, instance, schema):
        budget = _budget.get()
        if budget is not None:
            budget[slot] -= 1
            if budget[slot] < 0:
                what = "follows too many references" if slot else "evaluates too many keywords"
                raise TooMuchWork(f"checking these inputs against it {what}")
        return keyword(validator, value, instance, schema)

    return counted


_KEYWORDS = {
    **Draft7Validator.VALIDATORS,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}
SafeDraft7Validator = validators.extend(
    Draft7Validator,
    {name: _counted(keyword, 1 if name == "$ref" else 0) for name, keyword in _KEYWORDS.items()},
    format_checker=_FORMATS,
)

# The Draft 7 meta-schema, with "format": "regex" (every pattern and patternProperties key) asserted by RE2.
_META = Draft7Validator(Draft7Validator.META_SCHEMA, format_checker=_FORMATS)

# Knows only the schema it is given (and jsonschema's bundled meta-schemas): retrieves nothing.
_NOTHING_TO_RETRIEVE = Registry()


# --- checks --------------------------------------------------------------------------------------


def _reference_problem(schema: Any) -> str | None:
    root = DRAFT7.create_resource(schema)
    base = root.id() or ""
    resolver = _NOTHING_TO_RETRIEVE.with_resource(base, root).resolver(base_uri=base)

    def walk(resource, resolver) -> str | None:
        resolver = resolver.in_subresource(resource)
        contents = resource.contents
        if isinstance(contents, dict) and "$ref" in contents:
            ref = contents["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                return (
                    f"$ref {ref!r} points outside the schema; only references inside it "
                    "('#/definitions/...') are allowed, nothing is fetched or read"
                )
            try:
                resolver.lookup(ref)
            except Unresolvable:
                return f"$ref {ref!r} does not point to anything in the schema"
        for sub in resource.subresources():
            problem = walk(sub, resolver)
            if problem:
                return problem
        return None

    return walk(root, resolver)


def problem(schema: Any) -> str | None:
    """Why ``schema`` is not a Draft 7 schema this service will run, or None when it is.

    The schema must already be storable JSON (``shared.services.inputs.json_problem``): its depth
    bounds the recursion here.
    """
    error = best_match(_META.iter_errors(schema))
    if error is not None:
        if error.validator == "format" and error.validator_value == "regex":
            cause = _re2_reason(error.cause) if error.cause else "not a regular expression"
            return (
                f"pattern {error.instance!r} cannot be evaluated in linear time ({cause}); "
                "backreferences and lookaround are not supported"
            )
        return error.message
    reference = _reference_problem(schema)
    if reference:
        return reference
    try:
        # A schema whose references loop without end (`{"$ref": "#"}`) fails on any instance.
        for instance in (None, {}):
            first_error(_validator(schema), instance)
    except RecursionError:
        return "its references loop without end"
    except TooMuchWork:
        return "checking even an empty object against it takes too much work"
    return None


def _validator(schema: Any) -> Draft7Validator:
    return SafeDraft7Validator(schema, registry=_NOTHING_TO_RETRIEVE, format_checker=_FORMATS)


@functools.lru_cache(maxsize=256)
def _checked(schema_json: str) -> Draft7Validator | str:
    schema = json.loads(schema_json)
    return problem(schema) or _validator(schema)


def first_error(validator: Draft7Validator, instance: Any, *, values: int = 1) -> ValidationError | None:
    """The most relevant error of ``instance`` (made of ``values`` JSON values), within a budget
    of work in proportion to it (else TooMuchWork)."""
    token = _budget.set([BASE_STEPS + STEPS_PER_VALUE * values, BASE_REFS + REFS_PER_VALUE * values])
    try:
        return best_match(validator.iter_errors(instance))
    finally:
        _budget.reset(token)


def validator_for(schema: dict) -> Draft7Validator:
    """The validator for a stored schema; UnsafeSchema when it is one this service refuses."""
    checked = _checked(json.dumps(schema, sort_keys=True))
    if isinstance(checked, str):
        raise UnsafeSchema(checked)
    return checked
