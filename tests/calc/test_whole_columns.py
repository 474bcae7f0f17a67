"""Statistics and SUMPRODUCT over whole columns: bounded at upload to the rows that can hold
values, with Excel's answers (shared/calc/corrections/whole_columns.py).

Expected values follow the functions' documented definitions (Microsoft support: AVERAGE, MAX,
COUNTA, STDEV.S, LARGE, CORREL, SLOPE, COUNTBLANK, SUBTOTAL, SUMPRODUCT, LOOKUP, MATCH; empty
cells in a reference are ignored, pairs with one left out, and in arrays a comparison of an
empty cell is made like any other), computed here from the data the test writes. IronCalc reads all 1,048,576 rows of each such reference (about 0.1 s a cell, 0.6 s
for SUMPRODUCT); the bounded formulas read the ledger's rows.
"""

import io
import statistics

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula

from shared.calc import get_engine
from shared.calc.refs import MAX_ROWS

from .conftest import add_name, to_bytes

CATEGORIES = ("rent", "food", "travel", "fees")
ROWS = 120
AMOUNTS = [round(10 + (r * 37) % 250 + r / 8, 2) for r in range(1, ROWS + 1)]
LABELS = [CATEGORIES[r % len(CATEGORIES)] for r in range(1, ROWS + 1)]
UNITS = [r % 9 + 1 for r in range(1, ROWS + 1)]

SUMMARIES = {
    "average": ("=AVERAGE(Ledger!B:B)", statistics.mean(AMOUNTS)),
    "largest": ("=MAX(Ledger!$B:$B)", max(AMOUNTS)),
    "entries": ("=COUNTA(Ledger!A:A)", ROWS),
    "spread": ("=_xlfn.STDEV.S(Ledger!B:B)", statistics.stdev(AMOUNTS)),
    "third": ("=LARGE(Ledger!B:B,3)", sorted(AMOUNTS)[-3]),
    "rent": ('=SUMPRODUCT((Ledger!A:A="rent")*Ledger!B:B)',
             sum(a for a, c in zip(AMOUNTS, LABELS) if c == "rent")),
    "blank_rows": ('=SUMPRODUCT(--(Ledger!A:A=""))', MAX_ROWS - ROWS),
    "named": ("=MAX(amounts)", max(AMOUNTS)),
    # LOOKUP's "last match" idiom: 2 is never found among the 1s and #DIV/0!s, so the last 1 is
    "last_travel": ('=LOOKUP(2,1/(Ledger!A:A="travel"),Ledger!B:B)',
                    [a for a, c in zip(AMOUNTS, LABELS) if c == "travel"][-1]),
    "correlation": ("=CORREL(Ledger!B:B,Ledger!C:C)", statistics.correlation(AMOUNTS, UNITS)),
    "slope": ("=SLOPE(Ledger!B:B,Ledger!C:C)", statistics.linear_regression(UNITS, AMOUNTS).slope),
    "empty_labels": ("=COUNTBLANK(Ledger!A:A)", MAX_ROWS - ROWS),
    "subtotal": ("=SUBTOTAL(9,Ledger!B:B)", sum(AMOUNTS)),
}


def ledger(*, extra_rows: int = 0) -> openpyxl.Workbook:
    """A ledger of ROWS labelled amounts and units in Ledger!A:C, the summaries on Summary, each named as
    an output; `extra_rows` rows below the data named `more` as an input range."""
    wb = openpyxl.Workbook()
    summary = wb.active
    summary.title = "Summary"
    sheet = wb.create_sheet("Ledger")
    for row, (label, amount, units) in enumerate(zip(LABELS, AMOUNTS, UNITS), start=1):
        sheet.cell(row, 1, label)
        sheet.cell(row, 2, amount)
        sheet.cell(row, 3, units)
    add_name(wb, "amounts", "Ledger!$B:$B")
    for row, (name, (formula, _)) in enumerate(SUMMARIES.items(), start=1):
        summary.cell(row, 1, formula)
        add_name(wb, name, f"Summary!$A${row}")
    if extra_rows:
        add_name(wb, "more", f"Ledger!$A${ROWS + 1}:$B${ROWS + extra_rows}")
    return wb


def assert_close(outputs: dict, expected: dict) -> None:
    for name, value in expected.items():
        assert abs(outputs[name] - value) <= 1e-9 * max(1, abs(value)), (name, outputs[name], value)


