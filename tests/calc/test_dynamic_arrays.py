"""Excel 365's dynamic arrays and LAMBDA functions through the correction layer
(shared/calc/corrections/dynamic/): workbooks written as Excel writes them (`_xlfn.` and
`_xlpm.` prefixes, `t="array"` formulas with `cm` cell metadata), loaded as an upload is,
restored as a job gets them, inputs written, outputs read through named ranges.

Expected values are Excel's: the examples of Microsoft's function pages (cited per test) and
cells Excel saved in the corpus (tests/corpus/).
"""

import io
import re
import zipfile

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.table import Table

from shared.calc.corrections.dynamic import as_written, spill_areas
from shared.calc.corrections.dynamic.evaluate import Book, Evaluator
from shared.calc.corrections.dynamic.values import general

from .conftest import add_name, uploaded_and_stored

BYROW_PAGE = "https://support.microsoft.com/en-us/office/byrow-function-2e04c677-78c8-4e6b-8c10-a4602f2602bb"
COUNT_PAGE = "https://support.microsoft.com/en-us/office/count-function-a59cd7fc-b623-4d93-87a4-d23bf411294c"

_METADATA = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<metadata xmlns="http://schemas.openxmlformats.org/'
    'spreadsheetml/2006/main" xmlns:xda="http://schemas.microsoft.com/office/spreadsheetml/2017/dynamicarray">'
    '<metadataTypes count="1"><metadataType name="XLDAPR" minSupportedVersion="120000" copy="1" pasteAll="1" '
    'pasteValues="1" merge="1" splitFirst="1" rowColShift="1" clearFormats="1" clearComments="1" assign="1" '
    'coerce="1" cellMeta="1"/></metadataTypes><futureMetadata name="XLDAPR" count="1"><bk><extLst><ext '
    'uri="{bdbb8cdc-fa1e-496e-a857-3c3f30c029c3}"><xda:dynamicArrayProperties fDynamic="1" fCollapsed="0"/>'
    '</ext></extLst></bk></futureMetadata><cellMetadata count="1"><bk><rc t="1" v="0"/></bk></cellMetadata></metadata>'
)


def excel365(wb: openpyxl.Workbook) -> bytes:
    """The workbook as Excel 365 saves it: every array formula a dynamic array (cm="1" and the
    XLDAPR metadata part, as in the corpus' BYCOL_BYROW.xlsx)."""
    buffer = io.BytesIO()
    wb.save(buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename.startswith("xl/worksheets/sheet"):
                data = re.sub(rb'<c r="([A-Z]+\d+)"([^>]*)><f t="array"', rb'<c r="\1"\2 cm="1"><f t="array"', data)
            elif info.filename == "xl/_rels/workbook.xml.rels":
                data = data.replace(b"</Relationships>", b'<Relationship Id="rIdMeta" Type="http://schemas.'
                                    b'openxmlformats.org/officeDocument/2006/relationships/sheetMetadata" '
                                    b'Target="metadata.xml"/></Relationships>')
            elif info.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", b'<Override PartName="/xl/metadata.xml" ContentType="application/'
                                    b'vnd.openxmlformats-officedocument.spreadsheetml.sheetMetadata+xml"/></Types>')
            package.writestr(info, data)
        package.writestr("xl/metadata.xml", _METADATA)
    return out.getvalue()


def spilled(ws, cell: str, formula: str, area: str) -> None:
    ws[cell] = ArrayFormula(area, formula)


