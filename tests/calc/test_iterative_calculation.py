"""Iterative calculation: a workbook saved with "Enable iterative calculation" answers its
circular references as Excel does, by repeating the calculation from the saved values until no
value changes by Maximum Change (`iterateDelta`) or more, at most Maximum Iterations
(`iterateCount`) times (Microsoft, "How iteration and maximum change settings affect
calculations", Q177856). A cycle that does not settle is refused, never answered.

Expected values are the cycles' exact solutions, worked out by hand: Excel's own answer is only
within Maximum Change of them, so that is the tolerance asserted.

- The VAT gross-up (exceltip.com "Iteration in Excel 2007", built in pycel's Excel-saved
  circular.xlsx): B1 = B3 - B2, B2 = A2 * B1, so B1 = B3 / (1 + A2).
- Interest on a balance that includes it: B1 = A1 + C1, C1 = B1 * 5%, so C1 = A1 * 0.05 / 0.95.
"""

import io
import re
import zipfile

import openpyxl
import pytest

from shared.calc import get_engine
from shared.calc.corrections import iteration
from shared.calc.fidelity import check
from shared.errors import WorkbookError
from tests.corpus import corpus_file
from tests.factories import deploy_loan, worked_job
from tests.packages import edit_parts

from .conftest import add_name, to_bytes, uploaded_and_stored

VAT_BOOK = "pycel/tests/fixtures/circular.xlsx"  # Excel-saved: iterate="1" iterateDelta="0.01"


def vat_book() -> bytes:
    """pycel's Excel-saved circular.xlsx with names for its VAT gross-up: gross (B3, saved as 0),
    rate (A2, 0.2), net (B1) and vat (B2)."""
    names = (
        '<definedNames><definedName name="gross">Sheet1!$B$3</definedName>'
        '<definedName name="net">Sheet1!$B$1</definedName>'
        '<definedName name="rate">Sheet1!$A$2</definedName>'
        '<definedName name="vat">Sheet1!$B$2</definedName></definedNames>'
    )

    def named(part: bytes) -> bytes:
        return re.sub(rb"(<calcPr)", names.encode() + rb"\1", part, count=1)

    return edit_parts(corpus_file(VAT_BOOK).read_bytes(), {"xl/workbook.xml": named})


