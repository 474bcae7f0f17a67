"""A fixed subset of the Excel-saved corpus (tests/corpus/), checked the way uploads are (bench/fidelity.py
runs all of it). The figures are those of ironcalc 0.9.1 and formulas 1.3.4 with the functions we supply to
it: a change in either engine shows up here as a changed count, to be looked at before the pins
move."""

import pytest

from shared.calc.fidelity.choice import choose_engine
from tests.corpus import corpus_file

# The service's deadline would hand a slow machine a different engine choice; these figures
# are about what each engine computes, not how fast (the deadline has its own tests).
NO_DEADLINE_S = 3600.0

# file, engine chosen, formula cells compared, matching with the choice,
# matching with IronCalc alone
SUBSET = [
    # IronCalc 157 alone; every cell with the correction layer's dates (DAY/MONTH/YEAR/WEEKDAY of
    # FALSE and TRUE, SECOND rounded to the nearest second), so IronCalc is kept
    ("pycel/tests/fixtures/date-time.xlsx", "ironcalc", 180, 180, 180),
    # SWITCH of blank cells and IFS/SWITCH over ranges in legacy array formulas: IronCalc with the
    # correction layer's SWITCH (corrections/dynamic/functions.py), every cell
    ("pycel/tests/fixtures/logical.xlsx", "ironcalc", 576, 576, 576),
    # LINEST/TREND with collinear and constant variables: formulas with our LINEST and TREND
    # (IronCalc 132 alone; 153 with the correction layer's TREND, corrections/dynamic/regression.py)
    ("pycel/tests/fixtures/stats.xlsx", "ironcalc", 192, 192, 192),
    # LOOKUP's array and vector forms, approximate matches over blanks: formulas with our LOOKUP
    # (IronCalc 478 with the correction layer bounding lookups to their values, 463 alone)
    ("pycel/tests/fixtures/lookup.xlsx", "ironcalc", 533, 533, 533),
    # every YEARFRAC basis and error case: IronCalc with the correction layer's YEARFRAC rules
    # (2555 alone; formulas with our YEARFRAC, shared/calc/formulas/yearfrac.py, also 2737)
    ("pycel/tests/fixtures/yearfrac.xlsx", "ironcalc", 2737, 2737, 2737),
    # serials 0-60 and DATE(1900,2,29): IronCalc 26 alone, 30 with the correction layer's dates
    ("ironcalc/xlsx/tests/docs/DAY.xlsx", "ironcalc", 30, 30, 30),
    ("pycel/tests/fixtures/npv.xlsx", "ironcalc", 33, 27, 27),
    ("ironcalc/xlsx/tests/docs/DATE.xlsx", "ironcalc", 16, 16, 16),
    ("ironcalc/xlsx/tests/calc_tests/LOOKUP_AND_REFERENCE/HVLOOKUP.xlsx", "ironcalc", 103, 103, 103),
    ("ironcalc/xlsx/tests/calc_tests/TEXT/TEXT.xlsx", "ironcalc", 374, 374, 374),
    ("ironcalc/xlsx/tests/calc_tests/TEXT/CHAR.xlsx", "ironcalc", 257, 257, 257),
    ("ironcalc/xlsx/tests/calc_tests/LOGICAL/AND_OR_XOR.xlsx", "ironcalc", 317, 317, 317),
    ("formulas/test/test_files/excel.xlsx", "ironcalc", 8, 8, 8),
    ("pycel/tests/fixtures/basic.xlsx", "ironcalc", 6, 6, 6),
]


@pytest.mark.parametrize(
    "name, engine, compared, matching, ironcalc_matching", SUBSET, ids=[s[0] for s in SUBSET]
)
def test_corpus_workbook(name, engine, compared, matching, ironcalc_matching):
    choice = choose_engine(corpus_file(name).read_bytes(), timeout_s=NO_DEADLINE_S)

    assert choice.engine == engine
    assert (choice.report["cells_compared"], choice.report["cells_matching"]) == (compared, matching)
    assert choice.report["engines"]["ironcalc"]["cells_matching"] == ironcalc_matching
    # every difference is named
    assert choice.report["mismatches_total"] == compared - matching
    assert len(choice.report["mismatches"]) == min(compared - matching, 50)