def page_data_book() -> openpyxl.Workbook:
    """The BYROW page's data, 1 2 3 / 4 5 6 in A1:C2, as an input range."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for r, row in enumerate([[1, 2, 3], [4, 5, 6]], start=1):
        for c, value in enumerate(row, start=1):
            ws.cell(r, c, value)
    add_name(wb, "data", "Sheet1!$A$1:$C$2")
    return wb


@pytest.fixture(params=["uploaded", "stored"])
def workbook_of(request):
    """The workbook of an upload, or the same restored from its stored model as a job gets it."""
    return lambda data: uploaded_and_stored(data)[0 if request.param == "uploaded" else 1]


def test_byrow_with_a_lambda_follows_the_inputs(workbook_of):
    # GIVEN the BYROW page's example, =BYROW(A1:C2,LAMBDA(array,MAX(array))), spilling E1:E2
    wb = page_data_book()
    spilled(wb.active, "E1", "=_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.array,MAX(_xlpm.array)))", "E1:E2")
    add_name(wb, "largest", "Sheet1!$E$1:$E$2")
    workbook = workbook_of(excel365(wb))
    # THEN the page's answer (BYROW_PAGE: 3 and 6), and a job's new data is followed
    assert workbook.calculate({})["largest"] == [3, 6]
    assert workbook.calculate({"data": [[1, 9, 3], [4, 5, 60]]})["largest"] == [9, 60]
    assert workbook.correction_flags() == []


def test_count_of_a_computed_array_counts_its_numbers(workbook_of):
    # GIVEN COUNT(TOCOL(...)) over numbers and text (COUNT_PAGE: "only numbers in that array
    # ... are counted"); IronCalc 0.9.1 alone answers 0
    wb = page_data_book()
    wb.active["B1"] = "text"
    wb.active["F1"] = "=COUNT(_xlfn.TOCOL(A1:C2))"
    add_name(wb, "numbers", "Sheet1!$F$1")
    workbook = workbook_of(excel365(wb))
    assert workbook.calculate({})["numbers"] == 5
    assert workbook.calculate({"data": [[1, "a", "b"], [4, 5, "c"]]})["numbers"] == 3


def test_a_spill_feeds_other_cells_and_named_outputs(workbook_of):
    # GIVEN MAP's page example spilling into E1:G2, a SUM over its spill (E1#, written
    # _xlfn.ANCHORARRAY(E1) in the file) and a cell reading one spilled value
    wb = page_data_book()
    ws = wb.active
    spilled(ws, "E1", "=_xlfn.MAP(A1:C2,_xlfn.LAMBDA(_xlpm.a,IF(_xlpm.a>4,_xlpm.a*_xlpm.a,_xlpm.a)))", "E1:G2")
    ws["I1"] = "=SUM(_xlfn.ANCHORARRAY(E1))"
    ws["I2"] = "=G2+1"
    add_name(wb, "mapped", "Sheet1!$E$1:$G$2")
    add_name(wb, "total", "Sheet1!$I$1")
    add_name(wb, "corner", "Sheet1!$I$2")
    workbook = workbook_of(excel365(wb))
    # THEN the page's answer {1,2,3;4,25,36}, its sum and the corner plus one
    assert workbook.calculate({}) == {"mapped": [[1, 2, 3], [4, 25, 36]], "total": 71, "corner": 37}
    assert workbook.calculate({"data": [[5, 1, 1], [1, 1, 1]]}) == {
        "mapped": [[25, 1, 1], [1, 1, 1]], "total": 30, "corner": 2,
    }


def test_scan_reduce_and_makearray_follow_their_pages(workbook_of):
    # SCAN page: running product of 1..6; REDUCE page: sum of squares 91; MAKEARRAY: r*c
    wb = page_data_book()
    ws = wb.active
    spilled(ws, "E1", "=_xlfn.SCAN(1,A1:C2,_xlfn.LAMBDA(_xlpm.a,_xlpm.b,_xlpm.a*_xlpm.b))", "E1:G2")
    ws["E4"] = "=_xlfn.REDUCE(,A1:C2,_xlfn.LAMBDA(_xlpm.a,_xlpm.b,_xlpm.a+_xlpm.b^2))"
    spilled(ws, "E6", "=_xlfn.MAKEARRAY(3,3,_xlfn.LAMBDA(_xlpm.r,_xlpm.c,_xlpm.r*_xlpm.c))", "E6:G8")
    add_name(wb, "scan", "Sheet1!$E$1:$G$2")
    add_name(wb, "reduce", "Sheet1!$E$4")
    add_name(wb, "table", "Sheet1!$E$6:$G$8")
    outputs = workbook_of(excel365(wb)).calculate({})
    assert outputs == {
        "scan": [[1, 2, 6], [24, 120, 720]], "reduce": 91, "table": [[1, 2, 3], [2, 4, 6], [3, 6, 9]],
    }


def test_a_spill_that_grows_into_a_filled_cell_is_spill_error(workbook_of):
    # GIVEN the positive inputs of A1:A4 times ten, saved spilling C1:C2, and a value in C4
    # (Microsoft, "#SPILL! error - Spill range isn't blank")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws["A1"], ws["A2"], ws["C4"] = 1, 2, "kept"
    spilled(ws, "C1", "=_xlfn.MAP(_xlfn._xlws.FILTER(A1:A4,A1:A4>0),_xlfn.LAMBDA(_xlpm.x,_xlpm.x*10))", "C1:C2")
    add_name(wb, "inputs", "Sheet1!$A$1:$A$4")
    add_name(wb, "first", "Sheet1!$C$1")
    add_name(wb, "tens", "Sheet1!$C$1:$C$3")
    workbook = workbook_of(excel365(wb))
    # THEN three values spill where the column is free, and four would cover C4: #SPILL!
    assert workbook.calculate({"inputs": [[1], [2], [3], [None]]})["tens"] == [10, 20, 30]
    assert workbook.calculate({"inputs": [[1], [2], [3], [4]]})["first"] == "#SPILL!"
    assert workbook.calculate({})["tens"] == [10, 20, None]


def dynamic_sheet(cells: dict, spills: dict, names: dict, tables: dict | None = None) -> bytes:
    """One sheet as Excel 365 saves it: `cells` by address, `spills` {anchor: (area, formula)}
    as dynamic arrays, workbook-scoped `names` {name: address on the sheet}, `tables` {name:
    area}."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for address, value in cells.items():
        ws[address] = value
    for name, area in (tables or {}).items():
        ws.add_table(Table(displayName=name, ref=area))
    for anchor, (area, formula) in spills.items():
        spilled(ws, anchor, formula, area)
    for name, ref in names.items():
        add_name(wb, name, f"Sheet1!{ref}")
    return excel365(wb)


