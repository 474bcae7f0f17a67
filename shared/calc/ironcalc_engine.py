"""The IronCalc calculation engine: named ranges, input reset, recalculation and export."""

import io
import logging
import os
import re
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from typing import Any

import ironcalc

from shared.calc.base import NamedRange, pack_blob, unpack_blob
from shared.calc.refs import CellBox, parse_range_formula
from shared.calc.values import (
    date_scalar,
    is_date_format,
    number_out,
    place_input,
    serial_to_iso,
    shape_output,
)
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

ENGINE_NAME = "ironcalc"
LOCALE, TIMEZONE = "en", "UTC"
_ERROR = ironcalc.CellType.ErrorValue
_UNREADABLE = "The file is not a readable .xlsx workbook"
_SHEET_RELS = re.compile(r"xl/worksheets/_rels/[^/]+\.rels")

# A cell's original content, restorable without a reload: ("n", 1.5), ("s", "x"), ("b", True),
# ("e", "#N/A") or None for an empty cell.
Original = tuple[str, Any] | None


def _is_engine_failure(exc: BaseException) -> bool:
    """Exceptions to translate: ordinary ones plus pyo3's PanicException (a BaseException)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


@dataclass
class _Range:
    """A named range resolved to sheet index and cells, with what load time learnt about it."""

    name: str
    sheet: str
    sheet_index: int
    top: int
    left: int
    bottom: int
    right: int
    kind: str
    date_cells: list[bool]
    originals: list[Original] | None  # inputs only

    @property
    def box(self) -> CellBox:
        return CellBox(self.sheet, self.top, self.left, self.bottom, self.right)

    def public(self) -> NamedRange:
        box = self.box
        return NamedRange(
            self.name, self.sheet, box.ref, self.kind, box.rows, box.cols, self.date_cells[0]
        )


class IronCalcWorkbook:
    """One IronCalc model plus the named-range table; see base.Workbook for the contract."""

    engine_name = ENGINE_NAME

    def __init__(self, model: "ironcalc.Model", ranges: list[_Range], all_dirty: bool = False):
        self._model = model
        self._ranges = ranges
        self._exact = {r.name: r for r in ranges}
        self._folded = {r.name.lower(): r for r in ranges}
        # Cells written by a previous calculation: (sheet, row, col) -> original content.
        self._dirty: dict[tuple[int, int, int], Original] = {}
        self._evaluated = False
        if all_dirty:  # a deserialized model may still hold the last job's inputs
            for rng in ranges:
                if rng.originals is not None:
                    for (row, col), original in zip(rng.box.cells(), rng.originals):
                        self._dirty[(rng.sheet_index, row, col)] = original

    def named_ranges(self) -> list[NamedRange]:
        return [r.public() for r in self._ranges]

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        writes = self._plan_writes(inputs, date_inputs)
        model = self._model
        try:
            for (sheet, row, col), original in self._dirty.items():
                _write(model, sheet, row, col, original)
            self._dirty.clear()
            for sheet, row, col, rng_original, value in writes:
                self._dirty.setdefault((sheet, row, col), rng_original)
                _write(model, sheet, row, col, value)
            model.evaluate()
        except BaseException as exc:
            if not _is_engine_failure(exc):
                raise
            log.warning("IronCalc failed to calculate: %r", exc)
            raise WorkbookError("The workbook could not be calculated") from None
        self._evaluated = True
        if outputs is None:
            targets = [r for r in self._ranges if r.kind == "output"]
        else:
            targets = [r for r in map(self._lookup, outputs) if r is not None]
        return {r.name: self._read(r) for r in targets}

    def to_xlsx(self) -> bytes:
        if not self._evaluated:
            # Files written without cached values would export zeros; a deserialized model
            # may still hold another job's inputs. An empty calculation fixes both.
            self.calculate({}, outputs=[])
        try:
            return bytes(self._model.to_xlsx())
        except BaseException as exc:
            if not _is_engine_failure(exc):
                raise
            log.warning("IronCalc failed to export xlsx: %r", exc)
            raise WorkbookError("The workbook could not be exported") from None

    def serialize(self) -> bytes:
        header = {"ironcalc": ironcalc.__version__, "ranges": [asdict(r) for r in self._ranges]}
        return pack_blob(ENGINE_NAME, header, bytes(self._model.to_bytes()))

    def _lookup(self, name: str) -> _Range | None:
        return self._exact.get(name) or self._folded.get(name.lower())

    def _plan_writes(self, inputs: dict[str, Any], date_inputs: frozenset[str]) -> list[tuple]:
        """Validate every input before touching the model, so a bad one changes nothing."""
        writes = []
        date_names = {n.lower() for n in date_inputs}
        for key, value in inputs.items():
            rng = self._lookup(key)
            if rng is None or rng.kind != "input":
                continue
            as_date = rng.name.lower() in date_names or key.lower() in date_names
            width = rng.right - rng.left + 1
            for dr, dc, scalar in place_input(rng.name, rng.bottom - rng.top + 1, width, value):
                index = dr * width + dc
                scalar = date_scalar(rng.name, scalar, as_date or rng.date_cells[index])
                cell = (rng.sheet_index, rng.top + dr, rng.left + dc)
                writes.append((*cell, rng.originals[index], _as_content(scalar)))
        return writes

    def _read(self, rng: _Range) -> Any:
        model, sheet = self._model, rng.sheet_index
        values = []
        index = 0
        for row in range(rng.top, rng.bottom + 1):
            for col in range(rng.left, rng.right + 1):
                value = model.get_cell_value(sheet, row, col)
                if isinstance(value, float):
                    value = serial_to_iso(value) if rng.date_cells[index] else number_out(value)
                elif value == "#CIRC!" and model.get_cell_type(sheet, row, col) == _ERROR:
                    raise WorkbookError("The workbook contains a circular reference")
                values.append(value)
                index += 1
        return shape_output(rng.bottom - rng.top + 1, rng.right - rng.left + 1, values)


def _as_content(value: Any) -> Original:
    if value is None:
        return None
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float):
        return ("n", value)
    return ("s", value)


def _write(model: "ironcalc.Model", sheet: int, row: int, col: int, content: Original) -> None:
    if content is None:
        model.clear_cell_contents(sheet, row, col)
        return
    kind, value = content
    if kind == "n":
        model.update_cell_with_number(sheet, row, col, value)
    elif kind == "s":
        # Text stays text: "=1+1" or "123" are not parsed (IronCalc adds a quote prefix).
        model.update_cell_with_text(sheet, row, col, value)
    elif kind == "b":
        model.update_cell_with_bool(sheet, row, col, value)
    else:  # an error constant typed into an input cell
        model.set_user_input(sheet, row, col, value)


def _read_original(model: "ironcalc.Model", sheet: int, row: int, col: int) -> Original:
    value = model.get_cell_value(sheet, row, col)
    if value is None:
        return None
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float):
        return ("n", value)
    if model.get_cell_type(sheet, row, col) == _ERROR:
        return ("e", value)
    return ("s", value)


def _resolve_ranges(model: "ironcalc.Model") -> list[_Range]:
    """Usable named ranges: plain cell ranges on existing sheets, workbook scope first."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    index_of = {name.lower(): i for i, name in enumerate(sheets)}
    defined = sorted(
        model.get_defined_name_list(),
        key=lambda d: (d["scope"] is not None, d["scope"] or 0),
    )
    ranges, seen = [], set()
    for entry in defined:
        name = entry["name"]
        if name.lower() in seen or name.lower().startswith("_xlnm."):
            continue
        box = parse_range_formula(entry["formula"])
        if box is None or box.sheet.lower() not in index_of:
            continue
        seen.add(name.lower())
        sheet = index_of[box.sheet.lower()]
        cells = box.cells()
        has_formula = any(model.get_cell_formula(sheet, r, c) for r, c in cells)
        date_cells = [
            is_date_format(model.get_cell_style(sheet, r, c).get("num_fmt")) for r, c in cells
        ]
        originals = None if has_formula else [_read_original(model, sheet, r, c) for r, c in cells]
        ranges.append(
            _Range(
                name, sheets[sheet], sheet, box.top, box.left, box.bottom, box.right,
                "output" if has_formula else "input", date_cells, originals,
            )
        )
    order = {d["name"].lower(): i for i, d in enumerate(model.get_defined_name_list())}
    return sorted(ranges, key=lambda r: order[r.name.lower()])


