"""Fixtures for the calculation-engine tests: small workbooks built with openpyxl."""

import io
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from shared.calc import get_engine

LOAN_QUOTE = Path(__file__).resolve().parents[2] / "examples" / "loan-quote.xlsx"


def add_name(wb: openpyxl.Workbook, name: str, ref: str, sheet: str | None = None) -> None:
    """Define a workbook-scoped name, or a sheet-scoped one when `sheet` is given."""
    if sheet is None:
        wb.defined_names[name] = DefinedName(name, attr_text=ref)
    else:
        wb[sheet].defined_names[name] = DefinedName(name, attr_text=ref)


def to_bytes(wb: openpyxl.Workbook) -> bytes:
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def uploaded_and_stored(data: bytes) -> tuple:
    """The IronCalc workbook of an upload and the same restored from its stored model, as a
    job gets it: every correction must hold on both."""
    workbook = get_engine("ironcalc").load_xlsx(data)
    return workbook, get_engine("ironcalc").load_serialized(workbook.serialize())


@pytest.fixture
def engine():
    return get_engine("ironcalc")


@pytest.fixture
def load(engine) -> Callable[[openpyxl.Workbook], object]:
    """Save an openpyxl workbook and load it into the engine."""
    return lambda wb: engine.load_xlsx(to_bytes(wb))


@pytest.fixture
def loan_bytes() -> bytes:
    return LOAN_QUOTE.read_bytes()