def test_a_spill_ironcalc_calculates_is_read_whole_by_the_cells_the_layer_evaluates(workbook_of):
    # GIVEN the inputs over 15 filtered into D1 (IronCalc's own FILTER), saved spilling D1:D3;
    # COUNTA of its spill (a count of a computed array: the layer's), and XLOOKUP of 30 in it
    # returning ten times the item (a calculated return array: the layer's)
    workbook = workbook_of(dynamic_sheet(
        {"A1": 10, "A2": 20, "A3": 30, "A4": 40},
        {"D1": ("D1:D3", "=_xlfn._xlws.FILTER(A1:A4,A1:A4>15)"),
         "F1": ("F1", "=COUNTA(_xlfn.ANCHORARRAY(D1))"),
         "F2": ("F2", "=_xlfn.XLOOKUP(30,_xlfn.ANCHORARRAY(D1),_xlfn.ANCHORARRAY(D1)*10)")},
        {"inputs": "$A$1:$A$4", "count": "$F$1", "found": "$F$2"},
    ))
    # THEN both read the spill as IronCalc made it, whatever its length for the inputs
    assert workbook.calculate({}) == {"count": 3, "found": 300}
    assert workbook.calculate({"inputs": [[16], [30], [17], [18]]}) == {"count": 4, "found": 300}
    assert workbook.calculate({"inputs": [[30], [1], [2], [3]]}) == {"count": 1, "found": 300}
    assert workbook.correction_flags() == []


