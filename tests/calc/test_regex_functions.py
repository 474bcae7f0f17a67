"""REGEXTEST, REGEXEXTRACT and REGEXREPLACE through the correction layer
(shared/calc/corrections/dynamic/regex_functions.py): workbooks written as Excel 365 writes them,
loaded as an upload is and restored as a job gets them.

Expected values follow Microsoft's pages for the three functions and the cells formulas'
test.xlsx saved from Excel (tests/conformance/cases/REGEX*.yaml cite each).
"""

import openpyxl
import pytest

from .conftest import add_name, uploaded_and_stored
from .test_dynamic_arrays import excel365, spilled


@pytest.fixture(params=["uploaded", "stored"])
def workbook_of(request):
    return lambda data: uploaded_and_stored(data)[0 if request.param == "uploaded" else 1]


def contacts_book() -> bytes:
    """A contact line in A1 (the input), its name's parts, its phone numbers and a cleaned copy."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws["A1"] = "Sonia Rees (378) 555-4195, (878) 555-8622"
    spilled(ws, "C1", '=_xlfn.REGEXEXTRACT(A1,"([A-Z][a-z]+) ([A-Z][a-z]+)",2)', "C1:D1")
    spilled(ws, "C2", '=_xlfn.REGEXEXTRACT(A1,"\\([0-9]+\\) [0-9-]+",1)', "C2:D2")
    ws["C3"] = '=_xlfn.REGEXREPLACE(A1,"[0-9]+-","***-",-1)'
    ws["C4"] = '=_xlfn.REGEXTEST(A1,"sonia",1)'
    add_name(wb, "line", "Sheet1!$A$1")
    add_name(wb, "name_parts", "Sheet1!$C$1:$D$1")
    add_name(wb, "phones", "Sheet1!$C$2:$D$2")
    add_name(wb, "last_hidden", "Sheet1!$C$3")
    add_name(wb, "is_sonia", "Sheet1!$C$4")
    return excel365(wb)


def test_the_optional_arguments_answer_as_the_pages_say_and_follow_the_inputs(workbook_of):
    workbook = workbook_of(contacts_book())  # IronCalc alone: the whole match, #ERROR!, #ERROR!
    assert workbook.calculate({}) == {
        "name_parts": ["Sonia", "Rees"],  # return_mode 2: the groups, across a row
        "phones": ["(378) 555-4195", "(878) 555-8622"],  # return_mode 1: every match
        "last_hidden": "Sonia Rees (378) 555-4195, (878) ***-8622",  # occurrence -1: the last
        "is_sonia": True,  # case_sensitivity 1
    }
    assert workbook.correction_flags() == []
    # WHEN the line changes, so does every answer; no match is #N/A
    outputs = workbook.calculate({"line": "Angel Brown"})
    assert outputs["name_parts"] == ["Angel", "Brown"]
    assert outputs["phones"][0] == "#N/A"
    assert outputs["last_hidden"] == "Angel Brown"
    assert outputs["is_sonia"] is False


def test_a_pattern_python_reads_otherwise_than_pcre2_is_flagged_not_guessed(workbook_of):
    wb = openpyxl.Workbook()
    wb.active["A1"] = "Ünïcode"
    wb.active["B1"] = '=_xlfn.REGEXTEST(A1,"\\p{Lu}")'  # a Unicode property: PCRE2 only
    add_name(wb, "test", "Sheet!$B$1")
    workbook = workbook_of(excel365(wb))
    workbook.calculate({})
    assert any("REGEXTEST" in str(flag) and "\\p" in str(flag) for flag in workbook.correction_flags())
