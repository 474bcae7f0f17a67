"""GETPIVOTDATA answered from the workbook's own pivot table, as Excel saved it.

Rules from Microsoft's "GETPIVOTDATA function" page (support.microsoft.com): the function
"returns visible data from a PivotTable"; data_field is the Values field's name in quotes (the
page's `=GETPIVOTDATA("Sales",A3)` names it by its source field); pivot_table is any cell of
the table; field/item pairs in any order, none for the grand total; "If the field and item
arguments describe a single cell, then the value of that cell is returned"; arguments may be
references (`=GETPIVOTDATA("Sales",$A$3,"Month",$A11)`); #REF! when pivot_table is not in a
PivotTable, when a field or item is not valid, or when the pairs do not describe a visible
cell. Conformance YAML cases cannot hold a pivot table, so the cases live here.

The pivot table is Excel's (tests/corpus/ironcalc/xlsx/tests/example.xlsx, saved by Microsoft
Macintosh Excel): sheet Sheet4, A3:B13, "Sum of Year" over the cars Cars > Make > Other in
compact form. Its rendered cells as Excel saved them are the expected values:

    A3 Row Labels  B3 Sum of Year
    A4 C6          B4 1980      A8 Mercedes  B8 1980
    A5 Citroen     B5 1980      A9 B         B9 1980
    A6 A           B6 1980      A10 R5       B10 1975
    A7 MB          B7 1980      ...          B13 5935 (Grand Total)
"""

import re
from pathlib import Path

import pytest

from shared.calc.corrections.functions.pivots import Unresolved, pivots_of, rewritten
from tests.packages import edit_parts

from .conftest import uploaded_and_stored

EXAMPLE = Path(__file__).parents[1] / "corpus" / "ironcalc" / "xlsx" / "tests" / "example.xlsx"
SHEET4 = "xl/worksheets/sheet3.xml"  # the workbook's third sheet, "Sheet4", holds the pivot table

CASES = [  # (cell, formula, Excel's answer)
    ("D3", 'GETPIVOTDATA("Sum of Year",$A$3)', 5935.0),  # no pair: the grand total
    ("D4", 'GETPIVOTDATA("Year",$B$7)', 5935.0),  # the source field's name, any cell of the table
    ("D5", 'GETPIVOTDATA("sum of year",Sheet4!A3,"cars","c6")', 1980.0),  # names ignore case
    ("D6", 'GETPIVOTDATA("Sum of Year",$A$3,"Make","Renault","Cars","R5")', 1975.0),  # any order
    ("D7", 'GETPIVOTDATA("Sum of Year",$A$3,"Cars","MB","Make","Mercedes","Other","B")*2', 3960.0),
    ("D8", 'GETPIVOTDATA("Sum of Year",$A$3,"Cars","XX")', "#REF!"),  # no such item
    ("D9", 'GETPIVOTDATA("Sum of Year",$A$3,"Cars","C6","Make","Citroen","Other","B")', "#REF!"),
    ("D10", 'GETPIVOTDATA("Count of Year",$A$3)', "#REF!"),  # no such Values field
    ("D11", 'GETPIVOTDATA("Sum of Year",$A$3,"Colour","Red")', "#REF!"),  # no such field
    ("D12", 'GETPIVOTDATA("Sum of Year",$H$20)', "#REF!"),  # not in a pivot table
    ("D13", 'GETPIVOTDATA("Sum of Year",$A$3,"Cars",$F$3)', 1980.0),  # the item from an input cell
]
FLAGGED = [  # forms the saved table does not settle: left alone and flagged
    ("E3", 'GETPIVOTDATA("Sum of Year",$A$3,"Make","Citroen")'),  # a nested field without its parent
    ("E4", 'GETPIVOTDATA("Sum of Year",$A$3,"Cars",1980)'),  # a number for a field of texts
    ("E5", 'GETPIVOTDATA($F$4,$A$3)'),  # data_field from a cell
]


