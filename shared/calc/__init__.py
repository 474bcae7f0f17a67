"""Calculation engines: load a workbook, find its named ranges, write inputs, read outputs."""

from shared.calc.base import (
    DEFAULT_ENGINE,
    ENGINE_PREFERENCE,
    CalcEngine,
    NamedRange,
    Workbook,
    available_engines,
    blob_engine_name,
    get_engine,
)
from shared.calc.cache import ModelCache

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINE_PREFERENCE",
    "CalcEngine",
    "ModelCache",
    "NamedRange",
    "Workbook",
    "available_engines",
    "blob_engine_name",
    "get_engine",
]