def test_summaries_over_whole_columns_answer_excel_and_read_only_the_ledger():
    # GIVEN a ledger summarised over whole columns, directly and through a name
    data = to_bytes(ledger())
    engine = get_engine("ironcalc")

    # WHEN it is uploaded and a job runs
    model, _, fixes = engine._load(data)
    outputs = engine.load_serialized(engine.load_xlsx(data).serialize()).calculate({})

    # THEN every summary is Excel's, blank rows counted where the formula counts them
    assert_close(outputs, {name: value for name, (_, value) in SUMMARIES.items()})
    # and each formula reads the ledger's rows and one or two blank rows, not a million
    assert len(fixes.rewrites) == len(SUMMARIES)
    assert model.get_cell_formula(0, 2, 1) == f"=MAX(Ledger!$B$1:$B${ROWS + 1})"
    assert model.get_cell_formula(0, 8, 1) == f"=MAX(Ledger!$B$1:$B${ROWS + 1})"
    blank_rows = f"{MAX_ROWS - ROWS - 2}*SUMPRODUCT(--(Ledger!$A${ROWS + 1}:$A${ROWS + 2}=\"\"))/2"
    assert blank_rows in model.get_cell_formula(0, 7, 1)


def test_a_job_writing_rows_below_the_ledger_is_counted():
    # GIVEN the ledger with an input range of three more rows below it
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(ledger(extra_rows=3)))

    # WHEN a job adds two rent entries there
    outputs = workbook.calculate({"more": [["rent", 1000], ["rent", 2000], [None, None]]})

    # THEN the summaries take them in
    amounts = AMOUNTS + [1000, 2000]
    assert_close(outputs, {
        "largest": 2000, "entries": ROWS + 2, "average": statistics.mean(amounts),
        "rent": SUMMARIES["rent"][1] + 3000, "blank_rows": MAX_ROWS - ROWS - 2,
    })


def test_the_filled_workbook_keeps_the_formulas_as_written():
    # GIVEN a job calculated on the ledger
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(ledger()))
    workbook.calculate({})

    # WHEN the workbook is exported
    summary = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Summary"]

    # THEN each summary shows the user's formula
    for row, (formula, _) in enumerate(SUMMARIES.values(), start=1):
        assert summary.cell(row, 1).value == formula


def test_a_sheet_where_an_array_could_spill_into_the_column_is_left_whole():
    # GIVEN a dynamic array formula in column A of the ledger, below the data
    wb = ledger()
    wb["Ledger"]["A200"] = "=_xlfn.SEQUENCE(3)"

    # WHEN it is loaded
    model, _, _ = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN nothing reading columns A or B of the ledger is cut (a spill could reach any row)
    assert model.get_cell_formula(0, 2, 1) == "=MAX(Ledger!$B:$B)"
    assert model.get_cell_formula(0, 8, 1) == "=MAX(Ledger!$B:$B)"  # the name, inlined as ever
    assert all("$1:" not in model.get_cell_formula(0, row, 1) for row in range(1, len(SUMMARIES) + 1))


def test_one_cell_array_formulas_over_whole_columns_answer_excel():
    # GIVEN the classic array formulas of a ledger: a conditional largest, sum and count of
    # blanks over whole columns, each entered as an array formula of one cell
    wb = ledger()
    summary = wb["Summary"]
    formulas = {
        "largest_rent": ('=MAX(IF(Ledger!A:A="rent",Ledger!B:B))',
                         max(a for a, c in zip(AMOUNTS, LABELS) if c == "rent")),
        "food": ('=SUM(IF(Ledger!A:A="food",Ledger!B:B,0))',
                 sum(a for a, c in zip(AMOUNTS, LABELS) if c == "food")),
        "unlabelled": ('=SUM((Ledger!A:A="")*1)', MAX_ROWS - ROWS),
        "all_positive": ("=AND(Ledger!B:B>=0)", True),
        "travel": ('=SUM(IF(labels="travel",amounts))',  # names to whole columns
                   sum(a for a, c in zip(AMOUNTS, LABELS) if c == "travel")),
        "first_big_food": ('=INDEX(Ledger!B:B,MATCH(1,(Ledger!A:A="food")*(Ledger!B:B>200),0))',
                           next(a for a, c in zip(AMOUNTS, LABELS) if c == "food" and a > 200)),
    }
    add_name(wb, "labels", "Ledger!$A:$A")
    for row, (name, (formula, _)) in enumerate(formulas.items(), start=1):
        summary.cell(row, 3).value = ArrayFormula(f"C{row}", formula)
        add_name(wb, name, f"Summary!$C${row}")
    data = to_bytes(wb)
    engine = get_engine("ironcalc")

    # WHEN it is uploaded and a job runs
    model, _, _ = engine._load(data)
    outputs = engine.load_serialized(engine.load_xlsx(data).serialize()).calculate({})

    # THEN each is Excel's answer, from formulas that read the ledger's rows and two blank ones
    assert_close({k: outputs[k] for k in formulas if k != "all_positive"},
                 {k: v for k, (_, v) in formulas.items() if k != "all_positive"})
    assert outputs["all_positive"] is True
    assert model.get_cell_formula(0, 1, 3) == f'=MAX(IF(Ledger!$A$1:$A${ROWS + 2}="rent",Ledger!$B$1:$B${ROWS + 2}))'
    assert all("A:A" not in model.get_cell_formula(0, row, 3) for row in range(1, 7))
    assert model.get_cell_formula(0, 5, 3).startswith(f'=SUM(IF(Ledger!$A$1:$A${ROWS + 2}="travel",Ledger!$B$1:$B${ROWS + 2}))+')


