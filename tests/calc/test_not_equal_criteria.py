"""A criterion "not equal to a text" keeps blank cells, numbers and logical values
(shared/calc/corrections/functions/not_equal.py).

Expected values are worked from the rule of Microsoft's COUNTIF page (`<>` is "not equal to":
every cell that is not the text): the statuses below are Open, blank, Closed, Open, blank and 5,
the amounts 1, 2, 4, 8, 16 and 32.
"""

import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc.corrections.functions.not_equal import flag_reason, rewrite_formula
from shared.calc.fidelity.check import check

from .conftest import named_formulas, saved_sheet_xml, uploaded_and_stored

STATUS = {"A1": "Open", "A3": "Closed", "A4": "Open", "A6": 5}
AMOUNT = {f"B{row}": 2 ** (row - 1) for row in range(1, 7)}


def ledger(formulas: dict[str, str]) -> bytes:
    return named_formulas(formulas, column="E", cells={**STATUS, **AMOUNT, "D1": "Closed"},
                          names={"statuses": "$A$1:$A$6", "excluded": "$D$1"})


def test_totals_not_equal_to_a_text_include_the_blank_and_numeric_rows_in_a_job():
    data = ledger({
        "open_total": '=SUMIF(A1:A6,"<>Closed",B1:B6)',
        "open_count": '=COUNTIF(A1:A6,"<>"&D1)',
        "both": '=SUMIFS(B1:B6,A1:A6,"<>Closed",A1:A6,"<>Open")',
        "with_number": '=COUNTIFS(A1:A6,"<>Closed",B1:B6,">3")',
    })
    for workbook in uploaded_and_stored(data):
        # THEN blanks and the number 5 count (IronCalc alone: 9, 2, 0 and 1)
        assert workbook.calculate({}) == {"open_total": 59, "open_count": 5, "both": 50, "with_number": 3}
        # AND when a job excludes a number instead, IronCalc's own rule stands (5 is left out)
        assert workbook.calculate({"excluded": 5}, ["open_count"]) == {"open_count": 5}
        # AND a job's statuses are read the same way
        out = workbook.calculate({"statuses": [["Closed"]] * 5 + [[None]]}, ["open_total", "open_count"])
        assert out == {"open_total": 32, "open_count": 1}


def test_the_filled_workbook_keeps_the_formula_as_written():
    workbook, _ = uploaded_and_stored(ledger({"open_total": '=SUMIF(A1:A6,"<>Closed",B1:B6)'}))
    workbook.calculate({})
    sheet = saved_sheet_xml(workbook)
    assert 'SUMIF(A1:A6,"&lt;&gt;Closed",B1:B6)' in sheet and "&lt;&gt;*" not in sheet


@pytest.mark.parametrize(
    ("formula", "rewritten"),
    [
        ('=COUNTIF(A1:A6,"<>Closed")', True),
        ('=SUMIF(A1:A6,"<>"&$D$1,B1:B6)', True),
        ('=COUNTIF(A1:A6,"<>")', False),  # not blank: IronCalc's rule is Excel's
        ('=COUNTIF(A1:A6,"<>12")', False),  # a number
        ('=COUNTIF(A1:A6,"<>TRUE")', False),  # a logical value
        ('=COUNTIF(A1:A6,"<>c*")', False),  # wildcards: IronCalc keeps blanks and numbers already
        ('=COUNTIF(A1:A6,"<>1/1/2024")', False),  # a date read by the locale
        ('=COUNTIF(A1:A6,"Closed")', False),
    ],
)
def test_the_criteria_rewritten(formula, rewritten):
    assert (rewrite_formula(formula) is not None) is rewritten


def test_averages_maxima_and_minima_not_equal_to_a_text_are_the_layers():
    data = ledger({
        "average": '=AVERAGEIF(A1:A6,"<>Closed",B1:B6)',
        "averages": '=AVERAGEIFS(B1:B6,A1:A6,"<>"&D1)',
        "largest": '=_xlfn.MAXIFS(B1:B6,A1:A6,"<>Closed")',
        "smallest": '=_xlfn.MINIFS(B1:B6,A1:A6,"<>Open")',
    })
    for workbook in uploaded_and_stored(data):
        # THEN the blank and numeric rows count: (1+2+8+16+32)/5, 32, 2 (IronCalc alone: 4.5, 8, 4)
        assert workbook.calculate({}) == {"average": 11.8, "averages": 11.8, "largest": 32, "smallest": 2}
        assert workbook.correction_flags() == []


def test_the_forms_not_rewritten_are_flagged_at_upload():
    four = '=COUNTIFS(A1:A6,"<>a",A1:A6,"<>b",A1:A6,"<>c",A1:A6,"<>d")'  # 16 calls: not written
    assert flag_reason(four) is not None and rewrite_formula(four) is None
    assert flag_reason('=COUNTIF(A1:A6,"<>Closed")', array_formula=True) is not None
    assert flag_reason('=COUNTIF(A1:A6,"<>Closed")') is None  # rewritten instead
    report = check(ledger({"four": four, "array": ArrayFormula("E2", '=COUNTIF(A1:A6,"<>Closed")')}), "ironcalc")
    assert any(flag["cell"] == "E1" and "COUNTIFS" in flag["reason"] for flag in report.flagged)
    # an array formula of one cell is not rewritten: flagged at its own cell
    assert any(flag["cell"] == "E2" and "COUNTIF" in flag["reason"] for flag in report.flagged)


def test_a_criterion_ordering_logical_values_compares_the_logical_cells_alone():
    # Excel-saved, formulas' test.xlsx: over "ciao" (or a date as text) and TRUE, with -1 and 10
    # beside them, "<=TRUE" matches TRUE alone: COUNTIF 1 (STATISTICAL!Y24), SUMIF -1
    # (MATH & TRIG!Y73), AVERAGEIFS, MAXIFS and MINIFS -1 (STATISTICAL!Y7, Y64, Y68)
    data = named_formulas({
        "counted": '=COUNTIF(A1:A2,"<=TRUE")',
        "summed": '=SUMIF(A1:A2,"<=TRUE",B1:B2)',
        "averaged": '=AVERAGEIFS(B1:B2,A1:A2,"<=TRUE")',
        "largest": '=MAXIFS(B1:B2,A1:A2,"<=TRUE")',
        "smallest": '=MINIFS(B1:B2,A1:A2,"<=TRUE")',
    }, column="E", cells={"A1": "ciao", "A2": True, "B1": 10, "B2": -1}, names={"flags": "$A$1:$A$2"})
    for workbook in uploaded_and_stored(data):
        # (IronCalc alone: 0, 0, #DIV/0!, 0 and 0)
        assert workbook.calculate({}) == {"counted": 1, "summed": -1, "averaged": -1, "largest": -1, "smallest": -1}
        # FALSE comes before TRUE, so it is at most TRUE too; the text never is
        assert workbook.calculate({"flags": [[False], [True]]}, ["counted", "summed"]) == {"counted": 2, "summed": 9}