def _with_formulas(cells: list[tuple[str, str]], values: dict[str, str]) -> bytes:
    """example.xlsx with formulas (and constants) written into Sheet4 and names over them."""
    by_row: dict[int, list[str]] = {}
    for address, formula in cells:
        by_row.setdefault(int(address[1:]), []).append(f"<c r=\"{address}\"><f>{_xml(formula)}</f></c>")
    for address, value in values.items():
        by_row.setdefault(int(address[1:]), []).append(f"<c r=\"{address}\" t=\"inlineStr\"><is><t>{value}</t></is></c>")

    def sheet(part: bytes) -> bytes:
        text = part.decode()
        for row, xml in by_row.items():
            added = "".join(sorted(xml))
            text, count = re.subn(rf'(<row r="{row}"[^>]*>.*?)(</row>)', rf"\g<1>{added}\g<2>", text, count=1, flags=re.DOTALL)
            assert count == 1
        return text.replace('<dimension ref="A3:B13"/>', '<dimension ref="A3:F13"/>').encode()

    def workbook(part: bytes) -> bytes:
        names = (
            '<definedName name="car">Sheet4!$F$3</definedName>'
            '<definedName name="answers">Sheet4!$D$3:$D$13</definedName>'
        )
        return part.replace(b"<definedNames>", b"<definedNames>" + names.encode())

    data = EXAMPLE.read_bytes()
    return edit_parts(data, {SHEET4: sheet, "xl/workbook.xml": workbook})


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@pytest.fixture(scope="module")
def workbook_bytes() -> bytes:
    return _with_formulas(
        [(c, f) for c, f, _ in CASES] + FLAGGED, {"F3": "C6", "F4": "Sum of Year"},
    )


def test_getpivotdata_reads_the_saved_pivot_table(workbook_bytes):
    expected = [answer for _, _, answer in CASES]
    for workbook in uploaded_and_stored(workbook_bytes):
        assert workbook.calculate({})["answers"] == expected


def test_an_item_from_an_input_cell_follows_the_input(workbook_bytes):
    for workbook in uploaded_and_stored(workbook_bytes):
        assert workbook.calculate({"car": "r5"}, ["answers"])["answers"][-1] == 1975.0
        assert workbook.calculate({"car": "MB"}, ["answers"])["answers"][-1] == 1980.0
        assert workbook.calculate({"car": "Mercedes"}, ["answers"])["answers"][-1] == "#REF!"  # an item of Make
        assert workbook.calculate({"car": 1980}, ["answers"])["answers"][-1] == "#REF!"


def test_the_export_keeps_the_formulas(workbook_bytes):
    import io

    import openpyxl

    workbook = uploaded_and_stored(workbook_bytes)[0]
    workbook.calculate({})
    sheet = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Sheet4"]
    assert sheet["D5"].value == '=GETPIVOTDATA("sum of year",Sheet4!A3,"cars","c6")'
    assert sheet["D13"].value == '=GETPIVOTDATA("Sum of Year",$A$3,"Cars",$F$3)'


def test_the_upload_flags_only_the_forms_left_alone(workbook_bytes):
    from shared.calc.fidelity.check import check

    report = check(workbook_bytes, "ironcalc")
    flagged = {f["cell"]: f["reason"] for f in report.flagged if f["sheet"] == "Sheet4"}
    assert sorted(flagged) == ["E3", "E4", "E5"], flagged
    assert "without the fields outside it" in flagged["E3"]
    assert "GETPIVOTDATA" in flagged["E4"]


def test_layout_rules_of_the_pivot_table_part():
    pivots = pivots_of(EXAMPLE.read_bytes())
    answer = lambda formula: rewritten(formula, "Sheet4", pivots)
    # a referenced item chooses among the cells of its level, anything else is #REF!
    assert answer('GETPIVOTDATA("Year",$A$3,"Cars",C1,"Make",C2,"Other",C3)') == (
        "IF(AND(C1=\"C6\",C2=\"Citroen\",C3=\"A\"),'Sheet4'!$B$6,"
        "IF(AND(C1=\"MB\",C2=\"Mercedes\",C3=\"B\"),'Sheet4'!$B$9,"
        "IF(AND(C1=\"R5\",C2=\"Renault\",C3=\"A\"),'Sheet4'!$B$12,#REF!)))"
    )
    # an item combination the table does not show, at a subtotal level whose subtotals are on
    assert answer('GETPIVOTDATA("Year",$A$3,"Cars","C6","Make","Renault")') == "#REF!"
    # report filters, arrays of items and names are not read
    for formula in ('GETPIVOTDATA("Year",$A$3,"Cars",{"C6","MB"})', 'GETPIVOTDATA("Year",Report)',
                    'GETPIVOTDATA("Year",$A$3,"Cars",UPPER(C1))'):
        with pytest.raises(Unresolved):
            answer(formula)
    # without any pivot table, every reference is outside one
    assert rewritten('GETPIVOTDATA("Sales",$A$3)+1', "Sheet1", pivots_of(_plain())) == "#REF!+1"


