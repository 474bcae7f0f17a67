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

import datetime
import io
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from typing import Any
from xml.sax.saxutils import escape

from shared.calc.base import NamedRange, pack_blob, unpack_blob
from shared.calc.refs import CellBox, cell_name, column_number, parse_range_formula
from shared.calc.values import (
    date_scalar,
    datetime_to_serial,
    is_date_format,
    number_out,
    place_input,
    serial_to_iso,
    shape_output,
)
from shared.errors import WorkbookError

log = logging.getLogger(__name__)

ENGINE_NAME = "formulas"
BOOK_NAME = "workbook.xlsx"  # formulas keys cells by file name: '[workbook.xlsx]SHEET'!A1
_UNREADABLE = "The file is not a readable .xlsx workbook"
_KEY_RE = re.compile(r"^'\[[^\]]*\](.*)'!([A-Z]+)(\d+)(?::([A-Z]+)(\d+))?$")


@dataclass
class _Range:
    name: str
    sheet: str
    top: int
    left: int
    bottom: int
    right: int
    kind: str
    date_cells: list[bool]
    originals: list[Any] | None  # inputs only: number, text, bool or None

    @property
    def box(self) -> CellBox:
        return CellBox(self.sheet, self.top, self.left, self.bottom, self.right)

    def keys(self) -> list[str]:
        return [cell_key(self.sheet, r, c) for r, c in self.box.cells()]

    def public(self) -> NamedRange:
        box = self.box
        return NamedRange(
            self.name, self.sheet, box.ref, self.kind, box.rows, box.cols, self.date_cells[0]
        )


def cell_key(sheet: str, row: int, col: int) -> str:
    """formulas' node id of a cell."""
    return f"'[{BOOK_NAME}]{sheet.upper()}'!{cell_name(row, col)}"


def _quiet_environment() -> None:
    # formulas draws progress bars on stderr; numpy's BLAS spawns a thread per core.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def build_model(data: bytes):
    """A finished formulas ExcelModel of the xlsx (circular references allowed)."""
    _quiet_environment()
    import formulas

    from shared.calc.formulas_functions import install

    install()
    with tempfile.TemporaryDirectory(prefix="sheetcalc-formulas-") as folder:
        path = os.path.join(folder, BOOK_NAME)
        with open(path, "wb") as handle:
            handle.write(data)
        try:
            return formulas.ExcelModel().loads(path).finish(circular=True)
        except Exception as exc:  # noqa: BLE001 - formulas raises anything from its parsers
            log.info("formulas could not read a workbook: %r", exc)
            raise WorkbookError(_UNREADABLE) from None


def to_value(raw: Any) -> tuple[str, Any]:
    """A formulas result as ("n"|"s"|"b"|"e"|"empty", value)."""
    import formulas
    import numpy as np
    import schedula as sh
    from formulas.excel import XlCircular

    if hasattr(raw, "value") and hasattr(raw, "ranges"):  # a Ranges
        raw = raw.value
    if isinstance(raw, np.ndarray):
        raw = raw.flat[0] if raw.size else sh.EMPTY
    if raw is sh.EMPTY or raw is None:
        return ("empty", None)
    if isinstance(raw, XlCircular):
        # formulas marks cells in (or fed by) a circular reference with XlCircular('#CIRC!'),
        # whose str() is "0" (what Excel shows for them without iterative calculation).
        # Read it as the circular-reference error IronCalc answers too, not as error "0".
        return ("e", "#CIRC!")
    if isinstance(raw, formulas.XlError):
        return ("e", str(raw))
    if isinstance(raw, (bool, np.bool_)):
        return ("b", bool(raw))
    if isinstance(raw, (int, float, np.integer, np.floating)):
        return ("n", float(raw))
    if isinstance(raw, str):
        return ("s", raw)
    return ("s", str(raw))


def _parse_key(key: Any) -> tuple[str, int, int, int | None, int | None] | None:
    """(SHEET, top, left, bottom, right) of an area node id, (SHEET, row, col, None, None) of a
    cell's, None for any other node."""
    match = _KEY_RE.match(key) if isinstance(key, str) else None
    if match is None:
        return None
    sheet, c1, r1, c2, r2 = match.groups()
    if c2 is None:
        return (sheet, int(r1), column_number(c1), None, None)
    return (sheet, int(r1), column_number(c1), int(r2), column_number(c2))