def test_array_formulas_of_several_cells_counts_and_calls_of_other_functions_are_not_rewritten():
    # GIVEN an array formula filling two cells, a count of IF's answers (whose blank cells IronCalc
    # counts one way over a whole column and another over a cut one) and a SUMPRODUCT of LEN
    wb = ledger()
    summary = wb["Summary"]
    summary["C1"] = ArrayFormula("C1:C2", "=MAX(Ledger!B:B*2)*{1;2}")
    summary["D1"] = ArrayFormula("D1", '=COUNT(IF(Ledger!A:A="rent",Ledger!B:B))')
    summary["E1"] = "=SUMPRODUCT(LEN(Ledger!A:A))"

    # WHEN it is loaded
    model, _, fixes = get_engine("ironcalc")._load(to_bytes(wb))

    # THEN all three are left as written
    assert {(w.row, w.col) for w in fixes.rewrites}.isdisjoint({(1, 3), (1, 4), (1, 5)})
    assert "Ledger!B:B" in model.get_cell_formula(0, 1, 3)
    assert "Ledger!A:A" in model.get_cell_formula(0, 1, 4)
    assert "Ledger!A:A" in model.get_cell_formula(0, 1, 5)


def test_filter_over_whole_columns_spills_the_rows_it_keeps():
    # GIVEN lists filtered out of the ledger's whole columns, spilling on the summary sheet,
    # and a sum over one such list (FILTER keeps the rows whose test is TRUE, in order)
    wb = ledger()
    summary = wb["Summary"]
    rent = [a for a, c in zip(AMOUNTS, LABELS) if c == "rent"]
    large_units = [a for a, u in zip(AMOUNTS, UNITS) if u > 7]
    summary["D1"] = ArrayFormula(f"D1:D{len(rent)}", '=_xlfn._xlws.FILTER(Ledger!B:B,Ledger!A:A="rent")')
    summary["E1"] = ArrayFormula(f"E1:E{len(large_units)}", "=_xlfn._xlws.FILTER(Ledger!B:B,Ledger!C:C>7)")
    summary["F1"] = ArrayFormula("F1", '=SUM(_xlfn._xlws.FILTER(Ledger!B:B,(Ledger!A:A="food")*(Ledger!C:C>2)))')
    add_name(wb, "rent_list", f"Summary!$D$1:$D${len(rent)}")
    add_name(wb, "large_list", f"Summary!$E$1:$E${len(large_units)}")
    add_name(wb, "food_sum", "Summary!$F$1")
    engine = get_engine("ironcalc")

    # WHEN it is uploaded and a job runs
    model, _, _ = engine._load(to_bytes(wb))
    outputs = engine.load_serialized(engine.load_xlsx(to_bytes(wb)).serialize()).calculate(
        {}, outputs=["rent_list", "large_list", "food_sum"])

    # THEN the lists are the kept rows, and the million blank rows are read only when a blank
    # row would pass the test (it never does here)
    assert outputs["rent_list"] == rent
    assert outputs["large_list"] == large_units
    assert_close(outputs, {"food_sum": sum(a for a, c, u in zip(AMOUNTS, LABELS, UNITS) if c == "food" and u > 2)})
    formula = model.get_cell_formula(0, 1, 4)
    assert f"FILTER(Ledger!$B$1:$B${ROWS + 1},Ledger!$A$1:$A${ROWS + 1}=\"rent\")" in formula
    assert f"Ledger!$A${ROWS + 1}=\"rent\"" in formula  # the test on the first blank row