class IronCalcEngine:
    """Loads workbooks into IronCalc models."""

    name = ENGINE_NAME

    def load_xlsx(self, data: bytes) -> IronCalcWorkbook:
        if not data.startswith(b"PK"):
            raise WorkbookError(_UNREADABLE)
        try:
            try:
                model = _load_model(data)
            except ironcalc.WorkbookError:
                fixed = _relative_sheet_rels(data)
                if fixed is None:
                    raise
                model = _load_model(fixed)
            ranges = _resolve_ranges(model)
        except BaseException as exc:
            if not _is_engine_failure(exc):
                raise
            log.info("IronCalc could not read an upload: %r", exc)
            raise WorkbookError(_UNREADABLE) from None
        return IronCalcWorkbook(model, ranges)

    def load_serialized(self, data: bytes) -> IronCalcWorkbook:
        header, payload = unpack_blob(data)
        if header.get("engine") != ENGINE_NAME:
            raise WorkbookError("The stored calculation model belongs to another engine")
        try:
            model = ironcalc.load_from_bytes(payload)
            ranges = [_Range(**_tuples(r)) for r in header["ranges"]]
        except BaseException as exc:
            if not _is_engine_failure(exc):
                raise
            log.warning("Stored IronCalc %s model unreadable: %r", header.get("ironcalc"), exc)
            raise WorkbookError("The stored calculation model is unreadable") from None
        return IronCalcWorkbook(model, ranges, all_dirty=True)


    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[tuple[str, Any]], set[str]]:
        """Every requested (sheet, row, col) recalculated, and the functions IronCalc lacks.

        Values are ("n", float), ("s", str), ("b", bool), ("e", code) or ("empty", None).
        """
        model = self.load_xlsx(data)._model
        try:
            model.evaluate()
        except BaseException as exc:
            if not _is_engine_failure(exc):
                raise
            raise WorkbookError("The workbook could not be calculated") from None
        index_of = {p["name"].lower(): i for i, p in enumerate(model.get_worksheets_properties())}
        values = []
        for sheet, row, col in cells:
            index = index_of.get(sheet.lower())
            values.append(("empty", None) if index is None else _cell_value(model, index, row, col))
        return values, unknown_functions(functions)