def solution_cells(solution: dict) -> dict[tuple[str, int, int], tuple[str, Any]]:
    """(SHEET, row, col) -> value for every cell a formulas solution holds."""
    import numpy as np

    out: dict[tuple[str, int, int], tuple[str, Any]] = {}
    ranges = []
    for key, result in solution.items():
        box = _parse_key(key)
        if box is None:
            continue
        if box[3] is None:
            out[box[:3]] = to_value(result)
        else:
            ranges.append((*box, result))
    # Cells only known through a range (array formulas) come from that range.
    for sheet, top, left, bottom, right, result in ranges:
        array = getattr(result, "value", None)
        if not isinstance(array, np.ndarray) or array.shape != (bottom - top + 1, right - left + 1):
            continue
        for dr in range(array.shape[0]):
            for dc in range(array.shape[1]):
                out.setdefault((sheet, top + dr, left + dc), to_value(array[dr, dc]))
    return out


class FormulasWorkbook:
    """A workbook for `formulas`; the model is built on first calculation. See base.Workbook."""

    engine_name = ENGINE_NAME

    def __init__(self, data: bytes, ranges: list[_Range]):
        self._data = data
        self._ranges = ranges
        self._exact = {r.name: r for r in ranges}
        self._folded = {r.name.lower(): r for r in ranges}
        self._model = None
        self._function = None  # compiled: every input cell in, every output cell out
        self._inputs: list[str] = []
        self._outputs: list[str] = []  # formulas nodes: output cells, or array areas holding them
        self._sources: dict[str, tuple[str, int, int] | None] = {}  # cell key -> its area
        self._last: dict[str, Any] | None = None  # input cell key -> value of the last job

    def named_ranges(self) -> list[NamedRange]:
        return [r.public() for r in self._ranges]

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
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
            key: by_node.get(key) if source is None else _area_cell(by_node.get(source[0]), *source[1:])
            for key, source in self._sources.items()
        }
        if outputs is None:
            targets = [r for r in self._ranges if r.kind == "output"]
        else:
            targets = [r for r in map(self._lookup, outputs) if r is not None]
        return {r.name: self._read(r, by_key) for r in targets}

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
                    value = (self._last or {}).get(key, _original(rng, row, col))
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

    def _lookup(self, name: str) -> _Range | None:
        return self._exact.get(name) or self._folded.get(name.lower())

    def _input_values(self, inputs: dict[str, Any], date_inputs: frozenset[str]) -> dict[str, Any]:
        """Every input cell's value for this job: given ones, else the uploaded ones."""
        import schedula as sh

        values: dict[str, Any] = {}
        for rng in self._ranges:
            if rng.kind == "input":
                for key, original in zip(rng.keys(), rng.originals):
                    values[key] = sh.EMPTY if original is None else original
        date_names = {n.lower() for n in date_inputs}
        for name, value in inputs.items():
            rng = self._lookup(name)
            if rng is None or rng.kind != "input":
                continue
            as_date = rng.name.lower() in date_names or name.lower() in date_names
            width = rng.right - rng.left + 1
            for dr, dc, scalar in place_input(rng.name, rng.bottom - rng.top + 1, width, value):
                scalar = date_scalar(rng.name, scalar, as_date or rng.date_cells[dr * width + dc])
                values[cell_key(rng.sheet, rng.top + dr, rng.left + dc)] = (
                    sh.EMPTY if scalar is None else scalar
                )
        return values

    def _read(self, rng: _Range, by_key: dict[str, Any]) -> Any:
        values = []
        for index, key in enumerate(rng.keys()):
            kind, value = to_value(by_key.get(key))
            if kind == "n":
                value = serial_to_iso(value) if rng.date_cells[index] else number_out(value)
            elif kind == "e" and value == "#CIRC!":
                raise WorkbookError("The workbook contains a circular reference")
            values.append(value)
        return shape_output(rng.bottom - rng.top + 1, rng.right - rng.left + 1, values)


