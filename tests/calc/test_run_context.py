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