def test_filter_by_a_named_input_cell_answers_each_job():
    # GIVEN a list filtered by a threshold the consumer sends (a named input cell)
    wb = ledger()
    summary = wb["Summary"]
    summary["G1"] = 0
    add_name(wb, "limit", "Summary!$G$1")
    summary["H1"] = ArrayFormula("H1", "=SUM(_xlfn._xlws.FILTER(Ledger!B:B,Ledger!C:C>limit))")
    add_name(wb, "above", "Summary!$H$1")
    engine = get_engine("ironcalc")
    model, _, _ = engine._load(to_bytes(wb))
    book = engine.load_xlsx(to_bytes(wb))
    assert f"FILTER(Ledger!$B$1:$B${ROWS + 1},Ledger!$C$1:$C${ROWS + 1}>limit)" in model.get_cell_formula(0, 1, 8)

    # WHEN jobs send thresholds (a blank row is 0: above -1 it passes, and counts 0 in the sum)
    for limit in (7, 2, -1):
        outputs = book.calculate({"limit": limit}, outputs=["above"])

        # THEN each sum is that of the rows above the threshold
        assert_close(outputs, {"above": sum(a for a, u in zip(AMOUNTS, UNITS) if u > limit)})


def test_filter_whose_test_keeps_blank_rows_reads_the_whole_column():
    # GIVEN a test a blank row passes (a blank is 0, less than 3): Excel's answer runs on
    # through the blank rows, one 0 each
    wb = ledger()
    wb["Summary"]["D1"] = ArrayFormula("D1", "=ROWS(_xlfn._xlws.FILTER(Ledger!B:B,Ledger!C:C<3))")
    add_name(wb, "kept", "Summary!$D$1")

    # WHEN a job runs
    outputs = get_engine("ironcalc").load_xlsx(to_bytes(wb)).calculate({}, outputs=["kept"])

    # THEN every blank row is counted
    assert outputs["kept"] == sum(1 for u in UNITS if u < 3) + MAX_ROWS - ROWS


def test_unique_over_a_whole_column_lists_each_label_once_and_the_blank_rows_once():
    # GIVEN the distinct labels of the ledger's whole column A, spilling: UNIQUE keeps each
    # value once in order of first appearance, the million blank rows one blank (shown as 0);
    # with exactly_once, the labels that appear once only: none here, so #CALC!
    wb = ledger()
    summary = wb["Summary"]
    labels = list(dict.fromkeys(LABELS))
    summary["D1"] = ArrayFormula(f"D1:D{len(labels) + 1}", "=_xlfn.UNIQUE(Ledger!A:A)")
    summary["E1"] = ArrayFormula("E1", "=_xlfn.UNIQUE(Ledger!A:A,FALSE,TRUE)")
    add_name(wb, "labels", f"Summary!$D$1:$D${len(labels) + 1}")
    add_name(wb, "once", "Summary!$E$1")
    engine = get_engine("ironcalc")

    # WHEN a job runs
    model, _, _ = engine._load(to_bytes(wb))
    outputs = engine.load_serialized(engine.load_xlsx(to_bytes(wb)).serialize()).calculate(
        {}, outputs=["labels", "once"])

    # THEN the list is Excel's, read from the ledger's rows and two blank rows
    assert outputs == {"labels": [*labels, 0], "once": "#CALC!"}
    assert model.get_cell_formula(0, 1, 4) == f"=UNIQUE(Ledger!$A$1:$A${ROWS + 2})"


def test_xlookup_and_xmatch_of_several_criteria_over_whole_columns_answer_excel():
    # GIVEN the multi-criteria lookups of Excel 365 over whole columns: the first and the last
    # food entry above 200, its position, and a search no row passes
    wb = ledger()
    summary = wb["Summary"]
    big_food = [(i, a) for i, (a, c) in enumerate(zip(AMOUNTS, LABELS), start=1) if c == "food" and a > 200]
    test = '(Ledger!A:A="food")*(Ledger!B:B>200)'
    formulas = {
        "first_big": (f"=_xlfn.XLOOKUP(1,{test},Ledger!B:B)", big_food[0][1]),
        "last_big": (f'=_xlfn.XLOOKUP(1,{test},Ledger!B:B,"none",0,-1)', big_food[-1][1]),
        "where": (f"=_xlfn.XMATCH(1,{test})", big_food[0][0]),
        "missing": ('=_xlfn.XLOOKUP(1,(Ledger!A:A="rent")*(Ledger!B:B>10000),Ledger!B:B,"none")', "none"),
    }
    for row, (name, (formula, _)) in enumerate(formulas.items(), start=1):
        summary.cell(row, 5).value = ArrayFormula(f"E{row}", formula)
        add_name(wb, name, f"Summary!$E${row}")
    engine = get_engine("ironcalc")

    # WHEN a job runs
    model, _, _ = engine._load(to_bytes(wb))
    outputs = engine.load_serialized(engine.load_xlsx(to_bytes(wb)).serialize()).calculate(
        {}, outputs=list(formulas))

    # THEN each is the ledger's answer, from the ledger's rows and two blank ones
    assert outputs == {name: value for name, (_, value) in formulas.items()}
    assert all(f"$A$1:$A${ROWS + 2}" in model.get_cell_formula(0, row, 5) for row in range(1, 5))
