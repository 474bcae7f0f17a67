"""Every case of tests/conformance/cases/*.yaml: the service's answer is Excel's.

Excel's values come from Microsoft's documentation examples or Excel-saved workbooks (each case
file names its source). A case marked `known_gap` is reported, not asserted: it must then be a
cell the upload flags, and the table at the end of the session counts it.
"""

from __future__ import annotations

import pytest

from tests.conformance import harness

CASES = harness.load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_service_answers_as_excel(case: harness.Case, conformance):
    # GIVEN a workbook holding the case, WHEN the service calculates it as a job
    outcome = conformance.outcome(case)
    answer = harness.shown(outcome.service.value)
    if case.known_gap:
        if not outcome.service_ok:
            pytest.xfail(f"known gap: {case.known_gap} (service answered {answer!r})")
        return  # closed since: the table counts it as matching
    # THEN it answers Excel's value
    assert outcome.service_ok, (
        f"{case.formula}: Excel {case.excel!r}, service ({outcome.service.engine}) {answer!r}; "
        f"IronCalc alone {harness.shown(outcome.ironcalc)!r}, formulas alone {harness.shown(outcome.formulas)!r}"
    )


def test_every_case_file_reads():
    assert harness.LOAD_ERRORS == {}, harness.LOAD_ERRORS


def test_newer_functions_are_written_with_their_prefix():
    assert harness.as_written('=XLOOKUP(1,A1:A2,B1:B2)&"XLOOKUP("') == '=_xlfn.XLOOKUP(1,A1:A2,B1:B2)&"XLOOKUP("'
    assert harness.as_written("=FILTER(A1:A3,A1:A3>1)") == "=_xlfn._xlws.FILTER(A1:A3,A1:A3>1)"
    assert harness.as_written("=_xlfn.CONCAT(1,2)+SUM(1)") == "=_xlfn.CONCAT(1,2)+SUM(1)"
    assert harness.as_written("=STDEV.S(A1:A3)+STDEV(A1:A3)") == "=_xlfn.STDEV.S(A1:A3)+STDEV(A1:A3)"


def test_a_wrong_answer_fails_the_comparison():
    case = harness.Case(function="SUM", name="n", formula="=SUM(1,2)", excel=3)
    assert harness.matches(case, [[("n", 3.0)]])
    assert not harness.matches(case, [[("n", 3.0000001)]])
    assert not harness.matches(case, [[("s", "3")]])
    assert not harness.matches(harness.Case(function="X", name="e", formula="=1/0", excel="#DIV/0!"), [[("s", "#DIV/0!")]])


def test_the_support_table_and_its_page_are_current(conformance):
    """shared/calc/fidelity/support.json and docs/functions.md are what scripts/support_table.py
    generates from the engines, the layer's registry and these cases' outcomes."""
    from scripts import support_table
    from shared.calc.fidelity import support

    table = support.build(harness.per_function({c.id: conformance.outcome(c) for c in CASES}))
    assert support.to_json(table) == support.SUPPORT_FILE.read_text(encoding="utf-8"), "run scripts/support_table.py"
    page = support_table.DOC.read_text(encoding="utf-8")
    assert support_table.with_table(page, support.markdown(table)) == page, "run scripts/support_table.py"
