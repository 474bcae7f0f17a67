"""What the correction layer changes on the Excel-saved corpus: IronCalc's check of every
workbook without the layer, with all of it, and with each correction alone, cell by cell.

Prints the formula cells matching Excel each way, the cells the layer fixed and the cells it
broke (listed: there must be none), per workbook that changed, and the cells each correction
fixed and broke on its own (`references`: structured and 3-D references, `names`: defined names,
`intersections`: ranges in single-value arguments, `dates`: date functions, `arguments`: literal
arguments of statistical functions and OFFSET's omitted sizes, `lookups`: the bounded lookups, `exact_lookups`: exact ones over whole columns,
`index_ranges`: ranges ended by INDEX calls,
`functions`: the functions evaluated after IronCalc, `subtotals`: SUBTOTAL over filtered
rows). IronCalc only, so the whole corpus takes minutes, not the hour of bench/fidelity.py.

Usage: python bench/corrections.py [--corpus tests/corpus] [--only SUBSTRING] [--timing]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import shared.calc.corrections as layer  # noqa: E402
import shared.calc.corrections.functions as corrections  # noqa: E402
import shared.calc.fidelity.check as check_module  # noqa: E402
from shared.calc.fidelity.check import check  # noqa: E402


def misses(data: bytes) -> tuple[int, dict[tuple[str, str], dict]]:
    report = check(data, "ironcalc")
    return report.cells_compared, {(m["sheet"], m["cell"]): m for m in report.mismatches}


# Each correction's switch: the module attribute the layer looks up on each load, and what
# stands in for it when the correction is off.
SWITCHES = {
    "references": (layer, "_correct_references", lambda *a, **k: []),
    "names": (layer, "_inline_names", lambda *a, **k: []),
    "intersections": (layer, "_intersect_ranges", lambda *a, **k: []),
    "dates": (layer, "_correct_dates", lambda *a, **k: []),
    "arguments": (layer, "_correct_arguments", lambda *a, **k: []),
    "lookups": (layer, "bound_lookups", lambda *a, **k: layer.ModelCorrections()),
    "exact_lookups": (layer, "bound_exact_lookups", lambda *a, **k: []),
    "index_ranges": (layer, "_index_ranges", lambda *a, **k: []),
    "functions": (corrections, "plan", lambda *a, **k: None),
    "subtotals": (layer, "correct_filtered_subtotals", lambda *a, **k: []),
}


@contextlib.contextmanager
def only(enabled: tuple[str, ...]):
    """The layer with only the `enabled` corrections."""
    saved = {name: getattr(module, attr) for name, (module, attr, _) in SWITCHES.items()}
    try:
        for name, (module, attr, off) in SWITCHES.items():
            if name not in enabled:
                setattr(module, attr, off)
        yield
    finally:
        for name, (module, attr, _) in SWITCHES.items():
            setattr(module, attr, saved[name])


def timing(repeats: int = 5) -> None:
    """What the layer costs where nothing needs it: loading (the upload) a generated
    20,000-formula workbook, and a job of the loan sample, each without and with the layer."""
    import io
    import statistics

    import openpyxl

    from shared.calc import get_engine

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, 5001):
        ws.cell(r, 1, r)
        ws.cell(r, 2, f"=A{r}*2")
        ws.cell(r, 3, f"=B{r}+A{r}/7")
        ws.cell(r, 4, f'=IF(MOD(A{r},2)=0,"even","odd")')
        ws.cell(r, 5, f"=SUM($B$1:B{r})")
    buffer = io.BytesIO()
    wb.save(buffer)
    big = buffer.getvalue()
    loan = (REPO / "examples" / "loan-quote.xlsx").read_bytes()
    engine = get_engine("ironcalc")
    for label, enabled in (("without the layer", ()), ("with the layer", tuple(SWITCHES))):
        with only(enabled):
            loads = []
            for _ in range(repeats):
                started = time.perf_counter()
                engine.load_xlsx(big)
                loads.append(time.perf_counter() - started)
            workbook = engine.load_xlsx(loan)
            jobs = []
            for _ in range(repeats * 20):
                started = time.perf_counter()
                workbook.calculate({})
                jobs.append(time.perf_counter() - started)
        print(f"{label}: load of 20,000 formulas {min(loads):.2f}-{max(loads):.2f} s; "
              f"loan-sample job median {statistics.median(jobs) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus")
    parser.add_argument("--only", default=None, help="only files whose path contains this")
    parser.add_argument("--timing", action="store_true", help="only the cost where nothing needs the layer")
    args = parser.parse_args()
    if args.timing:
        timing()
        return
    check_module.MISMATCH_LIMIT = 10**9  # every mismatch, to compare cell by cell
    files = sorted(args.corpus.rglob("*.xls[xm]"))
    if args.only:
        files = [p for p in files if args.only in str(p)]
    started = time.perf_counter()
    totals = {"compared": 0, "without": 0, "with": 0, "fixed": 0, "broken": 0}
    per = {name: {"fixed": 0, "broken": 0} for name in SWITCHES}
    for path in files:
        data = path.read_bytes()
        try:
            with only(()):
                compared, before = misses(data)
            _, after = misses(data)
            alone = {}
            if before != after:  # each correction on its own, where the layer changed anything
                for name in SWITCHES:
                    with only((name,)):
                        alone[name] = misses(data)[1]
        except Exception as exc:  # noqa: BLE001 - an unreadable file is reported and skipped
            print(f"{path}: {type(exc).__name__}: {exc}")
            continue
        for name, result in alone.items():
            per[name]["fixed"] += len([k for k in before if k not in result])
            per[name]["broken"] += len([k for k in result if k not in before])
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
    for name, counts in per.items():
        print(f"{name}: {counts['fixed']} fixed, {counts['broken']} broken (alone)")
    print(
        f"\n{len(files)} files, {totals['compared']} formula cells: without the layer "
        f"{totals['without']}, with it {totals['with']} ({totals['fixed']} fixed, "
        f"{totals['broken']} broken) in {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
