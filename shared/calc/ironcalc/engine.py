"""The IronCalc engine and its Workbook: input reset, writing the input plan, recalculation,
reading outputs, export and serialization."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

import ironcalc

from shared.calc import corrections
from shared.calc.base import NamedRange, pack_blob, unpack_blob
from shared.calc.corrections import data_tables as table_layer
from shared.calc.corrections import functions as corrected_functions
from shared.calc.corrections import iteration
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
from shared.calc.xlsx import data_tables
from shared.calc.xlsx.package import UNREADABLE
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

ENGINE_NAME = "ironcalc"
_FLAGS_NAMED = 20  # cells the correction layer could not compute, named one by one in a report
_WALKS_KEPT = 32  # sets of flagged cells whose reach a loaded workbook remembers (flagged_outputs)


def _flag_key(flag) -> tuple:
    return flag.sheet, flag.cell, flag.reason


class IronCalcWorkbook:
    """The uploaded model as bytes plus the named-range table; see base.Workbook for the contract.

    Every calculation runs on a model restored from those bytes, so what a job writes (its
    strings land in IronCalc's shared-strings table, its text inputs add quote-prefix styles)
    can never reach another job's outputs or filled workbook. Restoring is cheap next to the
    calculation and the export (fresh_model in model.py).
    """

    engine_name = ENGINE_NAME

    def __init__(
        self,
        model: "ironcalc.Model",
        ranges: list[Range],
        all_dirty: bool = False,
        date1904: bool = False,
        plan_functions: bool = True,
        fixes: corrections.ModelCorrections | None = None,
        tables: list[data_tables.DataTable] | None = None,
        iterate: iteration.Settings | None = None,
    ):
        if all_dirty:  # a deserialized model may still hold the inputs of a calculation
            for rng in ranges:
                if rng.originals is not None:
                    for (row, col), original in zip(rng.box.cells(), rng.originals):
                        write_cell(model, rng.sheet_index, row, col, original)
        self._pristine = pristine_bytes(model)
        self._fixes = fixes if fixes is not None else corrections.ModelCorrections()  # formulas held corrected
        self._ranges = ranges
        self._public = [r.public() for r in ranges]
        self._by_name = {r.name.lower(): r for r in ranges}
        self._model: "ironcalc.Model | None" = None  # the last successful calculation's model
        # Cells whose functions we evaluate after IronCalc (None for most workbooks: no cost).
        self._date1904 = date1904  # IronCalc ignores the file's date system; our TEXT does not
        self._corrections = corrected_functions.plan(model, date1904, self._fixes.spills) if plan_functions else None
        self._corrected: corrected_functions.Outcome | None = None
        # the model's formulas and the cells reached from flagged cells (flagged_outputs); the
        # flags of the load and of a calculation of the uploaded values, which the upload reported
        self._formula_book = None
        self._reached: dict[frozenset, set] = {}
        self._known_flags = {_flag_key(f) for f in self._corrections.flags} if self._corrections else set()
        self._uploaded_flags: set | None = None
        # What-if data tables we calculate after IronCalc (shared.calc.corrections.data_tables).
        self._tables = list(tables or [])
        self._table_plan = table_layer.plan(model, self._tables) if self._tables else []
        # Excel's iterative calculation, where the workbook enables it (corrections/iteration.py)
        self._iterate = iterate
        self._cycles: iteration.Cycles | None = None  # the last calculation's
        self._known_cycles = iteration.Known(self._pristine) if iterate is not None else None

    def named_ranges(self) -> list[NamedRange]:
        return list(self._public)

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        # The whole plan is made before any model is touched, so a bad input changes nothing.
        writes = plan_inputs(inputs, self._public, date_inputs, self._date_offset)
        self._model = None
        try:
            model = fresh_model(self._pristine)
            for write in writes:
                rng = self._by_name[write.range.name.lower()]
                cell = (rng.sheet_index, rng.top + write.row, rng.left + write.col)
                write_cell(model, *cell, as_content(write.value))
            if self._fixes.dynamic:
                corrections.adjust_to_inputs(model, self._fixes)
            cycles = self._new_cycles()
            iteration.evaluate(model, cycles)
            corrected = corrected_functions.apply(model, self._corrections)
            if self._table_plan:
                corrected = _fill_tables(model, self._table_plan, self._fixes, self._corrections, corrected, cycles)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.warning("IronCalc failed to calculate: %r", exc)
            raise WorkbookError("The workbook could not be calculated") from None
        if outputs is None:
            targets = [r for r in self._ranges if r.kind == "output"]
        else:
            targets = [r for r in (self._by_name.get(n.lower()) for n in outputs) if r is not None]
        try:
            values = {r.name: self._read(model, r, self._date_offset) for r in targets}
        except WorkbookError:
            if cycles is None or cycles.outcome is None or cycles.outcome.refused:
                raise
            raise WorkbookError(
                "The workbook's circular references do not converge within its iterative calculation's limits"
            ) from None
        self._model, self._corrected, self._cycles = model, corrected, cycles
        return values

    def _new_cycles(self) -> iteration.Cycles | None:
        """A calculation's iterative evaluation, where the workbook enables it."""
        if self._iterate is None:
            return None
        return iteration.Cycles(self._iterate, self._known_cycles, self._corrections)

    def correction_flags(self) -> list[corrected_functions.Flag]:
        """Cells whose corrected function we could not compute as Excel would, at load and in
        the last calculation (they keep IronCalc's value)."""
        if self._corrected is not None:
            return list(self._corrected.flags)
        return list(self._corrections.flags) if self._corrections else []

    def flagged_outputs(self, outputs: list[str]) -> list[str]:
        """The named outputs of the last calculation calculated (by the static walk of
        fidelity/unimplemented.py) from a cell the correction layer could not compute as Excel
        would for that calculation's inputs: a flag that neither the load nor a calculation of the
        uploaded values raises (those the upload reported, and jobs keep IronCalc's value there as
        the report says). Such a cell kept IronCalc's value, which must not reach a consumer as
        Excel's answer. The uploaded values are calculated and the formulas walked only when a
        flag is new (rarely: an input the layer refuses, such as a date written as text in a form
        whose Excel answer is not known), once per loaded workbook."""
        if self._corrected is None or self._model is None:
            return []
        new = [flag for flag in self._corrected.flags if _flag_key(flag) not in self._known_flags]
        if new:
            new = [flag for flag in new if _flag_key(flag) not in self._flags_of_uploaded_values()]
        if not new:
            return []
        from shared.calc.fidelity.unimplemented import reached
        from shared.calc.ironcalc.model import formula_book
        from shared.calc.refs import parse_cell

        for flag in new:
            log.warning("the correction layer could not compute %s in this calculation", flag)
        roots = [(flag.sheet, *parse_cell(flag.cell)) for flag in new if parse_cell(flag.cell)]
        try:  # the formulas as loaded: the layer has written values over the cells it answered
            key = frozenset(roots)
            if key not in self._reached:  # a cell flagged in every job is walked from once
                if len(self._reached) >= _WALKS_KEPT:
                    self._reached.clear()
                if self._formula_book is None:
                    self._formula_book = formula_book(fresh_model(self._pristine))
                self._reached[key] = reached(self._formula_book, roots)
            cells = self._reached[key]
        except Exception:  # noqa: BLE001 - not knowing which, every output is held back
            log.exception("walking from the flagged cells failed")
            return [self._by_name[n.lower()].name for n in outputs if n.lower() in self._by_name]
        found = []
        for name in outputs:
            rng = self._by_name.get(name.lower())
            if rng is not None and any(
                sheet == rng.sheet.lower() and rng.top <= row <= rng.bottom and rng.left <= col <= rng.right
                for sheet, row, col in cells
            ):
                found.append(rng.name)
        return found

    def _flags_of_uploaded_values(self) -> set:
        """The flags of a calculation of the uploaded values (the upload's check reported them),
        calculated once per loaded workbook; the last calculation's model is kept."""
        if self._uploaded_flags is None:
            kept = self._model, self._corrected
            try:
                self.calculate({}, outputs=[])
                self._uploaded_flags = {_flag_key(flag) for flag in self._corrected.flags}
            except WorkbookError:
                self._uploaded_flags = set()
            finally:
                self._model, self._corrected = kept
        return self._uploaded_flags

    def to_xlsx(self) -> bytes:
        if self._model is None:
            # Files written without cached values would export zeros: calculate the uploaded inputs.
            self.calculate({}, outputs=[])
        try:
            exported = bytes(self._model.to_xlsx())
            exported = corrected_functions.restore_formulas(exported, self._corrected)
            exported = data_tables.restore_definitions(exported, self._tables)
            if self._cycles is not None:
                exported = self._cycles.restore_formulas(exported)
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
        if self._date1904:
            header["date1904"] = True
        if self._corrections is None:
            header["function_corrections"] = False  # nothing to evaluate: loading skips the scan
        header["volatile_functions"] = True  # the scan knew NOW/TODAY/RAND/RANDBETWEEN (run_context.py)
        header["spill_areas"] = True  # corrections carry the file's array formulas (corrections/dynamic)
        if self._fixes or self._fixes.spills:  # spills None: a model stored before they were kept
            header["corrections"] = self._fixes.to_header()
        if self._tables:
            header["data_tables"] = [table.to_header() for table in self._tables]
        if self._iterate is not None:
            header["iterate"] = self._iterate.to_header()
        return pack_blob(ENGINE_NAME, header, self._pristine)

    @property
    def _date_offset(self) -> int:
        """Days from the workbook's serials to the 1900 system's: dates in and out of the API."""
        return corrections.OFFSET_1904 if self._date1904 else 0

    @staticmethod
    def _read(model: "ironcalc.Model", rng: Range, date_offset: int = 0) -> Any:
        sheet = rng.sheet_index
        cells = (read_cell(model, sheet, row, col) for row, col in rng.box.cells())
        return output_value(rng.bottom - rng.top + 1, rng.right - rng.left + 1, cells, rng.date_cells, date_offset)


def _fill_tables(model, table_plan, fixes, function_plan, corrected, cycles=None):
    """Calculate the what-if data tables of an evaluated model, each substitution recalculated
    as a job is (input-aware range cuts, IronCalc, our functions); the corrected functions'
    outcome of the final state, naming every cell corrected on the way (the export puts their
    formulas back, with the values the model finally holds)."""
    from shared.calc.ironcalc.cells import read_cell as read

    outcomes = [corrected] if corrected is not None else []

    def recalculate() -> None:
        if fixes.dynamic:
            corrections.adjust_to_inputs(model, fixes)
        iteration.evaluate(model, cycles)
        outcome = corrected_functions.apply(model, function_plan)
        if outcome is not None:
            outcomes.append(outcome)

    table_layer.fill(model, table_plan, recalculate)
    if not outcomes:
        return corrected
    final = outcomes[-1]
    targets = {}
    for outcome in outcomes:
        for target, _ in outcome.written:
            targets[(target.sheet, target.row, target.col)] = target
    final.written = [(t, read(model, *key)) for key, t in targets.items()]
    return final


class IronCalcEngine:
    """Loads workbooks into IronCalc models."""

    name = ENGINE_NAME

    def load_xlsx(self, data: bytes) -> IronCalcWorkbook:
        model, ranges, fixes = self._load(data)
        return IronCalcWorkbook(
            model, ranges,
            date1904=corrected_functions.uses_1904_dates(data),
            plan_functions=corrected_functions.may_need_plan(data),
            fixes=fixes,
            tables=table_layer.calculated(data_tables.find_data_tables(data)),
            iterate=iteration.settings(data),
        )

    def load_serialized(self, data: bytes) -> IronCalcWorkbook:
        header, payload = unpack_blob(data)
        if header.get("engine") != ENGINE_NAME:
            raise WorkbookError("The stored calculation model belongs to another engine")
        try:
            model = ironcalc.load_from_bytes(payload)
            ranges = [Range.from_header(r) for r in header["ranges"]]
            fixes = corrections.ModelCorrections.from_header(header.get("corrections"))
            if not header.get("spill_areas"):
                fixes.spills = None  # stored before they were kept: unknown (corrections/dynamic)
            tables = [data_tables.DataTable.from_header(t) for t in header.get("data_tables") or []]
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            log.warning("Stored IronCalc %s model unreadable: %r", header.get("ironcalc"), exc)
            raise WorkbookError("The stored calculation model is unreadable") from None
        return IronCalcWorkbook(
            model, ranges, all_dirty=True, date1904=bool(header.get("date1904")),
            # A blob from before the volatile functions were corrected is scanned again at load.
            plan_functions=header.get("function_corrections", True) or not header.get("volatile_functions"),
            fixes=fixes,
            tables=tables,  # decided at upload (the size limit then in force)
            iterate=iteration.Settings.from_header(header.get("iterate")),
        )

    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[CellValue], set[str]]:
        model, _, fixes = self._load(data)  # ranges too: a workbook they fail on fails the check
        try:
            if fixes.dynamic:  # the uploaded inputs, as a job that sends none
                corrections.adjust_to_inputs(model, fixes)
            settings = iteration.settings(data)
            pristine = pristine_bytes(model) if settings is not None else b""
            model.evaluate()
            corrected = the_plan = None
            if corrected_functions.may_need_plan(data):
                date1904 = corrected_functions.uses_1904_dates(data)
                the_plan = corrected_functions.plan(model, date1904, fixes.spills)
            cycles = None
            if settings is not None:  # after the plan: it reads the formulas iterating replaces
                cycles = iteration.Cycles(settings, iteration.Known(pristine), the_plan)
                cycles.iterate_evaluated(model)
            if the_plan is not None:
                corrected = corrected_functions.apply(model, the_plan)
            tables = table_layer.calculated(data_tables.find_data_tables(data))
            if tables:
                function_plan = the_plan if corrected is not None else None
                _fill_tables(model, table_layer.plan(model, tables), fixes, function_plan, corrected, cycles)
        except BaseException as exc:
            if not is_engine_failure(exc):
                raise
            raise WorkbookError("The workbook could not be calculated") from None
        sheets = [p["name"] for p in model.get_worksheets_properties()]
        index_of = {name.lower(): i for i, name in enumerate(sheets)}
        values = []
        for sheet, row, col in cells:
            index = index_of.get(sheet.lower())
            values.append(EMPTY if index is None else read_cell(model, index, row, col))
        # Functions we evaluate ourselves are not unknown to the service any more; a cell we
        # could not evaluate as Excel would is named instead ("TEXT at Sheet1!B2 (reason)"),
        # so the version's fidelity report and the upload's warnings list it.
        from shared.calc.corrections.dynamic import EVALUATED

        unsupported = unknown_functions(functions) - corrected_functions.NAMES - EVALUATED
        if cycles is not None:
            unsupported |= set(cycles.unsupported(sheets))
        if corrected is not None and corrected.flags:
            named = [str(flag) for flag in corrected.flags]
            unsupported |= set(named[:_FLAGS_NAMED])
            if len(named) > _FLAGS_NAMED:
                unsupported.add(f"... and {len(named) - _FLAGS_NAMED} more such cells")
        return values, unsupported

    def _load(
        self, data: bytes
    ) -> tuple["ironcalc.Model", list[Range], corrections.ModelCorrections]:
        """The model of an upload with its named ranges, corrected (shared.calc.corrections)."""
        if not data.startswith(b"PK"):
            raise WorkbookError(UNREADABLE)
        data = data_tables.as_constants(data)  # IronCalc refuses what-if data tables
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
