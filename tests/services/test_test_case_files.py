"""Reading test cases from CSV and JSON lines: how a cell becomes a JSON value, and which rows are refused."""

from __future__ import annotations

import pytest

from shared.errors import Invalid
from shared.services.test_cases import parse_csv, parse_ndjson


def test_csv_cells_become_numbers_booleans_errors_ranges_or_text():
    text = (
        "case.name,rate,flag,code,block,label,blank,expected.out,tolerance.out.relative\n"
        "first,0.045,TRUE,'00123,\"[[1,2],[3,4]]\",north,,#N/A,1e-9\n"
    )
    [(where, case)] = parse_csv(text)
    assert where == "Row 2" and case.name == "first"
    assert case.inputs == {"rate": 0.045, "flag": True, "code": "00123", "block": [[1, 2], [3, 4]], "label": "north"}
    assert case.expected == {"out": "#N/A"}
    assert case.tolerances == {"out": {"relative": 1e-9}}


def test_integers_stay_integers_and_odd_numbers_stay_text():
    [(_, case)] = parse_csv("a,b,c,expected.x\n42,1_000,nan,7\n")
    assert case.inputs == {"a": 42, "b": "1_000", "c": "nan"} and case.expected == {"x": 7}
    assert isinstance(case.inputs["a"], int)


@pytest.mark.parametrize("text, message", [
    ("principal,years\n1,2\n", "names no expected output"),
    ("a,expected.x\n1,2,3\n", "Row 2: 3 cells for 2 columns"),
    ("a,a,expected.x\n1,2,3\n", "names a column twice"),
    ("a,expected.x,tolerance.x.wide\n1,2,3\n", "tolerance.<output>.absolute or .relative"),
    ("a,expected.x\n[1,2\n", "must be a JSON list"),
])
def test_csv_files_that_cannot_be_read_say_why(text, message):
    with pytest.raises(Invalid, match=message.replace("(", r"\(").replace(".", r"\.").replace("<", "<")):
        parse_csv(text)


def test_json_lines_skip_blank_lines_and_name_the_bad_one():
    text = '{"inputs": {"a": 1}, "expected": {"x": 2}}\n\n{"inputs": {}, "expected": {"x": NaN}}\n'
    with pytest.raises(Invalid, match="Line 3: not a JSON object"):
        parse_ndjson(text)
    [(where, case)] = parse_ndjson(text.splitlines()[0])
    assert where == "Line 1" and case.expected == {"x": 2} and case.enabled is True
    with pytest.raises(Invalid, match="Line 1: unknown field outputs"):
        parse_ndjson('{"outputs": {}}')
