"""The schema suggested from a workbook: types from values and number formats, Excel's data
validation (as Coherent Spark derives its validation), array shapes, every input required."""

from __future__ import annotations

import io
from datetime import datetime

import pytest
from openpyxl import Workbook
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation

DRAFT7 = "http://json-schema.org/draft-07/schema#"


def validated_workbook() -> bytes:
    """A quote sheet with Excel data validation on its inputs, as an analyst would set it up."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Quote"
    lists = wb.create_sheet("Lists")
    for i, region in enumerate(["North", "South", "East"], start=1):
        lists[f"A{i}"] = region
    cells = {
        "plan": ("B1", "Gold", "General"), "region": ("B2", "North", "General"), "age": ("B3", 40, "0"),
        "rate": ("B4", 0.05, "0.00%"), "start": ("B5", datetime(2026, 1, 1), "yyyy-mm-dd"), "smoker": ("B6", False, "General"),
        "note": ("B7", "none", "@"), "cover": ("B8", 100000, "#,##0.00"),
    }
    for name, (ref, value, fmt) in cells.items():
        ws[ref] = value
        ws[ref].number_format = fmt
        wb.defined_names[name] = DefinedName(name, attr_text=f"Quote!${ref[0]}${ref[1:]}")
    rules = [
        DataValidation(type="list", formula1='"Bronze,Silver,Gold"', sqref="B1"),
        DataValidation(type="list", formula1="Lists!$A$1:$A$3", sqref="B2"),
        DataValidation(type="whole", operator="between", formula1="18", formula2="99", sqref="B3"),
        DataValidation(type="decimal", operator="greaterThanOrEqual", formula1="0", sqref="B4"),
        DataValidation(type="date", operator="greaterThan", formula1="46023", sqref="B5"),
        DataValidation(type="textLength", operator="lessThanOrEqual", formula1="20", sqref="B7"),
        DataValidation(type="decimal", operator="lessThan", formula1="5000000", sqref="B8"),
        DataValidation(type="whole", operator="between", formula1="0", formula2="10", sqref="D1:F1 H1:H3"),
    ]
    for rule in rules:
        ws.add_data_validation(rule)
    for col in "DEF":
        ws[f"{col}1"] = 1
    for row in (1, 2, 3):
        ws[f"H{row}"] = row
        for col in "JK":
            ws[f"{col}{row}"] = 0.5
    wb.defined_names["weights"] = DefinedName("weights", attr_text="Quote!$D$1:$F$1")
    wb.defined_names["counts"] = DefinedName("counts", attr_text="Quote!$H$1:$H$3")
    wb.defined_names["table"] = DefinedName("table", attr_text="Quote!$J$1:$K$3")
    ws["B10"] = "=B8*B4"
    wb.defined_names["premium"] = DefinedName("premium", attr_text="Quote!$B$10")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


@pytest.fixture()
def version(admin):
    engine = admin.post("/engines", json={"name": "Quote"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("quote.xlsx", validated_workbook())})
    assert r.status_code == 201, r.text
    return engine, r.json()


def test_inputs_are_typed_from_excels_data_validation_and_formats(admin, version):
    engine, v = version
    r = admin.get(f"/engines/{engine['id']}/versions/{v['id']}/suggested-schema")
    assert r.status_code == 200, r.text
    schema = r.json()["input_schema"]
    props = schema["properties"]
    assert schema["$schema"] == DRAFT7 and schema["type"] == "object"
    assert sorted(schema["required"]) == sorted(props) == sorted(
        ["plan", "region", "age", "rate", "start", "smoker", "note", "cover", "weights", "counts", "table"])
    assert props["plan"] == {"type": "string", "enum": ["Bronze", "Silver", "Gold"]}
    assert props["region"] == {"type": "string", "enum": ["North", "South", "East"]}
    assert props["age"] == {"type": "integer", "minimum": 18, "maximum": 99}
    assert props["rate"] == {"type": "number", "minimum": 0}
    assert props["start"]["type"] == "string" and props["start"]["format"] == "date"
    assert "2026-01-01" in props["start"]["description"]  # serial 46023 is 2026-01-01
    assert props["smoker"] == {"type": "boolean"}
    assert props["note"] == {"type": "string", "maxLength": 20}
    assert props["cover"] == {"type": "number", "exclusiveMaximum": 5000000}
    item = {"type": "integer", "minimum": 0, "maximum": 10}
    assert props["weights"] == {"type": "array", "items": item, "minItems": 3, "maxItems": 3}
    assert props["counts"] == {"type": "array", "items": item, "minItems": 3, "maxItems": 3}
    assert props["table"] == {"type": "array", "minItems": 3, "maxItems": 3,
                              "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}}
    assert r.json()["output_schema"]["properties"] == {"premium": {"type": "number"}}


def test_the_loan_workbooks_suggestion_types_each_input(admin, deployed):
    r = admin.get(f"/engines/{deployed.engine_id}/versions/{deployed.version_id}/suggested-schema")
    props = r.json()["input_schema"]["properties"]
    assert props == {"principal": {"type": "number"}, "annual_rate": {"type": "number"}, "years": {"type": "integer"},
                     "start_date": {"type": "string", "format": "date"}}
    assert r.json()["output_schema"]["properties"]["end_date"] == {"type": "string", "format": "date"}


def test_an_accepted_suggestion_refuses_what_excel_would(client, admin, version, run_worker):
    engine, v = version
    suggested = admin.get(f"/engines/{engine['id']}/versions/{v['id']}/suggested-schema").json()
    saved = admin.patch(f"/engines/{engine['id']}/versions/{v['id']}", json=suggested)
    assert saved.status_code == 200, saved.text
    assert saved.json()["warnings"] == []
    r = admin.post(f"/engines/{engine['id']}/versions/{v['id']}/test-jobs", json={"inputs": {
        "plan": "Platinum", "region": "North", "age": 40, "rate": 0.05, "start": "2026-02-01", "smoker": False, "note": "x",
        "cover": 1000, "weights": [1, 2, 3], "counts": [1, 2, 3], "table": [[0.5, 0.5]] * 3}})
    assert r.status_code == 400 and "Platinum" in r.json()["detail"]


def test_another_tenants_version_has_no_suggestion(client, version):
    from tests.factories import make_admin

    engine, v = version
    assert make_admin(client).get(f"/engines/{engine['id']}/versions/{v['id']}/suggested-schema").status_code == 404


# --- The suggestion returned with the upload answer -------------------------------------------


def test_the_upload_answer_carries_the_suggestion_from_the_workbooks_validation(admin, version):
    engine, v = version
    props = v["suggested_input_schema"]["properties"]
    assert v["suggested_input_schema"]["$schema"] == DRAFT7
    assert sorted(v["suggested_input_schema"]["required"]) == sorted(props)
    # Excel's own rules on the cells: a list, whole numbers 18..99, decimals >= 0, text of at most 20.
    assert props["plan"] == {"type": "string", "enum": ["Bronze", "Silver", "Gold"]}
    assert props["age"] == {"type": "integer", "minimum": 18, "maximum": 99}
    assert props["rate"] == {"type": "number", "minimum": 0}
    assert props["note"] == {"type": "string", "maxLength": 20}
    assert v["suggested_output_schema"]["properties"] == {"premium": {"type": "number"}}
    # The same as the suggestion asked for later, and nothing saved.
    later = admin.get(f"/engines/{engine['id']}/versions/{v['id']}/suggested-schema").json()
    assert (v["suggested_input_schema"], v["suggested_output_schema"]) == (later["input_schema"], later["output_schema"])
    assert v["input_schema"] is None and v["output_schema"] is None


def test_the_loan_workbooks_upload_answer_types_inputs_from_their_number_formats(admin, loan_xlsx):
    engine = admin.post("/engines", json={"name": "Loan"}).json()
    r = admin.post(f"/engines/{engine['id']}/versions", data={"version": "1"}, files={"file": ("loan-quote.xlsx", loan_xlsx)})
    assert r.status_code == 201, r.text
    # '#,##0.00' and '0.00%' show decimals (number), '0' a whole number (integer), 'yyyy-mm-dd' a date.
    assert r.json()["suggested_input_schema"]["properties"] == {
        "principal": {"type": "number"}, "annual_rate": {"type": "number"}, "years": {"type": "integer"},
        "start_date": {"type": "string", "format": "date"}}
    assert r.json()["suggested_input_schema"]["required"] == ["principal", "annual_rate", "years", "start_date"]
    outputs = r.json()["suggested_output_schema"]["properties"]
    assert outputs["monthly_payment"] == {"type": "number"} and outputs["end_date"] == {"type": "string", "format": "date"}


def test_a_suggestion_out_of_time_or_failing_leaves_the_upload_whole(loan_xlsx):
    """The child's work on an upload: the suggestion gives up after its share of the deadline
    (null), and an unreadable file gives null too; the engine, named ranges and model stand."""
    from shared.calc import sandbox

    no_limits = {name: 10**9 for name in sandbox.guard.Limits.__dataclass_fields__}
    header, prepared = sandbox._prepare(loan_xlsx, no_limits, suggest_within_s=1e-6)
    assert header["suggested_schemas"] is None
    assert header["engine"] == "ironcalc" and prepared
    assert {r["name"] for r in header["named_ranges"]} >= {"principal", "monthly_payment"}
    assert sandbox._suggest(b"PK\x03\x04 not a workbook", [], 5.0) is None
