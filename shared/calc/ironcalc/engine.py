"""The IronCalc engine and its Workbook: input reset, writing the input plan, recalculation,
reading outputs, export and serialization."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

import ironcalc

from shared.calc import corrections
from shared.calc.base import NamedRange, pack_blob, unpack_blob
from shared.calc.input_plan import plan_inputs
from shared.calc.ironcalc.cells import as_content, read_cell, write_cell
from shared.calc.ironcalc.model import (
    Range,
    fresh_model,
    is_engine_failure,
    load_model,
    pristine_bytes,
    resolve_ranges,
    unknown_functions,
)
from shared.calc.values import EMPTY, CellValue, output_value
from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

ENGINE_NAME = "ironcalc"


class IronCalcWorkbook:
    """The uploaded model as bytes plus the named-range table; see base.Workbook for the contract.

    Every calculation runs on a model restored from those bytes, so what a job writes (its
    strings land in IronCalc's shared-strings table, its text inputs add quote-prefix styles)
    can never reach another job's outputs or filled workbook. Restoring is cheap next to the
    calculation and the export (fresh_model in model.py).
    """

    engine_name = ENGINE_NAME

    def __init__(
        self, model: "ironcalc.Model", ranges: list[Range], all_dirty: bool = False,
        fixes: corrections.ModelCorrections | None = None,
    ):
        if all_dirty:  # a deserialized model may still hold the inputs of a calculation
            for rng in ranges:
                if rng.originals is not None:
                    for (row, col), original in zip(rng.box.cells(), rng.originals):
                        write_cell(model, rng.sheet_index, row, col, original)
        self._pristine = pristine_bytes(model)
        self._fixes = fixes or corrections.ModelCorrections()  # formulas the model holds corrected
        self._ranges = ranges
        self._public = [r.public() for r in ranges]
        self._by_name = {r.name.lower(): r for r in ranges}
        self._model: "ironcalc.Model | None" = None  # the last successful calculation's model

    def named_ranges(self) -> list[NamedRange]:
        return list(self._public)

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        # The whole plan is made before any model is touched, so a bad input changes nothing.
        writes = plan_inputs(inputs, self._public, date_inputs)
        self._model = None
        try:
            model = fresh_model(self._pristine)
            for write in writes:
                rng = self._by_name[write.range.name.lower()]
                cell = (rng.sheet_index, rng.top + write.row, rng.left + write.col)
                write_cell(model, *cell, as_content(write.value))
            if self._fixes.dynamic:
                corrections.adjust_to_inputs(model, self._fixes)
            model.evaluate()
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.warning("IronCalc failed to calculate: %r", exc)
            raise WorkbookError("The workbook could not be calculated") from None
        if outputs is None:
            targets = [r for r in self._ranges if r.kind == "output"]
        else:
            targets = [r for r in (self._by_name.get(n.lower()) for n in outputs) if r is not None]
        values = {r.name: self._read(model, r) for r in targets}
        self._model = model
        return values

    def to_xlsx(self) -> bytes:
        if self._model is None:
            # Files written without cached values would export zeros: calculate the uploaded inputs.
            self.calculate({}, outputs=[])
        try:
            exported = bytes(self._model.to_xlsx())
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.warning("IronCalc failed to export xlsx: %r", exc)
            raise WorkbookError("The workbook could not be exported") from None
        return corrections.restore_formulas(exported, self._fixes)

    def serialize(self) -> bytes:
        ranges = [asdict(r) for r in self._ranges]
        for fields in ranges:  # an empty cell stays null, as the blob format has always had it
            if fields["originals"] is not None:
                fields["originals"] = [None if o == EMPTY else o for o in fields["originals"]]
        header = {"ironcalc": ironcalc.__version__, "ranges": ranges}
        if self._fixes:
            header["corrections"] = self._fixes.to_header()
        return pack_blob(ENGINE_NAME, header, self._pristine)

    @staticmethod
    def _read(model: "ironcalc.Model", rng: Range) -> Any:
        sheet = rng.sheet_index
        cells = (read_cell(model, sheet, row, col) for row, col in rng.box.cells())
        return output_value(rng.bottom - rng.top + 1, rng.right - rng.left + 1, cells, rng.date_cells)


class IronCalcEngine:
    """Loads workbooks into IronCalc models."""

    name = ENGINE_NAME

    def load_xlsx(self, data: bytes) -> IronCalcWorkbook:
        model, ranges, fixes = self._load(data)
        return IronCalcWorkbook(model, ranges, fixes=fixes)

    def load_serialized(self, data: bytes) -> IronCalcWorkbook:
        header, payload = unpack_blob(data)
        if header.get("engine") != ENGINE_NAME:
            raise WorkbookError("The stored calculation model belongs to another engine")
        try:
            model = ironcalc.load_from_bytes(payload)
            ranges = [Range.from_header(r) for r in header["ranges"]]
            fixes = corrections.ModelCorrections.from_header(header.get("corrections"))
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.warning("Stored IronCalc %s model unreadable: %r", header.get("ironcalc"), exc)
            raise WorkbookError("The stored calculation model is unreadable") from None
        return IronCalcWorkbook(model, ranges, all_dirty=True, fixes=fixes)

    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[CellValue], set[str]]:
        model, _, fixes = self._load(data)  # ranges too: a workbook they fail on fails the check
        try:
            if fixes.dynamic:  # the uploaded inputs, as a job that sends none
                corrections.adjust_to_inputs(model, fixes)
            model.evaluate()
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            raise WorkbookError("The workbook could not be calculated") from None
        index_of = {p["name"].lower(): i for i, p in enumerate(model.get_worksheets_properties())}
        values = []
        for sheet, row, col in cells:
            index = index_of.get(sheet.lower())
            values.append(EMPTY if index is None else read_cell(model, index, row, col))
        return values, unknown_functions(functions)

    def _load(
        self, data: bytes
    ) -> tuple["ironcalc.Model", list[Range], corrections.ModelCorrections]:
        """The model of an upload with its named ranges, corrected (shared.calc.corrections)."""
        if not data.startswith(b"PK"):
            raise WorkbookError(UNREADABLE)
        try:
            model = load_model(data)
            ranges = resolve_ranges(model)
            inputs = [(r.sheet_index, r.top, r.left, r.bottom, r.right) for r in ranges if r.kind == "input"]
            return model, ranges, corrections.correct_model(model, data, inputs)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.info("IronCalc could not read an upload: %r", exc)
            raise WorkbookError(UNREADABLE) from None
