"""The `formulas` engine behind the same interface as IronCalc."""

import io

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc import available_engines, blob_engine_name, get_engine
from shared.errors import InputValidationError, WorkbookError

from .conftest import LOAN_QUOTE, add_name, to_bytes
from .test_fidelity import excel_saved

LOAN_INPUTS = {"principal": 250000, "annual_rate": 0.045, "years": 30, "start_date": "2026-01-01"}


def rates_workbook() -> bytes:
    """Credit-score bands in A1:B6, looked up over INDIRECT("A1:B20") (a blank tail the
    correction layer cannot bound at load, so IronCalc 0.9.1 stays wrong), as Excel saved it."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Rates"
    bands = [(300, 0.12), (580, 0.09), (670, 0.07), (740, 0.055), (800, 0.045), (850, 0.04)]
    for row, (score, rate) in enumerate(bands, start=1):
        ws.cell(row, 1, score)
        ws.cell(row, 2, rate)
    ws["D1"] = 720
    ws["D2"] = 100000
    ws["E1"] = '=VLOOKUP(D1,INDIRECT("A1:B20"),2,TRUE)'
    ws["E2"] = "=E1*D2"
    ws["E3"] = '=IF(E1>0.08,"high","normal")'
    for name, ref in {"score": "$D$1", "amount": "$D$2", "rate": "$E$1", "interest": "$E$2",
                      "band": "$E$3"}.items():
        add_name(wb, name, f"Rates!{ref}")
    return excel_saved(wb, {"Rates!E1": 0.07, "Rates!E2": 7000, "Rates!E3": "normal"})


@pytest.fixture(scope="module")
def rates():
    return get_engine("formulas").load_xlsx(rates_workbook())


def test_formulas_is_a_registered_engine():
    assert "formulas" in available_engines()
    assert get_engine("formulas").name == "formulas"


def test_named_ranges_are_found_as_with_ironcalc(rates):
    found = {(r.name, r.ref, r.kind) for r in rates.named_ranges()}
    assert found == {("score", "D1", "input"), ("amount", "D2", "input"), ("rate", "E1", "output"),
                     ("interest", "E2", "output"), ("band", "E3", "output")}


def test_each_calculation_starts_from_the_uploaded_inputs(rates):
    # GIVEN a job that changes both inputs
    first = rates.calculate({"score": 590, "amount": 200000})
    # WHEN the next job gives only the score
    second = rates.calculate({"score": 810})
    # THEN the amount is the uploaded one again, and the lookup is Excel's answer
    assert first == {"rate": 0.09, "interest": pytest.approx(18000), "band": "high"}
    assert second == {"rate": 0.045, "interest": pytest.approx(4500), "band": "normal"}
    assert rates.calculate({}) == {"rate": 0.07, "interest": pytest.approx(7000), "band": "normal"}


def test_outputs_can_be_asked_by_name(rates):
    assert rates.calculate({"score": 300}, outputs=["RATE"]) == {"rate": 0.12}


def test_the_compiled_function_is_built_once_and_reused(rates):
    rates.calculate({})
    compiled = rates._function
    rates.calculate({"score": 700})
    assert rates._function is compiled


def test_the_loan_quote_gives_the_same_answers_as_ironcalc():
    data = LOAN_QUOTE.read_bytes()
    ours = get_engine("formulas").load_xlsx(data).calculate(LOAN_INPUTS)
    theirs = get_engine("ironcalc").load_xlsx(data).calculate(LOAN_INPUTS)
    assert ours["monthly_payment"] == pytest.approx(1266.7132745647, rel=1e-12)
    assert ours["end_date"] == "2056-01-01"
    assert [pytest.approx(row, rel=1e-12) for row in theirs["schedule"]] == ours["schedule"]
    for name in ("total_paid", "total_interest"):
        assert ours[name] == pytest.approx(theirs[name], rel=1e-12)


def test_bad_inputs_are_refused_before_calculating(rates):
    with pytest.raises(InputValidationError):
        rates.calculate({"score": [1, 2]})


def test_a_serialized_workbook_is_the_xlsx_and_the_range_table(rates):
    blob = rates.serialize()
    assert blob_engine_name(blob) == "formulas"
    restored = get_engine("formulas").load_serialized(blob)
    assert [r.name for r in restored.named_ranges()] == [r.name for r in rates.named_ranges()]
    assert restored.calculate({"score": 850}) == {
        "rate": 0.04, "interest": pytest.approx(4000), "band": "normal"}


def test_an_ironcalc_blob_is_refused():
    blob = get_engine("ironcalc").load_xlsx(LOAN_QUOTE.read_bytes()).serialize()
    with pytest.raises(WorkbookError):
        get_engine("formulas").load_serialized(blob)


def test_the_filled_workbook_keeps_formulas_and_caches_the_new_values(rates):
    rates.calculate({"score": 590})
    filled = rates.to_xlsx()
    values = openpyxl.load_workbook(io.BytesIO(filled), data_only=True)["Rates"]
    formulas = openpyxl.load_workbook(io.BytesIO(filled))["Rates"]
    assert (values["D1"].value, values["E1"].value) == (590, 0.09)
    assert values["E2"].value == pytest.approx(9000)
    assert values["E3"].value == "high"
    assert formulas["E1"].value == '=VLOOKUP(D1,INDIRECT("A1:B20"),2,TRUE)'


def test_errors_come_back_as_their_text():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = 0
    ws["B1"] = "=1/A1"
    add_name(wb, "divisor", "Sheet!$A$1")
    add_name(wb, "ratio", "Sheet!$B$1")
    workbook = get_engine("formulas").load_xlsx(to_bytes(wb))
    assert workbook.calculate({}) == {"ratio": "#DIV/0!"}
    assert workbook.calculate({"divisor": 4}) == {"ratio": 0.25}


def test_a_file_that_is_not_a_workbook_is_refused():
    with pytest.raises(WorkbookError):
        get_engine("formulas").load_xlsx(b"PK not really a zip")


def test_running_out_of_memory_while_reading_is_the_memory_budget_not_an_unreadable_file(monkeypatch):
    # GIVEN a workbook formulas runs out of memory reading (whole columns it materialises, say)
    from shared.calc.fidelity.check import check
    from shared.calc.formulas import books

    def out_of_memory(self, *args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(books.ContainedModel, "loads", out_of_memory)
    data = rates_workbook()

    # WHEN a job calculates it, or the fidelity check tries it with formulas
    # THEN the memory error comes through, and the check's report says so, not "unreadable"
    with pytest.raises(MemoryError):
        get_engine("formulas").load_xlsx(data).calculate({})
    report = check(data, "formulas")
    assert (report.status, report.error) == ("failed", "out of memory")


def circular_workbook() -> bytes:
    """B1 and C1 refer to each other; D1 does not depend on them."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["B1"], ws["C1"], ws["D1"] = 1, "=C1+A1", "=B1+1", "=A1*2"
    add_name(wb, "seed", "Sheet!$A$1")
    add_name(wb, "loop", "Sheet!$B$1")
    add_name(wb, "twice", "Sheet!$D$1")
    return to_bytes(wb)


