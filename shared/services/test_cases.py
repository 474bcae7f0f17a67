"""An engine's test cases: inputs and the outputs they must give, each output within its tolerance.

A case belongs to the engine, not to a version, so every version uploaded afterwards is held to
it (shared/services/test_runs.py). Cases are made one at a time, from a completed job (its inputs
and outputs become the case), or imported in bulk from CSV or JSON lines (all or nothing: a file
with one bad row adds no case, and the message names the row).
"""

from __future__ import annotations

import csv
import io
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from shared.db.models import JobStatus, TestCase
from shared.db.types import utcnow
from shared.errors import Invalid, NotFound
from shared.repositories import test_cases as repo
from shared.services import admin_jobs, engines

CASE_NOT_FOUND = "Test case not found"
NUL_REFUSED = "Text may not contain NUL characters"  # PostgreSQL stores none
MAX_CASES_PER_ENGINE = 1000
EXPECTED_PREFIX, TOLERANCE_PREFIX, NAME_COLUMN = "expected.", "tolerance.", "case.name"
# Excel's error values: compared exactly, as text.
EXCEL_ERRORS = {"#N/A", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#NULL!", "#SPILL!", "#CALC!", "#GETTING_DATA"}


@dataclass
class CaseFields:
    """A case as given (API body, CSV row, JSON line), before it is checked."""

    name: str | None
    inputs: Any
    expected: Any
    tolerances: Any = None
    enabled: bool = True


def _check_tolerances(tolerances: Any, expected: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    if tolerances is None:
        return {}
    if not isinstance(tolerances, dict):
        raise Invalid("tolerances must be an object: output name -> {absolute, relative}")
    checked = {}
    for output, bounds in tolerances.items():
        if output not in expected:
            raise Invalid(f"tolerance given for '{output}', which is not an expected output")
        if not isinstance(bounds, dict) or not set(bounds) <= {"absolute", "relative"}:
            raise Invalid(f"tolerance of '{output}' must be an object with 'absolute' and/or 'relative'")
        clean: dict[str, float | None] = {"absolute": None, "relative": None}
        for key, value in bounds.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise Invalid(f"tolerance {key} of '{output}' must be a number of zero or more")
            clean[key] = float(value)
        checked[output] = clean
    return checked


def _checked(fields: CaseFields, default_name: str) -> dict[str, Any]:
    """The columns of a valid case; Invalid naming the first problem otherwise."""
    name = (fields.name if fields.name is not None else default_name).strip()
    if not name or len(name) > 255:
        raise Invalid("name must be 1 to 255 characters")
    if not isinstance(fields.inputs, dict):
        raise Invalid("inputs must be an object: input name -> value")
    if not isinstance(fields.expected, dict) or not fields.expected:
        raise Invalid("expected must be an object naming at least one output")
    if not isinstance(fields.enabled, bool):
        raise Invalid("enabled must be true or false")
    return dict(name=name, inputs=fields.inputs, expected=fields.expected,
                tolerances=_check_tolerances(fields.tolerances, fields.expected), enabled=fields.enabled)


def _room_for(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, adding: int) -> None:
    have = repo.count_cases(session, tenant_id=tenant_id, engine_id=engine_id)
    if have + adding > MAX_CASES_PER_ENGINE:
        raise Invalid(f"An engine has at most {MAX_CASES_PER_ENGINE} test cases (it has {have})")


def _default_name(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, offset: int = 0) -> str:
    return f"Case {repo.count_cases(session, tenant_id=tenant_id, engine_id=engine_id) + offset + 1}"


def list_for_engine(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID) -> list[TestCase]:
    """The engine's test cases, oldest first."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    return repo.list_cases(session, tenant_id=tenant_id, engine_id=engine_id)


def get(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, case_id: uuid.UUID) -> TestCase:
    """One test case of this tenant's engine; NotFound otherwise."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    case = repo.get_case(session, tenant_id=tenant_id, engine_id=engine_id, case_id=case_id)
    if case is None:
        raise NotFound(CASE_NOT_FOUND)
    return case


def create(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, fields: CaseFields,
           source_job_id: uuid.UUID | None = None) -> TestCase:
    """Add one test case to the engine."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    _room_for(session, tenant_id=tenant_id, engine_id=engine_id, adding=1)
    values = _checked(fields, _default_name(session, tenant_id=tenant_id, engine_id=engine_id))
    return repo.add_case(session, TestCase(tenant_id=tenant_id, engine_id=engine_id, source_job_id=source_job_id, **values))


def create_from_job(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, job_id: uuid.UUID,
                    name: str | None = None, tolerances: dict[str, Any] | None = None) -> TestCase:
    """A test case from one of the engine's completed jobs: its inputs, and its outputs as expected."""
    job = admin_jobs.get(session, tenant_id=tenant_id, engine_id=engine_id, job_id=job_id)
    if job.status != JobStatus.COMPLETED or not job.outputs:
        raise Invalid("Only a completed job with outputs can become a test case")
    default = f"Job {str(job.id)[:8]} on version {job.version}"
    return create(session, tenant_id=tenant_id, engine_id=engine_id, source_job_id=job.id,
                  fields=CaseFields(name=name or default, inputs=job.inputs or {}, expected=job.outputs, tolerances=tolerances))


def update(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, case_id: uuid.UUID, **changes: Any) -> TestCase:
    """Change a case's name, inputs, expected outputs, tolerances or enabled flag; keys left out are kept."""
    unknown = changes.keys() - {"name", "inputs", "expected", "tolerances", "enabled"}
    if unknown:
        raise TypeError(f"not a test case field: {', '.join(sorted(unknown))}")
    case = get(session, tenant_id=tenant_id, engine_id=engine_id, case_id=case_id)
    merged = CaseFields(
        name=changes.get("name", case.name), inputs=changes.get("inputs", case.inputs),
        expected=changes.get("expected", case.expected),
        # Tolerances of outputs no longer expected go with them.
        tolerances=changes.get("tolerances", {k: v for k, v in case.tolerances.items() if k in changes.get("expected", case.expected)}),
        enabled=changes.get("enabled", case.enabled),
    )
    for key, value in _checked(merged, case.name).items():
        setattr(case, key, value)
    case.updated_at = utcnow()
    session.flush()
    return case


def delete(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, case_id: uuid.UUID) -> TestCase:
    """Remove a test case (the runs that used it keep their results)."""
    case = get(session, tenant_id=tenant_id, engine_id=engine_id, case_id=case_id)
    repo.delete_case(session, tenant_id=tenant_id, case_id=case.id)
    return case


# --- bulk import ---------------------------------------------------------------------------------


def import_cases(session: Session, *, tenant_id: uuid.UUID, engine_id: uuid.UUID, text: str, kind: str) -> list[TestCase]:
    """Add every case of a CSV (``kind`` "csv") or JSON-lines ("ndjson") document, or none."""
    engines.get(session, tenant_id=tenant_id, engine_id=engine_id)
    if "\x00" in text:
        raise Invalid(NUL_REFUSED)
    try:
        parsed = parse_csv(text) if kind == "csv" else parse_ndjson(text)
    except csv.Error as exc:
        raise Invalid(f"The CSV file cannot be read: {exc}") from None
    if not parsed:
        raise Invalid("The file holds no test case")
    _room_for(session, tenant_id=tenant_id, engine_id=engine_id, adding=len(parsed))
    rows = []
    for index, (where, fields) in enumerate(parsed):
        try:
            values = _checked(fields, _default_name(session, tenant_id=tenant_id, engine_id=engine_id, offset=index))
        except Invalid as exc:
            raise Invalid(f"{where}: {exc.message}") from None
        rows.append(TestCase(tenant_id=tenant_id, engine_id=engine_id, **values))
    return [repo.add_case(session, row) for row in rows]


def parse_ndjson(text: str) -> list[tuple[str, CaseFields]]:
    """One case per non-blank line: {"name", "inputs", "expected", "tolerances", "enabled"}."""
    cases = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"Line {number}"
        try:
            item = json.loads(line, parse_constant=_refuse_constant)
        except ValueError:
            raise Invalid(f"{where}: not a JSON object") from None
        if not isinstance(item, dict):
            raise Invalid(f"{where}: not a JSON object")
        unknown = set(item) - {"name", "inputs", "expected", "tolerances", "enabled"}
        if unknown:
            raise Invalid(f"{where}: unknown field {', '.join(sorted(unknown))}")
        cases.append((where, CaseFields(name=item.get("name"), inputs=item.get("inputs", {}), expected=item.get("expected"),
                                        tolerances=item.get("tolerances"), enabled=item.get("enabled", True))))
    return cases


def _refuse_constant(name: str):
    raise ValueError(name)


def parse_csv(text: str) -> list[tuple[str, CaseFields]]:
    """One case per row after the header. Columns: input names; ``expected.<output>``;
    optionally ``tolerance.<output>.absolute`` / ``.relative`` and ``case.name``."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(reader, None)
    if not header:
        raise Invalid("The CSV file is empty")
    header = [h.strip() for h in header]
    if not any(h.startswith(EXPECTED_PREFIX) and len(h) > len(EXPECTED_PREFIX) for h in header):
        raise Invalid("The CSV header names no expected output (a column 'expected.<output name>')")
    if len(set(header)) != len(header):
        raise Invalid("The CSV header names a column twice")
    cases = []
    for number, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        where = f"Row {number}"
        if len(row) != len(header):
            raise Invalid(f"{where}: {len(row)} cells for {len(header)} columns")
        name, inputs, expected, tolerances = None, {}, {}, {}
        for column, cell in zip(header, row):
            if column == NAME_COLUMN:
                name = cell
            elif cell.strip() == "":
                continue  # an input left out, an output not checked by this case
            elif column.startswith(EXPECTED_PREFIX):
                expected[column[len(EXPECTED_PREFIX):]] = _cell_value(cell, where, column)
            elif column.startswith(TOLERANCE_PREFIX):
                output, _, bound = column[len(TOLERANCE_PREFIX):].rpartition(".")
                if bound not in ("absolute", "relative") or not output:
                    raise Invalid(f"Column '{column}': a tolerance column is tolerance.<output>.absolute or .relative")
                tolerances.setdefault(output, {})[bound] = _cell_value(cell, where, column)
            else:
                inputs[column] = _cell_value(cell, where, column)
        cases.append((where, CaseFields(name=name or None, inputs=inputs, expected=expected, tolerances=tolerances)))
    return cases


def _cell_value(cell: str, where: str, column: str) -> Any:
    """A CSV cell as a JSON value: a number, TRUE/FALSE, an Excel error, JSON for a range
    ([...]), text otherwise; a leading apostrophe keeps the rest as text ('0012)."""
    text = cell.strip()
    if cell.startswith("'"):
        return cell[1:]
    if text.upper() in ("TRUE", "FALSE"):
        return text.upper() == "TRUE"
    if text.upper() in EXCEL_ERRORS:
        return text.upper()
    if text.startswith("["):
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except ValueError:
            raise Invalid(f"{where}, column '{column}': a value starting with '[' must be a JSON list") from None
    try:
        number = float(text) if "_" not in text else None
    except ValueError:
        number = None
    if number is None:
        return cell
    if not math.isfinite(number):
        return cell
    return int(text) if text.lstrip("+-").isdigit() else number
