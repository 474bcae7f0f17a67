"""NOW, TODAY, RAND and RANDBETWEEN in a run context, on both engines: frozen to the job's creation
time, seeded by its id, with Excel's documented rules (RANDBETWEEN: the smallest integer it returns
is bottom rounded up, the largest top rounded down, Excel 2000 in a Nutshell; bottom above top is
#NUM!, ECMA-376 Part 4 RANDBETWEEN)."""

from __future__ import annotations

import io
import uuid
from datetime import date, datetime, timezone

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from shared import calc
from shared.calc import run_context

CREATED = datetime(2026, 3, 1, 18, 0, 0)  # 1900 system: (2026-03-01 - 1900-01-01).days + 2, plus 0.75
CREATED_SERIAL = (date(2026, 3, 1) - date(1900, 1, 1)).days + 2


def workbook(formulas: dict[str, str], inputs: dict[str, float] | None = None) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Calc"
    for n, (name, value) in enumerate({**(inputs or {}), **formulas}.items(), start=1):
        ws.cell(row=n, column=1, value=value)
        wb.defined_names[name] = DefinedName(name, attr_text=f"Calc!$A${n}")
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def job_context(n: int = 1) -> run_context.RunContext:
    return run_context.RunContext.for_job(job_id=uuid.UUID(int=n), created_at=CREATED)


@pytest.mark.parametrize("engine", ["ironcalc", "formulas"])
def test_today_and_now_answer_the_jobs_creation_time(engine):
    book = calc.get_engine(engine).load_xlsx(workbook({"today": "=TODAY()", "now": "=NOW()+x*0"}, {"x": 1}))
    with run_context.running(job_context()):
        out = book.calculate({"x": 2})
    assert out == {"today": CREATED_SERIAL, "now": pytest.approx(CREATED_SERIAL + 0.75, abs=1e-9)}


def test_today_and_now_inside_lambda_and_let_answer_the_jobs_creation_time():
    # GIVEN Excel 365 formulas the correction layer evaluates whole (MAP with a LAMBDA, LET)
    # calling TODAY and NOW: the days from each of two dates (A1:A2) to today, NOW's hour
    book = calc.get_engine("ironcalc").load_xlsx(workbook({
        "days": "=SUM(_xlfn.MAP(A1:A2,_xlfn.LAMBDA(_xlpm.d,TODAY()-_xlpm.d)))",
        "hour": "=_xlfn.LET(_xlpm.t,NOW(),HOUR(_xlpm.t))",
    }, {"ten_days_ago": CREATED_SERIAL - 10, "five_days_ago": CREATED_SERIAL - 5}))
    with run_context.running(job_context()):
        out = book.calculate({})
    # THEN they answer from the job's clock, as TODAY and NOW do elsewhere (they were flagged)
    assert (out["days"], out["hour"]) == (15, 18)
    assert book.correction_flags() == []


def test_rand_inside_a_lambda_draws_the_jobs_numbers():
    # GIVEN a LAMBDA drawing RAND for each of three cells, and RANDBETWEEN in a LET
    book = calc.get_engine("ironcalc").load_xlsx(workbook({
        "draws": "=_xlfn.TEXTJOIN(\",\",TRUE,_xlfn.MAP(A1:A3,_xlfn.LAMBDA(_xlpm.x,RAND())))",
        "dice": "=_xlfn.LET(_xlpm.n,RANDBETWEEN(1,6),_xlpm.n*10)",
    }, {"a": 1, "b": 2, "c": 3}))

    def run(job: int) -> dict:
        with run_context.running(job_context(job)):
            return book.calculate({})

    # THEN a job's re-run draws the same numbers, another job others, each in [0, 1)
    first, again, other = run(1), run(1), run(2)
    assert first == again and first["draws"] != other["draws"]
    draws = [float(x) for x in first["draws"].split(",")]
    assert len(set(draws)) == 3 and all(0 <= x < 1 for x in draws)
    assert first["dice"] in {10, 20, 30, 40, 50, 60}
    assert book.correction_flags() == []


def test_randbetween_rounds_bottom_up_and_top_down_and_refuses_an_empty_span():
    book = calc.get_engine("ironcalc").load_xlsx(workbook({
        "two": "=RANDBETWEEN(1.5,2.5)", "none": "=RANDBETWEEN(3,2)", "text": '=RANDBETWEEN("4","4")',
        "word": '=RANDBETWEEN("a",2)', "error": "=RANDBETWEEN(1/0,2)",
    }))
    for n in range(5):
        with run_context.running(job_context(n)):
            assert book.calculate({}) == {"two": 2, "none": "#NUM!", "text": 4, "word": "#VALUE!", "error": "#DIV/0!"}


@pytest.mark.parametrize("engine", ["ironcalc", "formulas"])
def test_the_same_job_draws_the_same_numbers_and_another_job_others(engine):
    book = calc.get_engine(engine).load_xlsx(workbook({"r": "=RAND()+x*0", "d": "=RANDBETWEEN(1,1000000)+x*0"}, {"x": 1}))
    with run_context.running(job_context(1)):
        first = book.calculate({"x": 2})
    with run_context.running(job_context(1)):
        again = book.calculate({"x": 2})
    with run_context.running(job_context(2)):
        other = book.calculate({"x": 2})
    assert first == again
    assert 0 <= first["r"] < 1 and first["d"] == int(first["d"]) and 1 <= first["d"] <= 1_000_000
    assert other["r"] != first["r"]


def test_outside_a_job_the_functions_answer_as_excel_does():
    # The fidelity check and other calculations outside a job: today's date, fresh numbers.
    book = calc.get_engine("ironcalc").load_xlsx(workbook({"today": "=TODAY()", "r": "=RAND()"}))
    first, second = book.calculate({}), book.calculate({})
    today = datetime.now(timezone.utc).date()
    assert first["today"] in ((today - date(1900, 1, 1)).days + 2, (today - date(1900, 1, 1)).days + 3)
    assert first["r"] != second["r"]
    assert book.correction_flags() == []


def test_a_model_prepared_before_volatile_functions_were_corrected_is_scanned_again():
    # GIVEN a stored model whose header says "nothing to correct" and predates the volatile functions
    from shared.calc.base import pack_blob, unpack_blob

    engine = calc.get_engine("ironcalc")
    header, payload = unpack_blob(engine.load_xlsx(workbook({"today": "=TODAY()"})).serialize())
    header.pop("volatile_functions")
    header["function_corrections"] = False
    old = engine.load_serialized(pack_blob("ironcalc", {k: v for k, v in header.items() if k != "engine"}, payload))
    # WHEN a job calculates on it THEN TODAY still answers the job's creation date
    with run_context.running(job_context()):
        assert old.calculate({}) == {"today": CREATED_SERIAL}