def test_a_spill_reference_to_a_blocked_spill_is_a_reference_error(workbook_of):
    # GIVEN SEQUENCE(A1) in C1 (IronCalc's), with C4 filled: three rows spill, four are blocked;
    # and the REDUCE page's sum of its spill (the layer's)
    workbook = workbook_of(dynamic_sheet(
        {"A1": 3, "C4": "kept"},
        {"C1": ("C1:C3", "=_xlfn.SEQUENCE(A1)"),
         "E1": ("E1", "=_xlfn.REDUCE(0,_xlfn.ANCHORARRAY(C1),_xlfn.LAMBDA(_xlpm.a,_xlpm.b,_xlpm.a+_xlpm.b))")},
        {"n": "$A$1", "total": "$E$1"},
    ))
    assert workbook.calculate({})["total"] == 6
    assert workbook.calculate({"n": 2})["total"] == 3
    # THEN a spill that cannot be made is #SPILL! in C1 and #REF! to read through C1#
    assert workbook.calculate({"n": 4})["total"] == "#REF!"


def test_mmult_and_frequency_inside_lambda_helpers_are_calculated_not_flagged(workbook_of):
    # GIVEN the MMULT page's matrices (A1:B2, D1:E2) and the FREQUENCY page's scores and bins
    # (G1:G9, H1:H3), given to BYROW and MAP (formulas the layer evaluates whole)
    scores = dict(zip([f"G{r}" for r in range(1, 10)], [79, 85, 78, 85, 50, 81, 95, 88, 97]))
    workbook = workbook_of(dynamic_sheet(
        {"A1": 1, "B1": 3, "A2": 7, "B2": 2, "D1": 2, "E1": 0, "D2": 0, "E2": 2,
         "H1": 70, "H2": 79, "H3": 89, **scores},
        {"J1": ("J1:J2", "=_xlfn.BYROW(MMULT(A1:B2,D1:E2),_xlfn.LAMBDA(_xlpm.r,SUM(_xlpm.r)))"),
         "K1": ("K1:K4", "=_xlfn.MAP(FREQUENCY(G1:G9,H1:H3),_xlfn.LAMBDA(_xlpm.x,_xlpm.x*2))")},
        {"first": "$A$1", "row_sums": "$J$1:$J$2", "counts": "$K$1:$K$4"},
    ))
    # THEN the product {2,6;14,4} summed by row, the counts {1;2;4;2} doubled, and no flag
    assert workbook.calculate({}) == {"row_sums": [8, 18], "counts": [2, 4, 8, 4]}
    assert workbook.calculate({"first": 2})["row_sums"] == [10, 18]
    assert workbook.correction_flags() == []


def test_a_whole_table_in_a_dynamic_array_is_its_data_rows(workbook_of):
    # GIVEN a table Sales (Region, Amount) in A1:B5 and Excel 365 formulas over the whole of it,
    # which the file writes `Sales[]` (Microsoft, "Using structured references with Excel
    # tables": the table's name alone is its data rows): FILTER of it spilling D2:E4, the table
    # spilled whole in G2:H5, and ROWS of it in J1
    rows = [("Region", "Amount"), ("b", 10), ("a", 20), ("b", 30), ("c", 40)]
    cells = {f"{column}{r}": value for r, row in enumerate(rows, start=1) for column, value in zip("AB", row)}
    data = dynamic_sheet(
        cells,
        {"D2": ("D2:E4", "=_xlfn._xlws.FILTER(Sales[],Sales[Amount]>15)"),
         "G2": ("G2:H5", "=Sales[]"), "J1": ("J1", "=ROWS(Sales[])")},
        {"amounts": "$B$2:$B$5", "big": "$D$2:$E$5", "whole": "$G$2:$H$5", "rows": "$J$1"},
        {"Sales": "A1:B5"},
    )
    workbook = workbook_of(data)
    # THEN each reads the data rows (IronCalc alone: #NAME?), with no implicit intersection
    outputs = workbook.calculate({})
    assert outputs["big"] == [["a", 20], ["b", 30], ["c", 40], [None, None]]
    assert outputs["whole"] == [["b", 10], ["a", 20], ["b", 30], ["c", 40]]
    assert outputs["rows"] == 4
    # AND follow a job's inputs
    assert workbook.calculate({"amounts": [[16], [1], [17], [1]]})["big"] == [
        ["b", 16], ["b", 17], [None, None], [None, None]]


