"""Numbers joined into text (`&`, CONCATENATE, CONCAT, TEXTJOIN) are written as Excel writes them:
15 significant digits, whole numbers from 1E+15 and numbers below 1E-9 in E notation.

Expected values: Microsoft's "Last digits are changed to zeros when you type long numbers"
(Excel "stores only 15 significant digits in a number") and "Excel specifications and limits"
(number precision: 15 digits). IronCalc 0.9.1 writes up to 17 (`=""&(0.1+0.2)` is
"0.30000000000000004", `=1/3&""` "0.3333333333333333") and never E notation; the layer
evaluates such a cell in the calculations where IronCalc's text shows such a number.
"""

import pytest

from shared.calc.corrections.dynamic.settle import long_number

from .conftest import named_formulas, uploaded_and_stored


def label_workbook() -> bytes:
    """Two inputs and labels built from them, the way a quote sheet writes its lines."""
    return named_formulas(
        {
            "share": '="Share: "&A1/A2',
            "total": '=CONCATENATE("Total ",A1+A2)',
            "list": '=TEXTJOIN(", ",TRUE,A1/3,A2)',
            "concat": "=CONCAT(A1*A2,\"!\")",
            "whole": '="Units: "&A1',
        },
        cells={"A1": 1, "A2": 3},
        names={"first": "$A$1", "second": "$A$2"},
    )


OUTPUTS = ["share", "total", "list", "concat", "whole"]


def test_numbers_joined_into_text_have_excels_fifteen_digits_in_a_job():
    # GIVEN the workbook uploaded and stored for jobs
    for workbook in uploaded_and_stored(label_workbook()):
        # WHEN a job gives inputs whose share and sum binary arithmetic cannot hold exactly
        out = workbook.calculate({"first": 0.1, "second": 0.2}, OUTPUTS)

        # THEN the text holds the 15 significant digits Excel keeps
        assert out["share"] == "Share: 0.5"
        assert out["total"] == "Total 0.3"
        assert out["list"] == "0.0333333333333333, 0.2"
        assert out["concat"] == "0.02!"
        assert out["whole"] == "Units: 0.1"


def test_a_large_whole_number_joined_is_written_in_e_notation():
    _, workbook = uploaded_and_stored(label_workbook())

    out = workbook.calculate({"first": 1234567890123456, "second": 1}, ["whole", "total"])

    assert out["whole"] == "Units: 1.23456789012346E+15"
    assert out["total"] == "Total 1.23456789012346E+15"


def test_text_whose_numbers_excel_writes_alike_is_left_to_the_engine():
    # GIVEN a job whose numbers have few digits: IronCalc's text stands (nothing re-evaluated)
    _, workbook = uploaded_and_stored(label_workbook())

    out = workbook.calculate({"first": 1, "second": 4}, OUTPUTS)

    assert out["share"] == "Share: 0.25"
    assert out["list"] == "0.333333333333333, 4"


@pytest.mark.parametrize(("text", "long"), [
    ("0.30000000000000004", True),     # 17 significant digits
    ("x0.3333333333333333y", True),    # 16
    ("1234567890123460", True),        # 16 digits before the point: Excel's 1.23456789012346E+15
    ("0.0000000001", True),            # below 1E-9: Excel's 1E-10
    ("0.333333333333333", False),      # 15: as Excel writes it
    ("Total 1,234.50 on 12/31/2026", False),
    ("0.000000001", False),            # 1E-9 is written out
    ("", False),
])
def test_which_texts_show_a_number_excel_writes_otherwise(text, long):
    assert long_number(text) is long


def test_textjoin_leaves_out_empty_texts_as_it_does_empty_cells():
    # GIVEN names in A1:A3 (inputs) whose blanks a formula turns into "" (B1:B3), joined with
    # ignore_empty TRUE, and FALSE
    workbook_data = named_formulas(
        {"joined": '=TEXTJOIN(", ",TRUE,B1:B3)', "kept": '=TEXTJOIN(", ",FALSE,B1:B3)',
         "typed": '=TEXTJOIN("-",TRUE,"a","",A1)'},
        column="D",
        cells={"A1": "Ann", "A2": "", "A3": "Cy", "B1": '=IF(A1="","",A1)', "B2": '=IF(A2="","",A2)',
               "B3": '=IF(A3="","",A3)'},
        names={"people": "$A$1:$A$3"},
    )
    for workbook in uploaded_and_stored(workbook_data):
        # THEN the empty texts are left out (IronCalc alone: "Ann, , Cy" and "a--Ann")
        out = workbook.calculate({}, ["joined", "kept", "typed"])
        assert out == {"joined": "Ann, Cy", "kept": "Ann, , Cy", "typed": "a-Ann"}
        # AND in a job whose names are all there, or none
        assert workbook.calculate({"people": [["x"], ["y"], ["z"]]}, ["joined"]) == {"joined": "x, y, z"}
        assert workbook.calculate({"people": [[""], [""], [""]]}, ["joined"]) == {"joined": ""}