def _cell_value(model: "ironcalc.Model", sheet: int, row: int, col: int) -> tuple[str, Any]:
    value = model.get_cell_value(sheet, row, col)
    if value is None:
        return ("empty", None)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    if model.get_cell_type(sheet, row, col) == _ERROR:
        return ("e", value)
    return ("s", value)


def unknown_functions(functions: set[str]) -> set[str]:
    """Functions IronCalc does not parse (it keeps them lower case) or does not implement."""
    if not functions:
        return set()
    scratch = ironcalc.create("functions", LOCALE, TIMEZONE)
    unknown = set()
    for name in sorted(functions):
        if not re.fullmatch(r"[A-Z][A-Z0-9._]*", name):
            continue
        scratch.set_user_input(0, 1, 1, f"={name}()")
        scratch.evaluate()
        shown = scratch.get_cell_formula(0, 1, 1) or ""
        if not shown.startswith(f"={name}(") or scratch.get_cell_value(0, 1, 1) == "#N/IMPL!":
            unknown.add(name)
    return unknown


def _load_model(data: bytes) -> "ironcalc.Model":
    """IronCalc reads xlsx from a path only."""
    fd, path = tempfile.mkstemp(suffix=".xlsx")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return ironcalc.load_from_xlsx(path, LOCALE, TIMEZONE)
    finally:
        os.unlink(path)


def _relative_sheet_rels(data: bytes) -> bytes | None:
    """The package with absolute worksheet relationship targets made relative, or None.

    openpyxl writes comment parts as Target="/xl/comments/comment1.xml"; IronCalc 0.9.1 fails
    to find those ("specified file not found in archive") though they are valid OPC.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        names = [n for n in src.namelist() if _SHEET_RELS.fullmatch(n)]
        if not any(b'Target="/xl/' in src.read(n) for n in names):
            return None
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                part = src.read(info.filename)
                if info.filename in names:
                    part = part.replace(b'Target="/xl/', b'Target="../')
                dst.writestr(info, part)
    return out.getvalue()


def _tuples(fields: dict) -> dict:
    """JSON turned the original-content tuples into lists; turn them back."""
    originals = fields.get("originals")
    if originals is not None:
        fields = {**fields, "originals": [tuple(o) if o is not None else None for o in originals]}
    return fields
