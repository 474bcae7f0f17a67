"""Exact-match VLOOKUP and HLOOKUP are calculated as INDEX and MATCH (corrections/index_match.py):
the same answers, at a fifteenth of the cost in IronCalc. The expected values follow Microsoft's
definition of an exact-match lookup (the first value of the first column, or row, equal to the
lookup value, text compared without regard to case and with wildcards, #N/A when there is none);
the comparison with the lookups left as written covers everything else."""

import io
import random
from unittest import mock

import openpyxl

from shared.calc import corrections, get_engine

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_corrections_lookup import bands_with_room_below

PRICES = [("A-100", 12.5), ("a-200", 7.25), ("B-300", 99.0), ("A-100", 1.0), ("C-400", "on request")]


def price_list() -> openpyxl.Workbook:
    """Codes and prices in Prices!A1:B5 (also named `table`), codes across Across!A1:E2, a code
    as the input `code`, and the lookups as named outputs on Quote."""
    wb = openpyxl.Workbook()
    quote = wb.active
    quote.title = "Quote"
    prices = wb.create_sheet("Prices")
    across = wb.create_sheet("Across")
    for row, (code, price) in enumerate(PRICES, start=1):
        prices.cell(row, 1, code)
        prices.cell(row, 2, price)
        across.cell(1, row, code)
        across.cell(2, row, price)
    add_name(wb, "table", "Prices!$A$1:$B$5")
    quote["A1"] = "B-300"
    add_name(wb, "code", "Quote!$A$1")
    formulas = {
        "price": "=VLOOKUP(code,Prices!$A$1:$B$5,2,FALSE)",
        "by_name": "=VLOOKUP(code,table,2,0)",
        "across": "=HLOOKUP(code,Across!$A$1:$E$2,2,FALSE)",
        "or_else": '=IFERROR(VLOOKUP(code,Prices!$A:$B,2,FALSE),"no such code")',
        "in_text": '="Price: "&VLOOKUP(code,table,2,FALSE)',
        "summed": "=SUM(VLOOKUP(code,table,2,FALSE))",  # SUM reads a reference otherwise: left as written
        "column_out_of_table": "=VLOOKUP(code,table,3,FALSE)",
    }
    for row, (name, formula) in enumerate(formulas.items(), start=2):
        quote.cell(row, 1, formula)
        add_name(wb, name, f"Quote!$A${row}")
    return wb


def rewritten(workbook) -> set[str]:
    """The formulas the workbook calculates in a corrected form, as the upload wrote them."""
    return {w.original for w in workbook._fixes.rewrites}


def test_exact_lookups_answer_the_first_equal_value_as_index_and_match():
    for workbook in uploaded_and_stored(to_bytes(price_list())):
        # the first of two equal codes, text compared without regard to case
        assert workbook.calculate({"code": "a-100"}) == {
            "price": 12.5, "by_name": 12.5, "across": 12.5, "or_else": 12.5, "in_text": "Price: 12.5",
            "summed": 12.5, "column_out_of_table": "#REF!",
        }
        outputs = workbook.calculate({"code": "C-*"})  # a wildcard
        assert (outputs["price"], outputs["across"], outputs["summed"]) == ("on request", "on request", "#VALUE!")
        outputs = workbook.calculate({"code": "Z-999"})
        assert (outputs["price"], outputs["across"], outputs["or_else"]) == ("#N/A", "#N/A", "no such code")
        assert rewritten(workbook) == {
            "VLOOKUP(code,Prices!$A$1:$B$5,2,FALSE)", "VLOOKUP(code,table,2,0)",
            "HLOOKUP(code,Across!$A$1:$E$2,2,FALSE)", 'IFERROR(VLOOKUP(code,Prices!$A:$B,2,FALSE),"no such code")',
            '"Price: "&VLOOKUP(code,table,2,FALSE)',
        }
        assert workbook.correction_flags() == []


def test_the_filled_workbook_keeps_the_lookups_as_written():
    workbook = get_engine("ironcalc").load_xlsx(to_bytes(price_list()))
    workbook.calculate({"code": "B-300"})
    quote = openpyxl.load_workbook(io.BytesIO(workbook.to_xlsx()))["Quote"]
    assert quote["A2"].value == "=VLOOKUP(code,Prices!$A$1:$B$5,2,FALSE)"
    assert quote["A5"].value == '=IFERROR(VLOOKUP(code,Prices!$A:$B,2,FALSE),"no such code")'