def test_circular_references_are_an_error_as_with_ironcalc():
    # formulas marks circular cells with an XlCircular whose text is "0": it must not come
    # back as an error named "0" (nor as the number 0), but as the circular-reference error
    engine = get_engine("formulas")
    values, _ = engine.recalculate_cells(
        circular_workbook(), [("Sheet", 1, 2), ("Sheet", 1, 3), ("Sheet", 1, 4)], set()
    )
    assert values == [("e", "#CIRC!"), ("e", "#CIRC!"), ("n", 2.0)]

    book = engine.load_xlsx(circular_workbook())
    with pytest.raises(WorkbookError, match="circular"):
        book.calculate({"seed": 2})
    assert book.calculate({"seed": 2}, ["twice"]) == {"twice": 4}


def test_an_output_over_an_array_formula_is_calculated_cell_by_cell():
    # GIVEN a trend line fitted by an array formula (LINEST into D1:E1, named "fit") and a
    # column-times-scalar array formula over F1:F2 (named "doubled"); y is the input "ys"
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Fit"
    for row, (y, x) in enumerate([(1, 1), (2, 2), (3.5, 3), (3.9, 4), (5.2, 5)], start=1):
        ws.cell(row, 2, y)
        ws.cell(row, 3, x)
    ws["D1"] = ArrayFormula("D1:E1", "=LINEST(B1:B5,C1:C5)")
    ws["F1"] = ArrayFormula("F1:F2", "=B1:B2*2")
    add_name(wb, "ys", "Fit!$B$1:$B$5")
    add_name(wb, "fit", "Fit!$D$1:$E$1")
    add_name(wb, "doubled", "Fit!$F$1:$F$2")
    book = get_engine("formulas").load_xlsx(to_bytes(wb))

    # WHEN it is calculated as uploaded, then with y = 2x
    uploaded = book.calculate({})
    answered = book.calculate({"ys": [[2], [4], [6], [8], [10]]})

    # THEN every cell of each area answers (formulas holds an array formula as one node for its
    # area, which the compiled function reads cell by cell)
    assert uploaded["fit"] == [pytest.approx(1.03), pytest.approx(0.03)]
    assert uploaded["doubled"] == [2, 4]
    assert answered == {"fit": [2, 0], "doubled": [4, 8]}
