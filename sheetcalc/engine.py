"""An engine in the caller's own process: a workbook checked as an upload is, calculated as a job is.

Nothing here decides anything of its own. ``Engine.from_xlsx`` runs the upload's checks
(``shared.services.versions.check_workbook``: the package guard and IronCalc's fidelity check in
the upload's fenced reader, the output limit, the cost budget), then the slower engines' check a
worker runs after an upload (``version_checks.background_check`` and ``merge_checks``), so the
engine chosen is the service's. ``Engine.calculate`` checks the inputs as execute does
(``shared.services.inputs.validate``: storable JSON, the input schema, the input plan), builds the
job's request as the worker does (``job_runner.job_spec``), calculates it on the model the upload
serialized, through the same code a calculation child runs (``fenced.calculate_here``, or the
fenced child itself with ``fenced=True``), and shapes the answer as the worker does
(``job_runner.job_outputs``). No database, queue or object store is touched; the limits are the
service's settings (``SHEETCALC_*`` variables when set, the defaults otherwise).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shared.calc import available_engines, fenced
from shared.calc.fidelity import unimplemented
from shared.calc.fidelity.stored_report import report_summary
from shared.config import get_settings
from shared.db.models import EngineVersion
from shared.errors import InputValidationError, Invalid, WorkbookRefused
from shared.services import engine_archive, job_runner, output_limits, version_checks, version_costs, versions
from shared.services import inputs as input_rules


class Engine:
    """One workbook version, ready to calculate. Build it with ``from_xlsx`` or ``from_export``."""

    def __init__(self, version: EngineVersion, prepared: bytes, *, warnings: list[str], fenced: bool = False) -> None:
        self._version = version
        self._prepared = prepared
        self._fenced = fenced
        self._workbook = None  # loaded on first in-process use
        self.warnings = warnings

    # --- building

    @classmethod
    def from_xlsx(
        cls, source: str | Path | bytes, *, input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None, calc_engine: str | None = None, fenced: bool = False,
        label: str = "local",
    ) -> "Engine":
        """The workbook at ``source`` (a path, or its bytes) checked as an upload is, with these
        schemas; ``calc_engine`` pins an engine as an administrator's pin does. Raises what the
        upload would answer: WorkbookError (not a readable .xlsx), WorkbookRefused (over a limit),
        Invalid (a schema, or a version over the output or cost limits)."""
        data = Path(source).read_bytes() if isinstance(source, (str, Path)) else bytes(source)
        if not data:
            raise Invalid("The workbook is empty")
        settings = get_settings()
        if len(data) > settings.max_upload_bytes:
            raise WorkbookRefused(f"The workbook is larger than the {settings.max_upload_bytes // (1024 * 1024)} MB upload limit")
        choice, deferred = versions.check_workbook(data, settings)
        version = EngineVersion(
            id=uuid.uuid4(), version=label, calc_engine=choice.engine, calc_engine_pinned=False,
            fidelity_report=choice.report, named_ranges=choice.named_ranges, cost=choice.cost,
            lane=version_costs.lane(choice.cost, choice.engine, settings),
        )
        prepared = choice.prepared
        warnings = list(choice.warnings)
        if calc_engine is not None:
            prepared = _pin(version, calc_engine, data, prepared)
        if deferred:
            # What a worker does after the upload: the slower engines checked, the best kept.
            results = [version_checks.background_check(data, name) for name in deferred]
            expired = [r.engine for r in results if r.status == "timeout"]
            if expired:
                raise WorkbookRefused(
                    f"The {', '.join(expired)} check did not finish within its deadline, so the engine "
                    "cannot be chosen as the service would; raise SHEETCALC_FIDELITY_TIMEOUT_SECONDS and try again"
                )
            switched = version_checks.merge_checks(version, version.fidelity_report, results, data)
            prepared = switched if switched is not None else prepared
        for field, schema in (("input_schema", input_schema), ("output_schema", output_schema)):
            input_rules.check_schema(schema, field)
            if field == "output_schema":
                output_limits.check_output_schema(version.named_ranges, schema, settings)
            setattr(version, field, schema)
        warnings += versions.schema_warnings(version)
        return cls(version, prepared, warnings=warnings, fenced=fenced)

    @classmethod
    def from_export(cls, archive: str | Path | bytes, *, version: str | None = None, fenced: bool = False) -> "Engine":
        """A version of an engine export (``GET /engines/{id}/export``): the active one unless
        ``version`` names another, checked again from its workbook with its schemas and pin."""
        data = Path(archive).read_bytes() if isinstance(archive, (str, Path)) else bytes(archive)
        read = engine_archive.read(data, max_workbook_bytes=get_settings().max_upload_bytes)
        chosen = read.version(version)
        return cls.from_xlsx(
            chosen.workbook, input_schema=chosen.input_schema, output_schema=chosen.output_schema,
            calc_engine=chosen.calc_engine if chosen.calc_engine_pinned else None, fenced=fenced, label=chosen.version,
        )

    # --- what it is

    @property
    def inputs(self) -> list[dict[str, Any]]:
        """The named ranges a job's inputs may write (name, sheet, ref, rows, cols, ...)."""
        return [r for r in self._version.named_ranges if r["kind"] == "input"]

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The named ranges a job returns (all of them, or those the output schema names)."""
        return [r for r in self._version.named_ranges if r["kind"] == "output"]

    @property
    def fidelity(self) -> dict[str, Any] | None:
        """The fidelity check's summary, as the version detail shows it."""
        return report_summary(self._version.fidelity_report)

    @property
    def calc_engine(self) -> str:
        """The calculation engine chosen (or pinned) for the workbook."""
        return self._version.calc_engine

    @property
    def input_schema(self) -> dict[str, Any] | None:
        return self._version.input_schema

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self._version.output_schema

    # --- calculating

    def calculate(self, inputs: dict[str, Any], *, job_id: uuid.UUID | None = None, at: datetime | None = None) -> dict[str, Any]:
        """The outputs for ``inputs``, as a completed job's. ``job_id`` and ``at`` (UTC) are the
        run context (RAND's seed, NOW and TODAY): a new one per call unless given, as a new job's."""
        return self.calculate_many([inputs], job_ids=None if job_id is None else [job_id], at=at)[0]

    def calculate_many(
        self, many: Iterable[dict[str, Any]], *, job_ids: list[uuid.UUID] | None = None, at: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """The outputs for each inputs object, in order. Every one is checked first (an
        InputValidationError names the first refused, by position); a calculation that fails
        raises as the job would fail (WorkbookError, CalculationStopped, OutputsTooLarge)."""
        many = list(many)
        for index, inputs in enumerate(many):
            if not isinstance(inputs, dict):
                raise InputValidationError(f"inputs #{index} must be an object (a dict), not {type(inputs).__name__}")
            try:
                input_rules.validate(inputs, input_schema=self._version.input_schema, named_ranges=self._version.named_ranges)
            except InputValidationError as exc:
                raise InputValidationError(exc.reason if len(many) == 1 else f"inputs #{index}: {exc.reason}") from None
        moment = at or datetime.now(timezone.utc)
        ids = job_ids or [uuid.uuid4() for _ in many]
        if len(ids) != len(many):
            raise ValueError("job_ids must give one id per inputs object")
        specs = [job_runner.job_spec(self._version, inputs=inputs, job_id=job_id, created_at=moment)
                 for inputs, job_id in zip(many, ids)]
        # The report's section of outputs that depend on a function the engine lacks: such an
        # output fails its job rather than return a value (as the worker checks it).
        section = (self._version.fidelity_report or {}).get(unimplemented.REPORT_KEY) or {}
        return [job_runner.job_outputs(result, unimplemented_section=section) for result in self._results(specs)]

    def _results(self, specs: list[fenced.JobSpec]) -> list[fenced.Result]:
        if self._fenced:
            model = fenced.Model(f"library:{self._version.id}:{self.calc_engine}", self.calc_engine,
                                 lambda: ("serialized", self._prepared))
            budget = fenced.Budget.for_jobs(get_settings())
            return fenced.calculator(self._version.lane).calculate(model, specs, budget)
        if self._workbook is None:
            self._workbook = fenced.load_model("serialized", self._prepared, self.calc_engine)
        return [fenced.calculate_here(self._workbook, spec) for spec in specs]

    def __repr__(self) -> str:
        return (f"<sheetcalc.Engine {self._version.version!r} on {self.calc_engine}: "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs>")


def _pin(version: EngineVersion, engine_name: str, data: bytes, prepared: bytes) -> bytes:
    """The version pinned to ``engine_name``, as an administrator's pin does it."""
    if engine_name not in available_engines():
        raise Invalid(f"Unknown calculation engine '{engine_name}'; choose one of: {', '.join(available_engines())}")
    if engine_name != version.calc_engine:
        prepared = versions.model_for_engine(version, engine_name, data)
    version.calc_engine, version.calc_engine_pinned = engine_name, True
    return prepared