def test_groupby_is_flagged_not_answered(workbook_of):
    # GIVEN a GROUPBY in a form the layer does not evaluate (generated headers; IronCalc 0.9.1: #NAME?)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for r, (key, value) in enumerate([("a", 1), ("b", 2), ("a", 3)], start=1):
        ws.cell(r, 1, key)
        ws.cell(r, 2, value)
    spilled(ws, "D1", "=_xlfn.GROUPBY(A1:A3,B1:B3,_xleta.SUM,2)", "D1:E3")
    add_name(wb, "groups", "Sheet1!$D$1:$E$3")
    workbook = workbook_of(excel365(wb))
    workbook.calculate({})
    # THEN the cell is reported with the reason
    flags = [str(f) for f in workbook.correction_flags()]
    assert any("GROUPBY at Sheet1!D1" in f for f in flags), flags


def test_the_export_keeps_the_dynamic_formula_with_excels_prefixes():
    wb = page_data_book()
    spilled(wb.active, "E1", "=_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.array,MAX(_xlpm.array)))", "E1:E2")
    workbook, _ = uploaded_and_stored(excel365(wb))
    workbook.calculate({"data": [[1, 9, 3], [4, 5, 60]]})
    exported = workbook.to_xlsx()
    sheet = zipfile.ZipFile(io.BytesIO(exported)).read("xl/worksheets/sheet1.xml").decode()
    assert '<f t="array" ref="E1:E2">_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.array,MAX(_xlpm.array)))</f><v>9</v>' in sheet
    values = openpyxl.load_workbook(io.BytesIO(exported), data_only=True).active
    assert values["E2"].value == 60


def test_the_files_dynamic_arrays_are_found_with_their_areas():
    wb = page_data_book()
    spilled(wb.active, "E1", "=_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.x,MAX(_xlpm.x)))", "E1:E2")
    wb.active["F1"] = ArrayFormula("F1:F2", "=A1:A2*2")  # a legacy (CSE) array formula
    data = io.BytesIO()
    wb.save(data)
    assert spill_areas(excel365(wb)) == [[0, 1, 5, 2, 5, 1], [0, 1, 6, 2, 6, 1]]
    assert spill_areas(data.getvalue()) == [[0, 1, 5, 2, 5, 0], [0, 1, 6, 2, 6, 0]]


@pytest.mark.parametrize("formula, expected", [
    ("=SEQUENCE(,12,,2.5)", [[1.0 + 2.5 * i for i in range(12)]]),  # corpus SEQUENCE.xlsx C23: 1 row
    ("=SEQUENCE(0.3)", "#CALC!"),        # corpus SEQUENCE.xlsx E18 (a rich #CALC! error)
    ("=SEQUENCE(-1)", "#VALUE!"),        # corpus SEQUENCE.xlsx C18
    ('=TEXTSPLIT("Hola sin split",)', "#VALUE!"),  # corpus TEXTSPLIT.xlsx B26
    ('=XMATCH("b*",{"a","bc","b"},2)', 2.0),       # XMATCH page: 2 is a wildcard match
    ('=XMATCH(4,{1,3,5,7},1,2)', 3.0),              # next larger, binary search ascending
    ('=XMATCH(4,{7,5,3,1},-1,-2)', 3.0),            # next smaller, binary search descending
    ('=XLOOKUP("x*",{"a","b"},{1,2},,2,2)', "#VALUE!"),  # corpus XLOOKUP.xlsx Wildcards!E13
    ('=VALUETOTEXT(7.123456E-09)', "0.000000007123456"),  # corpus T_VALUE_VALUETOTEXT.xlsx D11
    ('=ARRAYTOTEXT({1,"b";TRUE,2},1)', '{1,"b";TRUE,2}'),  # ARRAYTOTEXT page: strict format
    ("=TAKE({1,2;3,4;5,6},-2,1)", [[3.0], [5.0]]),
    ("=DROP({1,2;3,4;5,6},2)", [[5.0, 6.0]]),
    ('=TEXTBEFORE("Red riding hood","d",2)', "Red ri"),
])
def test_the_evaluator_answers_excels_values(formula, expected):
    from shared.calc.corrections.dynamic.values import Err, Grid

    class NoModel:
        def get_defined_name_list(self):
            return []

    result = Evaluator(Book(NoModel(), ["Sheet1"], None, {}), 0, 10, 10).formula(formula)
    if isinstance(result, Grid):
        result = result.rows
    if isinstance(result, Err):
        result = result.code
    assert result == expected