def output_sources(cells: list[str], nodes) -> dict[str, tuple[str, int, int] | None]:
    """Where each output cell's value comes from: None for a cell node of its own, else the
    array formula's area node holding it and the cell's offset in it.

    formulas keeps an array formula (CSE or spilled) as one node for its whole area
    ('[workbook.xlsx]SHEET'!D1:E5), so its cells are not outputs it can compile on their own.
    """
    boxes = {node: _parse_key(node) for node in nodes}
    areas = [(*box, node) for node, box in boxes.items() if box is not None and box[3] is not None]
    sources: dict[str, tuple[str, int, int] | None] = {}
    for key in cells:
        sources[key] = None
        if key in nodes:
            continue
        sheet, row, col = _parse_key(key)[:3]
        for area_sheet, top, left, bottom, right, node in areas:
            if area_sheet == sheet and top <= row <= bottom and left <= col <= right:
                sources[key] = (node, row - top, col - left)
                break
    return sources


def _area_cell(area: Any, row: int, col: int) -> Any:
    """One cell of an array formula's result (empty where the result is smaller)."""
    import numpy as np
    import schedula as sh

    value = getattr(area, "value", area)  # a Ranges holds its array in .value
    array = np.atleast_2d(np.asarray(value, object)) if value is not None else None
    if array is None or row >= array.shape[0] or col >= array.shape[1]:
        return sh.EMPTY
    return array[row, col]