def _plain() -> bytes:
    import openpyxl

    from .conftest import to_bytes

    return to_bytes(openpyxl.Workbook())


# --- a hand-written part: two Values fields across the columns ------------------------------

_MAIN = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_RELS = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
_TYPE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
# Region on rows, the Values field ("-2") on columns, as Excel lays it out in compact form:
#   A3 -            B3 Values
#   A4 Row Labels   B4 Sum of Sales  C4 Count of Sales
#   A5 East         B5 300           C5 2
#   A6 West         B6 150           C6 1
#   A7 Grand Total  B7 450           C7 3
_PIVOT_TABLE = f"""<pivotTableDefinition {_MAIN} name="PivotTable1" cacheId="1" dataCaption="Values">
<location ref="A3:C7" firstHeaderRow="1" firstDataRow="2" firstDataCol="1"/>
<pivotFields count="2"><pivotField axis="axisRow" showAll="0"><items count="3"><item x="0"/><item x="1"/>
<item t="default"/></items></pivotField><pivotField dataField="1" showAll="0"/></pivotFields>
<rowFields count="1"><field x="0"/></rowFields>
<rowItems count="3"><i><x/></i><i><x v="1"/></i><i t="grand"><x/></i></rowItems>
<colFields count="1"><field x="-2"/></colFields>
<colItems count="2"><i><x/></i><i i="1"><x v="1"/></i></colItems>
<dataFields count="2"><dataField name="Sum of Sales" fld="1" baseField="0" baseItem="0"/>
<dataField name="Count of Sales" fld="1" subtotal="count" baseField="0" baseItem="0"/></dataFields>
</pivotTableDefinition>"""
_CACHE = f"""<pivotCacheDefinition {_MAIN} recordCount="3"><cacheSource type="worksheet">
<worksheetSource ref="E1:F4" sheet="Sheet"/></cacheSource><cacheFields count="2">
<cacheField name="Region" numFmtId="0"><sharedItems count="2"><s v="East"/><s v="West"/></sharedItems></cacheField>
<cacheField name="Sales" numFmtId="0"><sharedItems containsNumber="1" minValue="50" maxValue="250"/></cacheField>
</cacheFields></pivotCacheDefinition>"""


def _two_values_fields() -> bytes:
    import openpyxl

    from .conftest import to_bytes

    wb = openpyxl.Workbook()
    ws = wb.active
    for row in ([None, "Values"], ["Row Labels", "Sum of Sales", "Count of Sales"], ["East", 300, 2],
                ["West", 150, 1], ["Grand Total", 450, 3]):
        ws.append(row)
    ws.insert_rows(1, 2)
    return edit_parts(to_bytes(wb), {}, add={
        "xl/worksheets/_rels/sheet1.xml.rels": f'<Relationships {_RELS}><Relationship Id="rId9" '
        f'Type="{_TYPE}pivotTable" Target="../pivotTables/pivotTable1.xml"/></Relationships>',
        "xl/pivotTables/pivotTable1.xml": _PIVOT_TABLE,
        "xl/pivotTables/_rels/pivotTable1.xml.rels": f'<Relationships {_RELS}><Relationship Id="rId1" '
        f'Type="{_TYPE}pivotCacheDefinition" Target="../pivotCache/pivotCacheDefinition1.xml"/></Relationships>',
        "xl/pivotCache/pivotCacheDefinition1.xml": _CACHE,
    })


def test_values_fields_across_the_columns():
    pivots = pivots_of(_two_values_fields())
    answer = lambda formula: rewritten(formula, "Sheet", pivots)
    assert answer('GETPIVOTDATA("Sum of Sales",$A$3,"Region","East")') == "'Sheet'!$B$5"
    assert answer('GETPIVOTDATA("Count of Sales",$C$7,"Region","west")') == "'Sheet'!$C$6"
    assert answer('GETPIVOTDATA("Count of Sales",$A$3)') == "'Sheet'!$C$7"
    assert answer('GETPIVOTDATA("Count of Sales",$A$3,"Region",B1)') == (
        "IF(B1=\"East\",'Sheet'!$C$5,IF(B1=\"West\",'Sheet'!$C$6,#REF!))"
    )
    with pytest.raises(Unresolved, match="two Values fields"):
        answer('GETPIVOTDATA("Sales",$A$3)')  # "Sales" is the source of both