@pytest.mark.parametrize("number, text", [
    (1 / 3, "0.333333333333333"), (0.1 + 0.2, "0.3"), (1e-9, "0.000000001"), (1e-10, "1E-10"),
    (123456789012345678, "1.23456789012346E+17"), (-1234.5, "-1234.5"),
])
def test_numbers_become_text_as_excel_writes_them(number, text):
    assert general(float(number)) == text


def test_formulas_are_written_back_with_excels_prefixes():
    assert as_written("=SORT(UNIQUE(A1:A4))") == "=_xlfn._xlws.SORT(_xlfn.UNIQUE(A1:A4))"
    assert as_written("=LET(x,2,x*A1)") == "=_xlfn.LET(_xlpm.x,2,_xlpm.x*A1)"


def test_a_job_answers_excels_values_through_the_service(client, admin, run_worker):
    from tests.api.test_engine_choice import deploy

    # GIVEN a workbook with BYROW's page example, COUNT of TOCOL and SORT of UNIQUE (the three
    # forms measured wrong before the layer evaluated them), uploaded as Excel 365 saves it
    wb = page_data_book()
    ws = wb.active
    spilled(ws, "E1", "=_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.array,MAX(_xlpm.array)))", "E1:E2")
    ws["F1"] = "=COUNT(_xlfn.TOCOL(A1:C2))"
    spilled(ws, "G1", "=_xlfn._xlws.SORT(_xlfn.UNIQUE(_xlfn.TOCOL(A1:C2)))", "G1:G6")
    add_name(wb, "largest", "Sheet1!$E$1:$E$2")
    add_name(wb, "numbers", "Sheet1!$F$1")
    add_name(wb, "distinct", "Sheet1!$G$1:$G$6")
    engine, version, key = deploy(admin, excel365(wb))
    assert version["calc_engine"] == "ironcalc"

    # WHEN a job sends new data (text among the numbers, a repeated value)
    job = client.post(f"/jobs/execute/{admin.slug}/{engine['slug']}",
                      json={"inputs": {"data": [[5, "x", 3], [3, 9, 1]]}}, headers=key).json()
    run_worker()
    job = client.get(f"/jobs/{job['job_id']}", headers=key).json()

    # THEN Excel's answers: each row's largest number, five numbers, the sorted distinct values
    # (numbers before text, SORT page) and the spill's unused cells empty
    assert job["status"] == "completed", job
    assert job["outputs"] == {"largest": [5, 9], "numbers": 5, "distinct": [1, 3, 5, 9, "x", None]}


