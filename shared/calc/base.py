"""The calculation-engine interface, the engine registry and the serialized-model framing."""

import importlib
import json
import struct
from dataclasses import dataclass
from typing import Any, Protocol

from shared.calc.refs import CellBox
from shared.calc.values import CellValue
from shared.errors import WorkbookError

DEFAULT_ENGINE = "ironcalc"

# Engines import their vendor library lazily: the worker pays only for the engine it uses.
_ENGINE_FACTORIES: dict[str, str] = {
    "ironcalc": "shared.calc.ironcalc.engine:IronCalcEngine",
    "formulas": "shared.calc.formulas.engine:FormulasEngine",
}
# Engines in order of speed: on equal fidelity the per-workbook choice takes the first.
ENGINE_PREFERENCE = ("ironcalc", "formulas")
_engines: dict[str, "CalcEngine"] = {}


@dataclass(frozen=True)
class NamedRange:
    """A workbook name that points at a plain cell range.

    `is_date` says whether the first cell shows a date; `date_cells` holds a flag per cell (row
    by row) only when the cells disagree, and None means every cell is like the first. Stored
    named ranges written before per-cell flags existed read back as None, hence as `is_date`.
    """

    name: str
    sheet: str
    ref: str
    kind: str
    rows: int
    cols: int
    is_date: bool = False
    date_cells: tuple[bool, ...] | None = None

    @classmethod
    def of_box(cls, name: str, box: CellBox, kind: str, date_cells: list[bool]) -> "NamedRange":
        """A named range over `box` with a date flag per cell, row by row."""
        mixed = len(set(date_cells)) > 1
        return cls(
            name, box.sheet, box.ref, kind, box.rows, box.cols, date_cells[0],
            tuple(date_cells) if mixed else None,
        )

    @classmethod
    def from_dict(cls, data: dict) -> "NamedRange":
        """A named range as to_dict stored it (EngineVersion.named_ranges)."""
        date_cells = data.get("date_cells")
        return cls(
            data["name"], data["sheet"], data["ref"], data["kind"], data["rows"], data["cols"],
            bool(data.get("is_date", False)),
            tuple(bool(d) for d in date_cells) if date_cells is not None else None,
        )

    def cell_is_date(self, index: int) -> bool:
        """Whether the cell at `index` (row by row from the top left) shows a date."""
        return self.is_date if self.date_cells is None else self.date_cells[index]

    def to_dict(self) -> dict:
        data = {
            "name": self.name,
            "sheet": self.sheet,
            "ref": self.ref,
            "kind": self.kind,
            "rows": self.rows,
            "cols": self.cols,
            "is_date": self.is_date,
        }
        if self.date_cells is not None:
            data["date_cells"] = list(self.date_cells)
        return data


class Workbook(Protocol):
    """A loaded, mutable workbook. Not thread-safe: hold ModelCache.checkout while using it."""

    engine_name: str

    def named_ranges(self) -> list[NamedRange]:
        """Every usable named range, inputs and outputs, in workbook order."""
        ...

    def calculate(
        self,
        inputs: dict[str, Any],
        outputs: list[str] | None = None,
        date_inputs: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """Reset inputs to the uploaded values, write `inputs`, recalculate, read `outputs`."""
        ...

    def flagged_outputs(self, outputs: list[str]) -> list[str]:
        """The outputs of the last calculation that come from a cell the engine could not
        compute as Excel would for its inputs (never returned as Excel's answer)."""
        ...

    def to_xlsx(self) -> bytes:
        """The workbook as of the last calculation, formulas and computed values included."""
        ...

    def serialize(self) -> bytes:
        """A blob that the same engine's load_serialized turns back into this workbook."""
        ...


class CalcEngine(Protocol):
    """Turns uploaded or serialized bytes into Workbooks."""

    name: str

    def load_xlsx(self, data: bytes) -> Workbook:
        """Parse an uploaded .xlsx; raises WorkbookError when it cannot be read."""
        ...

    def load_serialized(self, data: bytes) -> Workbook:
        """Restore a Workbook from serialize(); raises WorkbookError on a foreign blob."""
        ...

    def recalculate_cells(
        self, data: bytes, cells: list[tuple[str, int, int]], functions: set[str]
    ) -> tuple[list[CellValue], set[str]]:
        """Recalculate an uploaded .xlsx for the fidelity check: the value of every requested
        (sheet, row, col) in request order, and which of `functions` this engine lacks."""
        ...


def available_engines() -> list[str]:
    """The names get_engine knows, sorted."""
    return sorted(_ENGINE_FACTORIES)


def get_engine(name: str = DEFAULT_ENGINE) -> CalcEngine:
    """The engine registered under `name`; ValueError for an unknown name."""
    engine = _engines.get(name)
    if engine is None:
        if name not in _ENGINE_FACTORIES:
            raise ValueError(f"Unknown calculation engine {name!r}; known: {available_engines()}")
        module_name, class_name = _ENGINE_FACTORIES[name].split(":")
        engine = getattr(importlib.import_module(module_name), class_name)()
        _engines[name] = engine
    return engine


# Serialized models: magic, format version, header length, JSON header, engine payload.
# The header always carries "engine" so a blob can be routed without knowing its origin.
_MAGIC = b"SCALC"
_PREFIX = struct.Struct(">5sBI")
BLOB_FORMAT = 1


def pack_blob(engine: str, header: dict[str, Any], payload: bytes) -> bytes:
    meta = json.dumps({**header, "engine": engine}, separators=(",", ":")).encode("utf-8")
    return _PREFIX.pack(_MAGIC, BLOB_FORMAT, len(meta)) + meta + payload


def unpack_blob(data: bytes) -> tuple[dict[str, Any], bytes]:
    """(header, payload) of a serialized model; WorkbookError when it is not one."""
    try:
        magic, version, meta_len = _PREFIX.unpack_from(data)
        if magic != _MAGIC or version != BLOB_FORMAT:
            raise ValueError("not a sheetcalc blob")
        start = _PREFIX.size
        header = json.loads(data[start : start + meta_len].decode("utf-8"))
        return header, data[start + meta_len :]
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise WorkbookError("The stored calculation model is unreadable") from exc


def blob_engine_name(data: bytes) -> str:
    """Which engine wrote a serialized model."""
    return unpack_blob(data)[0]["engine"]
