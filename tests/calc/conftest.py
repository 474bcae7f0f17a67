"""Fixtures for the calculation-engine tests: small workbooks built with openpyxl."""

import io
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils.datetime import CALENDAR_MAC_1904
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


def one_sheet(cells: Mapping[str, object], names: Mapping[str, str] | None = None, *, title: str = "Sheet1",
              date1904: bool = False) -> bytes:
    """A workbook of one sheet: ``cells`` by address (numbers, text or ``=formulas``) and
    workbook-scoped ``names`` for addresses on that sheet (``{"rate": "$A$1"}``), in the 1904
    date system when ``date1904``."""
    book = openpyxl.Workbook()
    if date1904:
        book.epoch = CALENDAR_MAC_1904
    sheet = book.active
    sheet.title = title
    for address, value in cells.items():
        sheet[address] = value
    for name, ref in (names or {}).items():
        add_name(book, name, f"{title}!{ref}")
    return to_bytes(book)


def named_formulas(
    formulas: Mapping[str, str], *, column: str = "C", cells: Mapping[str, object] | None = None,
    names: Mapping[str, str] | None = None, date1904: bool = False,
) -> bytes:
    """One formula per row of ``column`` from row 1, each named as its key (the outputs), beside
    ``cells`` and their ``names`` (the inputs); in the 1904 date system when ``date1904``."""
    placed = {f"{column}{row}": formula for row, formula in enumerate(formulas.values(), start=1)}
    outputs = {name: f"${column}${row}" for row, name in enumerate(formulas, start=1)}
    return one_sheet({**(cells or {}), **placed}, {**(names or {}), **outputs}, date1904=date1904)


def assert_answers(formula: str, excel, rel: float = 1e-12) -> None:
    """The formula alone in a workbook, uploaded and restored, answers Excel's error code, or its
    number to `rel` (with no absolute tolerance: a tiny probability is not 0)."""
    for workbook in uploaded_and_stored(named_formulas({"out": formula})):
        value = workbook.calculate({})["out"]
        if isinstance(excel, str):
            assert value == excel
        else:
            assert value == pytest.approx(excel, rel=rel, abs=0)


def assert_each_answers(cases: Mapping[str, tuple[str, float]], rel: float = 1e-12) -> None:
    """The formulas of `cases` (name -> (formula, expected number)), named outputs of one
    workbook, uploaded and restored, each answer their number to `rel` (no absolute tolerance),
    and the upload flags no cell."""
    book = named_formulas({name: formula for name, (formula, _) in cases.items()})
    for workbook in uploaded_and_stored(book):
        outputs = workbook.calculate({})
        for name, (formula, expected) in cases.items():
            assert outputs[name] == pytest.approx(expected, rel=rel, abs=0), formula
        assert workbook.correction_flags() == []


def saved_sheet_xml(workbook, number: int = 1) -> str:
    """The XML of a sheet of the workbook as the engine saves it (the filled workbook)."""
    with zipfile.ZipFile(io.BytesIO(workbook.to_xlsx())) as package:
        return package.read(f"xl/worksheets/sheet{number}.xml").decode()


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