def test_a_model_stored_before_array_areas_were_kept_reports_array_results():
    from shared.calc import get_engine
    from shared.calc.base import pack_blob, unpack_blob

    # GIVEN BYROW's page example stored as a model from before the file's spill areas were kept
    wb = page_data_book()
    spilled(wb.active, "E1", "=_xlfn.BYROW(A1:C2,_xlfn.LAMBDA(_xlpm.array,MAX(_xlpm.array)))", "E1:E2")
    wb.active["F1"] = "=_xlfn.REDUCE(0,A1:C2,_xlfn.LAMBDA(_xlpm.a,_xlpm.b,_xlpm.a+_xlpm.b))"
    add_name(wb, "total", "Sheet1!$F$1")
    workbook, _ = uploaded_and_stored(excel365(wb))
    header, payload = unpack_blob(workbook.serialize())
    header.pop("spill_areas")
    header.pop("engine")
    old = get_engine("ironcalc").load_serialized(pack_blob("ironcalc", header, payload))
    # THEN a single value is still evaluated, and the array result is reported, not placed
    assert old.calculate({"data": [[1, 2, 3], [4, 5, 10]]})["total"] == 25
    flags = [str(f) for f in old.correction_flags()]
    assert any("BYROW" in f and "upload the workbook again" in f for f in flags), flags


def test_trim_references_follow_the_filled_cells(workbook_of):
    # GIVEN a total over A:.A (TRIMRANGE page: "A:.A", written _xlfn._TRO_TRAILING(A:A) in the
    # file) and the filled part of A1:C9 spilled twice over (A1.:.C9, _TRO_ALL); IronCalc 0.9.1
    # alone answers #NAME? for both
    wb = page_data_book()
    ws = wb.active
    ws["E1"] = "=SUM(_xlfn._TRO_TRAILING(A:A))"
    spilled(ws, "G1", "=_xlfn._TRO_ALL(A1:C9)*2", "G1:I2")
    add_name(wb, "total", "Sheet1!$E$1")
    add_name(wb, "doubled", "Sheet1!$G$1:$I$2")
    workbook = workbook_of(excel365(wb))
    # THEN the sum of column A's numbers and the trimmed block doubled, following a job's data
    assert workbook.calculate({}) == {"total": 5, "doubled": [[2, 4, 6], [8, 10, 12]]}
    assert workbook.calculate({"data": [[10, 0, 0], [1, 1, 1]]}) == {"total": 11, "doubled": [[20, 0, 0], [2, 2, 2]]}
    assert workbook.correction_flags() == []


def test_a_name_to_a_formula_at_the_top_of_a_dynamic_array_is_its_formula():
    # GIVEN Sorted, a name to the spill of D1 (Excel writes `=Sheet1!$D$1#` as
    # `_xlfn.ANCHORARRAY(Sheet1!$D$1)`), the inputs 3, 1, 2 sorted there, and Rate = 0.5,
    # used at the top of spilled formulas ("Define and use names in formulas": a name
    # calculates as its formula written in its place; SORT page: ascending by default)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    for row, value in enumerate([3, 1, 2], start=1):
        ws[f"A{row}"] = value
    spilled(ws, "D1", "=_xlfn._xlws.SORT(A1:A3)", "D1:D3")
    spilled(ws, "F1", "=Sorted", "F1:F3")
    spilled(ws, "G1", "=Sorted*10", "G1:G3")
    spilled(ws, "H1", "=Sorted*Rate", "H1:H3")
    add_name(wb, "Sorted", "_xlfn.ANCHORARRAY(Sheet1!$D$1)")
    add_name(wb, "Rate", "0.5")
    add_name(wb, "data", "Sheet1!$A$1:$A$3")
    for column in "FGH":
        add_name(wb, f"out_{column.lower()}", f"Sheet1!${column}$1:${column}$3")

    for workbook in uploaded_and_stored(excel365(wb)):
        # WHEN a job sorts new data
        outputs = workbook.calculate({"data": [[30], [10], [20]]}, ["out_f", "out_g", "out_h"])
        # THEN each spill is the name's array, as Excel (IronCalc alone: #NAME?)
        assert outputs == {"out_f": [10, 20, 30], "out_g": [100, 200, 300], "out_h": [5, 10, 15]}
        assert workbook.correction_flags() == []