def interest_book(*, iterate: bool = True, count: int = 100, delta: float = 0.001, counter: bool = False) -> bytes:
    """principal (A1); balance B1 = A1 + C1; interest C1 = B1 * 5%; doubled D1 = C1 * 2; and,
    with `counter`, a cycle that never settles: B10 = B10 + 1 read by E1."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Loan"
    sheet["A1"], sheet["B1"], sheet["C1"], sheet["D1"] = 1000, "=A1+C1", "=B1*0.05", "=C1*2"
    add_name(book, "principal", "Loan!$A$1")
    add_name(book, "interest", "Loan!$C$1")
    add_name(book, "doubled", "Loan!$D$1")
    if counter:
        sheet["B10"], sheet["E1"] = "=B10+1", "=B10*2"
        add_name(book, "counted", "Loan!$E$1")
    book.calculation.iterate = iterate
    book.calculation.iterateCount = count
    book.calculation.iterateDelta = delta
    return to_bytes(book)


def interest_on(principal: float) -> float:
    return principal * 0.05 / 0.95


def test_the_workbook_settings_are_read_from_calc_pr():
    assert iteration.settings(vat_book()) == iteration.Settings(10000, 0.01)
    assert iteration.settings(interest_book(count=7, delta=0.5)) == iteration.Settings(7, 0.5)
    assert iteration.settings(interest_book(iterate=False)) is None


@pytest.mark.parametrize("gross", [100, 250.5, 0])
def test_the_vat_gross_up_of_an_excel_saved_workbook_converges(gross):
    for book in uploaded_and_stored(vat_book()):
        answer = book.calculate({"gross": gross}, outputs=["net", "vat"])
        assert answer["net"] == pytest.approx(gross / 1.2, abs=0.01)
        assert answer["vat"] == pytest.approx(gross * 0.2 / 1.2, abs=0.01)


def test_a_cycle_settles_within_maximum_change_and_feeds_the_cells_after_it():
    for book in uploaded_and_stored(interest_book()):
        for principal in (1000, 2000, 12345.67):
            answer = book.calculate({"principal": principal}, outputs=["interest", "doubled"])
            assert answer["interest"] == pytest.approx(interest_on(principal), abs=0.001)
            assert answer["doubled"] == pytest.approx(2 * answer["interest"], rel=1e-15)


def test_a_smaller_maximum_change_gives_a_closer_answer():
    book = get_engine("ironcalc").load_xlsx(interest_book(delta=1e-12))
    answer = book.calculate({"principal": 2000}, outputs=["interest"])
    assert answer["interest"] == pytest.approx(interest_on(2000), rel=1e-12)


def test_a_cycle_that_never_settles_is_refused_and_the_others_still_answer():
    book = get_engine("ironcalc").load_xlsx(interest_book(counter=True, count=50))
    with pytest.raises(WorkbookError, match="do not converge"):
        book.calculate({"principal": 2000}, outputs=["counted"])
    answer = book.calculate({"principal": 2000}, outputs=["interest"])
    assert answer["interest"] == pytest.approx(interest_on(2000), abs=0.001)


def test_without_iterative_calculation_a_circular_reference_still_fails():
    book = get_engine("ironcalc").load_xlsx(interest_book(iterate=False))
    with pytest.raises(WorkbookError, match="circular reference"):
        book.calculate({"principal": 2000}, outputs=["interest"])


def test_the_filled_workbook_keeps_the_formulas_and_the_iteration_settings():
    book = get_engine("ironcalc").load_xlsx(interest_book(delta=0.0001))
    book.calculate({"principal": 2000}, outputs=["interest"])
    with zipfile.ZipFile(io.BytesIO(book.to_xlsx())) as package:
        workbook = package.read("xl/workbook.xml").decode()
        sheet = package.read("xl/worksheets/sheet1.xml").decode()
    assert re.search(r'<calcPr[^>]*iterate="1"', workbook)
    assert 'iterateCount="100"' in workbook and 'iterateDelta="0.0001"' in workbook
    assert "<f>A1+C1</f>" in sheet and "<f>B1*0.05</f>" in sheet
    filled = openpyxl.load_workbook(io.BytesIO(book.to_xlsx()), data_only=True)["Loan"]
    assert filled["C1"].value == pytest.approx(interest_on(2000), abs=0.0001)


def test_the_upload_check_names_a_cycle_that_does_not_settle():
    report = check.check(interest_book(counter=True, count=20))
    named = [entry for entry in report.unsupported_functions if entry.startswith("Iterative calculation")]
    assert "Iterative calculation at Loan!B10 (still changing by 0.001 or more after 20 iterations)" in named
    assert not any("C1" in entry for entry in named)


def test_a_cycle_through_indirect_is_not_iterated():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["B1"], sheet["C1"] = 1000, '=A1+INDIRECT("C1")', "=B1*0.05"
    add_name(book, "interest", "Sheet!$C$1")
    book.calculation.iterate = True
    loaded = get_engine("ironcalc").load_xlsx(to_bytes(book))
    with pytest.raises(WorkbookError, match="circular"):
        loaded.calculate({}, outputs=["interest"])
    report = check.check(to_bytes(book))
    assert any("INDIRECT" in entry for entry in report.unsupported_functions)


def debt_schedule(months: int = 120) -> bytes:
    """Interest on the average balance, month by month: opening A = the last closing B, interest
    C = rate / 12 * (A + B) / 2, closing B = A + C + D with a repayment D every twelfth row; the
    total interest (Inputs!B1) is the output. Each month is a cycle, and each feeds the next."""
    book = openpyxl.Workbook()
    schedule = book.active
    schedule.title = "Debt schedule"
    inputs = book.create_sheet("Inputs")
    inputs["A1"], inputs["A2"] = 0.06, 1_000_000
    schedule["B1"] = "=Inputs!A2"
    for row in range(2, months + 2):
        schedule[f"A{row}"] = f"=B{row - 1}"
        schedule[f"C{row}"] = f"=Inputs!$A$1/12*(A{row}+B{row})/2"
        schedule[f"D{row}"] = "=IF(MOD(ROW(),12)=0,-50000,0)"
        schedule[f"B{row}"] = f"=A{row}+C{row}+D{row}"
    inputs["B1"] = f"=SUM('Debt schedule'!C2:C{months + 1})"
    add_name(book, "rate", "Inputs!$A$1")
    add_name(book, "total_interest", "Inputs!$B$1")
    book.calculation.iterate = True
    return to_bytes(book)


def total_interest(rate: float, months: int = 120) -> float:
    """The schedule solved month by month: close = (open * (1 + m/2) + repayment) / (1 - m/2)."""
    monthly, balance, total = rate / 12, 1_000_000.0, 0.0
    for row in range(2, months + 2):
        close = (balance * (1 + monthly / 2) + (-50000 if row % 12 == 0 else 0)) / (1 - monthly / 2)
        total += monthly * (balance + close) / 2
        balance = close
    return total


def test_a_schedule_of_cycles_each_feeding_the_next_converges():
    # a value carried from month to month crosses the whole schedule in each round, so 120
    # chained cycles settle within Excel's default 100 iterations
    for book in uploaded_and_stored(debt_schedule()):
        for rate in (0.06, 0.11):
            answer = book.calculate({"rate": rate}, outputs=["total_interest"])
            assert answer["total_interest"] == pytest.approx(total_interest(rate), abs=0.001)


def test_the_cycle_is_broken_where_the_carried_value_stays_a_formula():
    # one cell per month holds a value; where the balance is carried on to the next month, it
    # is the interest cell, and the balance is calculated from it
    from shared.calc.ironcalc.model import load_model

    model = load_model(debt_schedule(months=3))
    model.evaluate()
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    keys = iteration.circular_cells(model)
    reads = iteration._reads({k: model.get_cell_formula(*k) for k in keys}, sheets, {})
    chosen = iteration._feedback_cells(reads)
    assert len(chosen) == 3 and {(0, 2, 3), (0, 3, 3)} <= chosen


def test_a_data_table_over_a_cycle_iterates_for_each_substituted_value():
    # the payment reads itself: B3 = (B1*B2 + B3) / 2 settles at B1*B2, so each data table
    # cell is the same as without the cycle, within Maximum Change
    from .test_data_tables import by_rate, loan_tables_workbook

    def iterating(part: bytes) -> bytes:
        return re.sub(rb"<calcPr\b", rb'<calcPr iterate="1" iterateDelta="0.000001"', part, count=1)

    data = edit_parts(loan_tables_workbook(payment="=(B1*B2+B3)/2"), {"xl/workbook.xml": iterating})
    assert iteration.settings(data) == iteration.Settings(100, 0.000001)
    for book in uploaded_and_stored(data):
        answer = book.calculate({"principal": 2000}, outputs=["payment", "by_rate"])
        assert answer["payment"] == pytest.approx(2000 * 0.05, abs=1e-5)
        for got, expected in zip(answer["by_rate"], by_rate(2000)):
            assert got == pytest.approx(expected, abs=1e-5)


def test_a_job_on_a_deployed_workbook_answers_its_cycle(client, admin, run_worker):
    # GIVEN the interest workbook deployed
    deployed = deploy_loan(admin, interest_book())

    # WHEN a job sends another principal
    job = worked_job(client, deployed, {"principal": 4000}, run_worker)

    # THEN the interest and what is calculated from it follow, within Maximum Change
    assert job["status"] == "completed", job
    assert job["outputs"]["interest"] == pytest.approx(interest_on(4000), abs=0.001)
    assert job["outputs"]["doubled"] == pytest.approx(2 * job["outputs"]["interest"], rel=1e-15)


def test_an_upload_whose_output_never_settles_is_refused(admin):
    with pytest.raises(WorkbookError, match="circular references do not converge"):
        deploy_loan(admin, interest_book(counter=True, count=30))
