"""The `formulas` calculation engine: a workbook compiled to a Python function graph.

Slower and hungrier than IronCalc, but right where IronCalc is not (approximate-match lookups
over ranges with a blank tail, among others), so the per-workbook choice can route to it.

Repeated calculation uses formulas' compiled-function path: `ExcelModel.compile(inputs=[every
input cell], outputs=[every output cell])` once per loaded workbook, then one call per job
with the uploaded values of the inputs a job leaves out, so no job sees another's inputs.

Serialized form: the xlsx bytes and the named-range table. A formulas model is a graph of
closures that does not pickle cheaply or portably, so the worker rebuilds it from the xlsx
(seconds, once per version thanks to the model cache).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from shared.calc.base import NamedRange, pack_blob, unpack_blob
from shared.calc.formulas.model import (
    area_cell,
    build_model,
    cell_key,
    output_sources,
    solution_cells,
    to_value,
)
from shared.calc.formulas.ranges import Range, original, resolve_ranges
from shared.calc.input_plan import plan_inputs
from shared.calc.values import EMPTY, CellValue, output_value
from shared.calc.xlsx.package import UNREADABLE
from shared.calc.xlsx import data_tables
from shared.calc.xlsx.write import write_values
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

ENGINE_NAME = "formulas"


class FormulasWorkbook:
    """A workbook for `formulas`; the model is built on first calculation. See base.Workbook."""

    engine_name = ENGINE_NAME

    def __init__(self, data: bytes, ranges: list[Range]):
        self._data = data
        self._ranges = ranges
        self._public = [r.public() for r in ranges]
        self._by_name = {r.name.lower(): r for r in ranges}
        self._model = None
        self._function = None  # compiled: every input cell in, every output cell out
        self._inputs: list[str] = []
        self._outputs: list[str] = []  # formulas nodes: output cells, or array areas holding them
        self._sources: dict[str, tuple[str, int, int] | None] = {}  # cell key -> its area
        self._last: dict[str, Any] | None = None  # input cell key -> value of the last job

    def named_ranges(self) -> list[NamedRange]:
        return list(self._public)

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        self._last = None  # a failed calculation must not leave an earlier job's inputs to export
        values = self._input_values(inputs, date_inputs)
        function = self._compiled()
        results: list = []
        try:
            if self._outputs:
                results = function(*[values[k] for k in self._inputs])
                if len(self._outputs) == 1:  # a one-output pipe answers the value itself
                    results = [results]
        except Exception as exc:  # noqa: BLE001 - any failure inside formulas
            log.warning("formulas failed to calculate: %r", exc)
            raise WorkbookError("The workbook could not be calculated") from None
        self._last = values
        by_node = dict(zip(self._outputs, results))
        by_key = {
            key: by_node.get(key) if source is None else area_cell(by_node.get(source[0]), *source[1:])
            for key, source in self._sources.items()
        }
        if outputs is None:
            targets = [r for r in self._ranges if r.kind == "output"]
        else:
            targets = [r for r in (self._by_name.get(n.lower()) for n in outputs) if r is not None]
        return {r.name: self._read(r, by_key) for r in targets}

    def flagged_outputs(self, outputs: list[str]) -> list[str]:
        return []  # no correction layer: nothing is flagged per calculation

    def to_xlsx(self) -> bytes:
        """The uploaded package with the last job's inputs and every formula's new value."""
        import schedula as sh

        model = self._built()
        inputs = {k: v for k, v in (self._last or {}).items() if k in model.dsp.data_nodes}
        try:
            solution = model.calculate(inputs={k: (sh.EMPTY if v is None else v)
                                               for k, v in inputs.items()})
        except Exception as exc:  # noqa: BLE001
            log.warning("formulas failed to export: %r", exc)
            raise WorkbookError("The workbook could not be exported") from None
        computed = solution_cells(solution)
        constants = {}
        for rng in self._ranges:
            if rng.kind == "input":
                for key, (row, col) in zip(rng.keys(), rng.box.cells()):
                    value = (self._last or {}).get(key, original(rng, row, col))
                    constants[(rng.sheet, row, col)] = value
        return write_values(self._data, computed, constants)

    def serialize(self) -> bytes:
        import formulas

        header = {"formulas": formulas.__version__, "ranges": [asdict(r) for r in self._ranges]}
        return pack_blob(ENGINE_NAME, header, self._data)

    # -- internals

    def _built(self):
        if self._model is None:
            self._model = build_model(self._data)
        return self._model

    def _compiled(self):
        if self._function is None:
            model = self._built()
            nodes = model.dsp.data_nodes
            self._inputs = [k for r in self._ranges if r.kind == "input" for k in r.keys()
                            if k in nodes]
            cells = [k for r in self._ranges if r.kind == "output" for k in r.keys()]
            self._sources = output_sources(cells, nodes)
            self._outputs = list(dict.fromkeys(
                key if source is None else source[0] for key, source in self._sources.items()
            ))
            if not self._outputs:
                self._function = lambda *args: []
                return self._function
            try:
                self._function = model.compile(inputs=self._inputs, outputs=self._outputs)
            except Exception as exc:  # noqa: BLE001
                log.warning("formulas failed to compile: %r", exc)
                raise WorkbookError("The workbook could not be calculated") from None
        return self._function

    def _input_values(self, inputs: dict[str, Any], date_inputs: frozenset[str]) -> dict[str, Any]:
        """Every input cell's value for this job: the input plan's, else the uploaded one."""
        import schedula as sh

        writes = plan_inputs(inputs, self._public, date_inputs)
        values: dict[str, Any] = {}
        for rng in self._ranges:
            if rng.kind == "input":
                for key, value in zip(rng.keys(), rng.originals):
                    values[key] = sh.EMPTY if value is None else value
        for write in writes:
            rng = self._by_name[write.range.name.lower()]
            key = cell_key(rng.sheet, rng.top + write.row, rng.left + write.col)
            values[key] = sh.EMPTY if write.value is None else write.value
        return values

    def _read(self, rng: Range, by_key: dict[str, Any]) -> Any:
        cells = (to_value(by_key.get(key)) for key in rng.keys())
        return output_value(rng.bottom - rng.top + 1, rng.right - rng.left + 1, cells, rng.date_cells)


# Microsoft, "Date systems in Excel": in a workbook saved in the 1904 date system serial 0 is
# 1 January 1904 (1,462 days after the 1900 system's). formulas 1.3.4 ignores workbookPr
# date1904 (YEAR(0) 1900 where Excel says 1904, DATE(1904,1,2) 1463 where Excel says 1), so it
# is not offered such a workbook: its check fails with this message and the upload stays on
# IronCalc, whose correction layer reads the date system; pinning it is refused the same way.
REFUSED_1904 = (
    "formulas does not read the 1904 date system this workbook uses (its dates would count "
    "from 1900)"
)


def _refuse_1904_dates(data: bytes) -> None:
    from shared.calc.corrections.functions import uses_1904_dates

    if uses_1904_dates(data):
        raise WorkbookError(REFUSED_1904)


class FormulasEngine:
    """Loads workbooks for `formulas`."""

    name = ENGINE_NAME

    def load_xlsx(self, data: bytes) -> FormulasWorkbook:
        if not data.startswith(b"PK"):
            raise WorkbookError(UNREADABLE)
        _refuse_1904_dates(data)
        data = data_tables.as_constants(data)  # formulas refuses what-if data tables
        return FormulasWorkbook(data, resolve_ranges(data))

    def load_serialized(self, data: bytes) -> FormulasWorkbook:
        header, payload = unpack_blob(data)
        if header.get("engine") != ENGINE_NAME:
            raise WorkbookError("The stored calculation model belongs to another engine")
        try:
            ranges = [Range(**r) for r in header["ranges"]]
        except (KeyError, TypeError) as exc:
            raise WorkbookError("The stored calculation model is unreadable") from exc
        return FormulasWorkbook(payload, ranges)

    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[CellValue], set[str]]:
        import formulas

        _refuse_1904_dates(data)
        model = build_model(data_tables.as_constants(data))
        try:
            computed = solution_cells(model.calculate())
        except Exception as exc:  # noqa: BLE001
            log.info("formulas could not calculate a workbook: %r", exc)
            raise RuntimeError(f"formulas failed: {type(exc).__name__}") from None
        values = [computed.get((s.upper(), r, c), EMPTY) for s, r, c in cells]
        # INDIRECT("A1") with a literal is resolved by formulas' parser, not a function.
        known = {name.upper() for name in formulas.get_functions()} | {"INDIRECT"}
        return values, {f for f in functions if f not in known and f"_XLFN.{f}" not in known}