def test_a_blank_key_is_not_found():
    """An empty cell is no value to find: a blank lookup value, 0 or FALSE is #N/A even where the
    searched column has a blank key (IronCalc 0.9.1's VLOOKUP took the blank row; its MATCH does
    not)."""
    book = to_bytes(_book({"A1": 1, "B1": "one", "B2": "blank key", "A3": 3, "B3": "three"},
                          {"blank": "=VLOOKUP(D1,$A$1:$B$3,2,FALSE)", "zero": "=VLOOKUP(0,$A$1:$B$3,2,FALSE)",
                           "false": "=VLOOKUP(FALSE,$A$1:$B$3,2,FALSE)",
                           "found": "=VLOOKUP(3,$A$1:$B$3,2,FALSE)"}))
    for workbook in uploaded_and_stored(book):
        assert workbook.calculate({}) == {"blank": "#N/A", "zero": "#N/A", "false": "#N/A", "found": "three"}


def test_every_other_answer_is_the_lookup_as_written():
    """Random tables of numbers, text in two cases, wildcards, logical values, errors and blanks,
    looked up alone and inside other formulas: the same answers with the rewrite as without it,
    but for a blank, 0 or FALSE looked up over a blank key (the test above)."""
    rng = random.Random(20261208)
    pool = [1, 2, 2.5, "abc", "ABC", "a*c", "a?c", "~", True, False, "=1/0", "=NA()", None, " ", 0, -1, "7", 7]
    looks = ["1", "2.5", '"abc"', '"a*"', '"a?c"', '"~*"', "TRUE", "1/0", '"*"', '"7"', "7", "-1", "$H$1"]
    for _ in range(6):
        rows = rng.randint(2, 9)
        cells = {f"{column}{row}": value for row in range(1, rows + 1) for column in "ABC"
                 if (value := rng.choice(pool)) is not None}
        cells["H1"] = rng.choice([1, "abc", 2.5, "7"])
        formulas = {}
        for i, look in enumerate(looks):
            k = rng.randint(1, 3)
            formulas[f"v{i}"] = f"=VLOOKUP({look},$A$1:$C${rows},{k},FALSE)"
            formulas[f"w{i}"] = f'=IFERROR(VLOOKUP({look},$A$1:$C${rows},{k},0),"none")&"|"'
            formulas[f"h{i}"] = f"=LEN(HLOOKUP({look},$A$1:$C${rows},{min(k, rows)},FALSE))"
        book = to_bytes(_book(cells, formulas))
        as_written = get_engine("ironcalc").load_xlsx(book)
        with mock.patch.object(corrections, "index_match_lookups", lambda model, cells: []):
            left_alone = get_engine("ironcalc").load_xlsx(book)
        assert as_written.calculate({}) == left_alone.calculate({})
        assert len(rewritten(as_written)) == len(formulas)


def _book(cells: dict, formulas: dict) -> openpyxl.Workbook:
    """One sheet: `cells` by address, `formulas` in column E from row 1, named as outputs."""
    wb = openpyxl.Workbook()
    sheet = wb.active
    for address, value in cells.items():
        sheet[address] = value
    for row, (name, formula) in enumerate(formulas.items(), start=1):
        sheet.cell(row, 5, formula)
        add_name(wb, name, f"Sheet!$E${row}")
    sheet.title = "Sheet"
    return wb


def test_a_formula_whose_approximate_lookup_each_job_cuts_again_is_left_as_written():
    """An approximate lookup over whole columns with named input cells below its data is cut
    again by each job (corrections.adjust_to_inputs): its formula keeps its exact lookup too."""
    wb = bands_with_room_below()  # E1 looks 760 up over Rates!A:B, input bands in A4:B5
    rates = wb["Rates"]
    for row in range(1, 4):
        rates.cell(row, 7, f"K-{row}")
        rates.cell(row, 8, row * 10)
    rates["E1"] = '=VLOOKUP(D1,$A:$B,2,TRUE)*VLOOKUP("K-2",$G$1:$H$3,2,FALSE)'
    add_name(wb, "out", "Rates!$E$1")
    for workbook in uploaded_and_stored(to_bytes(wb)):
        assert workbook.calculate({}) == {"out": 0.07 * 20}
        assert workbook.calculate({"extra_bands": [[740, 0.5], [None, None]]}) == {"out": 0.5 * 20}
        assert "INDEX" not in workbook._model.get_cell_formula(0, 1, 5)