def _original(rng: _Range, row: int, col: int) -> Any:
    width = rng.right - rng.left + 1
    return rng.originals[(row - rng.top) * width + (col - rng.left)]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return float(datetime_to_serial(value))
    if isinstance(value, datetime.date):
        return float(datetime_to_serial(datetime.datetime.combine(value, datetime.time())))
    if isinstance(value, datetime.time):
        return (value.hour * 3600 + value.minute * 60 + value.second) / 86400
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _resolve_ranges(data: bytes) -> list[_Range]:
    """Usable named ranges (see IronCalc's rules): plain cell ranges on existing sheets."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), data_only=False)
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds on bad packages
        log.info("openpyxl could not read an upload: %r", exc)
        raise WorkbookError(_UNREADABLE) from None
    sheets = {name.lower(): name for name in book.sheetnames}
    entries = [(n, d.attr_text) for n, d in book.defined_names.items()]
    for ws in book.worksheets:
        entries += [(n, d.attr_text) for n, d in ws.defined_names.items()]
    ranges, seen = [], set()
    for name, text in entries:
        if name.lower() in seen or name.lower().startswith("_xlnm.") or not text:
            continue
        box = parse_range_formula(text)
        if box is None or box.sheet.lower() not in sheets:
            continue
        seen.add(name.lower())
        ws = book[sheets[box.sheet.lower()]]
        cells = [ws.cell(r, c) for r, c in box.cells()]
        has_formula = any(c.data_type == "f" for c in cells)
        date_cells = [is_date_format(c.number_format) for c in cells]
        originals = None if has_formula else [_plain(c.value) for c in cells]
        ranges.append(_Range(name, ws.title, box.top, box.left, box.bottom, box.right,
                             "output" if has_formula else "input", date_cells, originals))
    return ranges


class FormulasEngine:
    """Loads workbooks for `formulas`."""

    name = ENGINE_NAME

    def load_xlsx(self, data: bytes) -> FormulasWorkbook:
        if not data.startswith(b"PK"):
            raise WorkbookError(_UNREADABLE)
        return FormulasWorkbook(data, _resolve_ranges(data))

    def load_serialized(self, data: bytes) -> FormulasWorkbook:
        header, payload = unpack_blob(data)
        if header.get("engine") != ENGINE_NAME:
            raise WorkbookError("The stored calculation model belongs to another engine")
        try:
            ranges = [_Range(**r) for r in header["ranges"]]
        except (KeyError, TypeError) as exc:
            raise WorkbookError("The stored calculation model is unreadable") from exc
        return FormulasWorkbook(payload, ranges)

    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[tuple[str, Any]], set[str]]:
        """Every requested (sheet, row, col) recalculated, and the functions formulas lacks."""
        import formulas

        model = build_model(data)
        try:
            computed = solution_cells(model.calculate())
        except Exception as exc:  # noqa: BLE001
            log.info("formulas could not calculate a workbook: %r", exc)
            raise RuntimeError(f"formulas failed: {type(exc).__name__}") from None
        values = [computed.get((s.upper(), r, c), ("empty", None)) for s, r, c in cells]
        # INDIRECT("A1") with a literal is resolved by formulas' parser, not a function.
        known = {name.upper() for name in formulas.get_functions()} | {"INDIRECT"}
        return values, {f for f in functions if f not in known and f"_XLFN.{f}" not in known}


# --- writing values into a package ----------------------------------------------------------

_CELL_RE = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_R_ATTR = re.compile(rb'\br="([A-Z]+)(\d+)"')
_T_ATTR = re.compile(rb'\s+t="[^"]*"')
_F_ELEMENT = re.compile(rb"<f\b[^>]*?(?:/>|>.*?</f>)", re.DOTALL)


def _cell_xml(attrs: bytes, formula: bytes, value: Any) -> bytes:
    attrs = _T_ATTR.sub(b"", attrs)
    if value is None or value == ("empty", None):
        return b"<c" + attrs + (b">" + formula + b"</c>" if formula else b"/>")
    kind, raw = value if isinstance(value, tuple) else _kind_of(value)
    if kind == "n":
        text, t = repr(float(raw)).encode(), b""
        if float(raw).is_integer() and abs(raw) < 2**53:
            text = str(int(raw)).encode()
    elif kind == "b":
        text, t = (b"1" if raw else b"0"), b' t="b"'
    elif kind == "e":
        text, t = raw.encode(), b' t="e"'
    elif formula:
        text, t = escape(raw).encode(), b' t="str"'
    else:
        inline = escape(raw).encode()
        return b"<c" + attrs + b' t="inlineStr"><is><t xml:space="preserve">' + inline + b"</t></is></c>"
    return b"<c" + attrs + t + b">" + formula + b"<v>" + text + b"</v></c>"


def _kind_of(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", float(value))
    return ("s", str(value))


def write_values(
    data: bytes,
    formula_values: dict[tuple[str, int, int], Any],
    constants: dict[tuple[str, int, int], Any] | None = None,
) -> bytes:
    """The package with cached values written into formula cells and constants replaced.

    `formula_values` is keyed by (SHEET NAME IN ANY CASE, row, col) and holds ("n", 1.0)-style
    tuples or plain values; `constants` replaces non-formula cells that exist in the sheet XML.
    """
    import zipfile

    from shared.calc.fidelity import open_package, workbook_parts

    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    by_sheet: dict[str, tuple[dict, dict]] = {}
    upper_values: dict[str, dict] = {}
    for (sheet, row, col), value in formula_values.items():
        upper_values.setdefault(sheet.upper(), {})[(row, col)] = value
    upper_constants: dict[str, dict] = {}
    for (sheet, row, col), value in (constants or {}).items():
        upper_constants.setdefault(sheet.upper(), {})[(row, col)] = value
    for name, path in parts:
        by_sheet[path] = (upper_values.get(name.upper(), {}), upper_constants.get(name.upper(), {}))

    def rewrite(xml: bytes, values: dict, fixed: dict) -> bytes:
        def one(match: re.Match) -> bytes:
            attrs, body = match.group(1), match.group(2) or b""
            r = _R_ATTR.search(attrs)
            if r is None:
                return match.group(0)
            cell = (int(r.group(2)), column_number(r.group(1).decode()))
            formula = _F_ELEMENT.search(body)
            if formula is not None and cell in values:
                return _cell_xml(attrs, formula.group(0), values[cell])
            if formula is None and cell in fixed:
                return _cell_xml(attrs, b"", fixed[cell])
            return match.group(0)

        return _CELL_RE.sub(one, xml)

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in package.infolist():
            part = package.read(info.filename)
            if info.filename in by_sheet and any(by_sheet[info.filename]):
                part = rewrite(part, *by_sheet[info.filename])
            target.writestr(info, part)
    return out.getvalue()

