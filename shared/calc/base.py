"""The calculation-engine interface, the engine registry and the serialized-model framing."""

import importlib
import json
import struct
from dataclasses import dataclass
from typing import Any, Protocol

from shared.errors import WorkbookError

DEFAULT_ENGINE = "ironcalc"

# Engines import their vendor library lazily: the worker pays only for the engine it uses.
_ENGINE_FACTORIES: dict[str, str] = {
    "ironcalc": "shared.calc.ironcalc_engine:IronCalcEngine",
    "formulas": "shared.calc.formulas_engine:FormulasEngine",
}
# Engines in order of speed: on equal fidelity the per-workbook choice takes the first.
ENGINE_PREFERENCE = ("ironcalc", "formulas")
_engines: dict[str, "CalcEngine"] = {}


@dataclass(frozen=True)
class NamedRange:
    """A workbook name that points at a plain cell range."""

    name: str
    sheet: str
    ref: str
    kind: str
    rows: int
    cols: int
    is_date: bool = False

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "sheet": self.sheet,
            "ref": self.ref,
            "kind": self.kind,
            "rows": self.rows,
            "cols": self.cols,
            "is_date": self.is_date,
        }


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


def available_engines() -> list[str]:
    return sorted(_ENGINE_FACTORIES)


def register_engine(name: str, factory_path: str) -> None:
    """Register an engine class as "module.path:ClassName" (constructed without arguments)."""
    _ENGINE_FACTORIES[name] = factory_path
    _engines.pop(name, None)


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
