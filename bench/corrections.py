"""What the function corrections change on the Excel-saved corpus: IronCalc's check of every
workbook with and without shared/calc/corrections/functions, cell by cell.

Prints the formula cells matching Excel each way, the cells the layer fixed and the cells it
broke (listed: there must be none), per workbook that changed. IronCalc only, so the whole
corpus takes a few minutes, not the hour of bench/fidelity.py.

Usage: python bench/corrections.py [--corpus ../shared/corpus] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import shared.calc.corrections.functions as corrections  # noqa: E402
import shared.calc.fidelity.check as check_module  # noqa: E402
from shared.calc.fidelity.check import check  # noqa: E402


def misses(data: bytes) -> tuple[int, dict[tuple[str, str], dict]]:
    report = check(data, "ironcalc")
    return report.cells_compared, {(m["sheet"], m["cell"]): m for m in report.mismatches}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--only", default=None, help="only files whose path contains this")
    args = parser.parse_args()
    check_module.MISMATCH_LIMIT = 10**9  # every mismatch, to compare cell by cell
    files = sorted(args.corpus.rglob("*.xls[xm]"))
    if args.only:
        files = [p for p in files if args.only in str(p)]
    started = time.perf_counter()
    totals = {"compared": 0, "without": 0, "with": 0, "fixed": 0, "broken": 0}
    original_plan = corrections.plan  # the engine looks it up on each check
    for path in files:
        data = path.read_bytes()
        try:
            corrections.plan = lambda *a, **k: None
            compared, before = misses(data)
            corrections.plan = original_plan
            _, after = misses(data)
        except Exception as exc:  # noqa: BLE001 - an unreadable file is reported and skipped
            print(f"{path}: {type(exc).__name__}: {exc}")
            continue
        finally:
            corrections.plan = original_plan
        fixed = [k for k in before if k not in after]
        broken = [k for k in after if k not in before]
        totals["compared"] += compared
        totals["without"] += compared - len(before)
        totals["with"] += compared - len(after)
        totals["fixed"] += len(fixed)
        totals["broken"] += len(broken)
        if fixed or broken:
            name = path.relative_to(args.corpus)
            print(f"{name}: {compared - len(before)} -> {compared - len(after)} of {compared}")
            for key in broken:
                miss = after[key]
                print(f"  BROKEN {miss['sheet']}!{miss['cell']} {miss['formula']}: "
                      f"Excel {miss['expected']!r}, now {miss['actual']!r}")
    print(
        f"\n{len(files)} files, {totals['compared']} formula cells: without the layer "
        f"{totals['without']}, with it {totals['with']} ({totals['fixed']} fixed, "
        f"{totals['broken']} broken) in {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
