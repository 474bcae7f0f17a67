"""The survey that finds, at upload, the formulas a correction may rewrite
(shared/calc/corrections/package.survey): only formulas count, never a cached value or a text
cell that happens to read like one, and a sheet that is mostly data costs one pass.
"""

import io
import re

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc import get_engine
from shared.calc.corrections.package import survey

from ..packages import edit_sheet
from .conftest import add_name, to_bytes

LOOKUP = re.compile(rb"(?:LOOKUP|MATCH)\(")


def data_sheet(rows: int) -> openpyxl.Workbook:
    """A sheet of `rows` rows of data with its summary at the top, as data sheets carry them;
    some of the data is text that reads like a lookup formula."""
    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet.title = "Data"
    sheet["F1"] = "=SUM(A1:A100)"
    sheet["F2"] = "=VLOOKUP(5,A1:B100,2,FALSE)"
    sheet["F3"] = ArrayFormula("F3", "=MATCH(7,A1:A100*1,0)")
    for r in range(1, rows + 1):
        for col, value in enumerate((r, r * 2, "VLOOKUP(x)" if r % 2 else "text"), start=1):
            sheet.cell(r, col, value)
    return wb


def saved(wb: openpyxl.Workbook) -> bytes:
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def test_only_formulas_that_mention_the_pattern_are_found_and_array_formulas_named():
    written: dict = {}
    candidates, arrays = survey(saved(data_sheet(50)), LOOKUP, (b"LOOKUP(", b"MATCH("), written)
    assert candidates == {(0, 2, 6), (0, 3, 6)}  # F2 and F3; the text cells in C are data
    assert arrays == {(0, 3, 6)}
    assert written[(0, 2, 6)] == "VLOOKUP(5,A1:B100,2,FALSE)"


def test_every_cell_of_a_shared_formula_is_found_through_its_group():
    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet["A1"] = 1
    data = saved(wb)
    # Excel writes a formula filled down once, the other cells pointing at it by group
    xml_cells = ('<c r="B1"><f t="shared" ref="B1:B3" si="0">MATCH(A1,A:A,0)</f><v>1</v></c>'
                 '<c r="B2"><f t="shared" si="0"/><v>1</v></c>'
                 '<c r="B3"><f t="shared" si="0"/><v>1</v></c>'
                 '<c r="C1" t="str"><v>MATCH(</v></c>')
    data = edit_sheet(data, lambda xml: re.sub(r'<row r="1"[^>]*>.*?</row>', f'<row r="1">{xml_cells}</row>',
                                               xml, flags=re.DOTALL))
    candidates, _ = survey(data, LOOKUP, (b"MATCH(",))
    assert candidates == {(0, 1, 2), (0, 2, 2), (0, 3, 2)}


def test_a_sheet_of_data_under_a_few_formulas_is_read_in_one_pass():
    # 20,000 rows of values after three formulas: each value cell used to be searched back to
    # the formula before it (quadratic; minutes at this size). The survey now reads the
    # formulas once; the answers of the upload are the formulas' own.
    wb = data_sheet(20_000)
    add_name(wb, "total", "Data!$F$1")
    add_name(wb, "found", "Data!$F$2")
    book = get_engine("ironcalc").load_xlsx(to_bytes(wb))
    assert book.calculate({}, outputs=["total", "found"]) == {"total": 5050, "found": 10}
