"""Fidelity over the Excel-saved corpus: each engine alone, and the per-workbook choice.

For every workbook that Excel saved (docProps/app.xml), runs the check with IronCalc (in this
process) and with formulas (child process, deadline, memory limit), then prints per source
folder: files, formula cells compared, % matching per engine and with the choice (the engine
matching most cells, IronCalc on a tie), and the functions behind the misses. Also times the
IronCalc check of a generated 20,000-formula workbook.

The "IronCalc alone" column is IronCalc without the correction layer (shared/calc/corrections),
"IronCalc" with it; the difference is what the layer fixed. `--engines ironcalc` skips formulas
(its column and the choice are then left out).

Usage: python bench/fidelity.py [--corpus tests/corpus] [--timeout 240] [--jobs 1]
                                [--json results.json] [--only SUBSTRING] [--engines ironcalc]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.calc import corrections  # noqa: E402
from shared.calc.fidelity.choice import check_engine, pick  # noqa: E402
from shared.calc.fidelity.report import FidelityReport  # noqa: E402
from shared.calc.xlsx.cells import read_excel_cells  # noqa: E402
from shared.config import get_settings  # noqa: E402
from shared.errors import WorkbookError  # noqa: E402

ENGINES = ("ironcalc", "formulas")
RAW = "ironcalc-alone"  # IronCalc without the correction layer


def check_raw(data: bytes) -> FidelityReport:
    """The IronCalc check with the correction layer switched off (this process only): the
    formulas rewritten at load and the functions evaluated after IronCalc."""
    from shared.calc.ironcalc import engine

    real, real_plan = corrections.correct_model, engine.corrected_functions.may_need_plan
    corrections.correct_model = lambda model, data, inputs: corrections.ModelCorrections()
    engine.corrected_functions.may_need_plan = lambda data: False
    try:
        report = check_engine(data, "ironcalc")
    finally:
        corrections.correct_model = real
        engine.corrected_functions.may_need_plan = real_plan
    report.engine = RAW
    return report


def saved_by_excel(application: str | None) -> bool:
    """Excel on any platform ("Microsoft Macintosh Excel", "Microsoft Excel Online", "Excel
    Android"), not programs that only claim compatibility."""
    return bool(application) and "Excel" in application and "Compatible" not in application


def run_file(path: Path, timeout: float, memory_mb: int, engines: tuple[str, ...] = ENGINES,
             lazy: bool = False) -> dict:
    data = path.read_bytes()
    try:
        application = read_excel_cells(data).application
    except WorkbookError as exc:
        return {"file": str(path), "skipped": f"unreadable: {exc.message}"}
    if not saved_by_excel(application):
        return {"file": str(path), "skipped": f"saved by {application!r}"}
    reports = {}
    for engine in engines:
        first = reports.get("ironcalc")
        if lazy and engine != "ironcalc" and first is not None and first.ok \
                and first.cells_matching == first.cells_compared:
            # as the service does: an engine can at best tie with IronCalc matching every cell
            reports[engine] = FidelityReport(engine=engine, status="not_run", error="not needed")
            continue
        try:
            reports[engine] = check_engine(data, engine, timeout_s=timeout, memory_mb=memory_mb)
        except WorkbookError as exc:
            reports[engine] = FidelityReport(engine=engine, status="failed", error=exc.message)
    chosen = pick(reports) if "formulas" in engines else None
    try:
        raw = check_raw(data)
    except WorkbookError as exc:
        raw = FidelityReport(engine=RAW, status="failed", error=exc.message)
    try:
        from shared.calc.ironcalc.engine import IronCalcEngine

        rewrites = len(IronCalcEngine()._load(data)[2].rewrites)
    except WorkbookError:
        rewrites = 0
    return {
        "file": str(path),
        "chosen": chosen,
        "rewrites": rewrites,
        "raw": raw.to_dict(mismatch_limit=20),
        "reports": {name: r.to_dict(mismatch_limit=20) for name, r in reports.items()},
    }


def pct(matching: int, compared: int) -> str:
    return f"{100 * matching / compared:.2f}%" if compared else "-"


def summarise(results: list[dict], corpus: Path, engines: tuple[str, ...] = ENGINES) -> str:
    folders: dict[str, Counter] = defaultdict(Counter)
    unsupported: dict[str, Counter] = {e: Counter() for e in ENGINES}
    missing: dict[str, Counter] = {e: Counter() for e in ENGINES + ("choice",)}
    status: dict[str, Counter] = {e: Counter() for e in ENGINES}
    chosen_counts: Counter = Counter()
    skipped = []
    for result in results:
        if "skipped" in result:
            skipped.append(result)
            continue
        folder = Path(result["file"]).relative_to(corpus).parts[0]
        row = folders[folder]
        reports = result["reports"]
        # Cells compared are the engine-independent count: take IronCalc's, or any ok one.
        base = next((reports[e] for e in engines if reports[e]["status"] == "ok"), None)
        compared = base["cells_compared"] if base else 0
        row["files"] += 1
        row["cells"] += compared
        raw = result.get("raw") or {}
        row[RAW] += raw.get("cells_matching", 0) if raw.get("status") == "ok" else 0
        row["rewrites"] += result.get("rewrites", 0)
        row["flagged"] += reports["ironcalc"].get("flagged_total", 0)
        for engine in engines:
            report = reports[engine]
            status[engine][report["status"]] += 1
            row[engine] += report["cells_matching"] if report["status"] == "ok" else 0
            for name in report["unsupported_functions"]:
                unsupported[engine][name] += 1
            if report["status"] == "ok":
                missing[engine].update(report["functions"])
        chosen = result["chosen"]
        if "formulas" not in engines:
            continue
        chosen_counts[chosen] += 1
        if chosen:
            row["choice"] += reports[chosen]["cells_matching"]
            missing["choice"].update(reports[chosen]["functions"])
    total = Counter()
    for row in folders.values():
        total.update(row)
    lines = [
        "| folder | files | formula cells | IronCalc alone | IronCalc (corrected) | cells the layer fixed "
        "| formulas rewritten | cells flagged | formulas | per-workbook choice |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    has_formulas = "formulas" in engines
    for name in sorted(folders) + ["**all**"]:
        row = total if name == "**all**" else folders[name]
        lines.append(
            f"| {name} | {row['files']} | {row['cells']} | {pct(row[RAW], row['cells'])} "
            f"| {pct(row['ironcalc'], row['cells'])} | {row['ironcalc'] - row[RAW]} "
            f"| {row['rewrites']} | {row['flagged']} "
            f"| {pct(row['formulas'], row['cells']) if has_formulas else 'not run'} "
            f"| {pct(row['choice'], row['cells']) if has_formulas else 'not run'} |"
        )
    lines.append("")
    lines.append(
        f"Choice: {dict(chosen_counts)}. Engine status: "
        + "; ".join(f"{e} {dict(status[e])}" for e in engines)
        + f". Skipped (not saved by Excel or unreadable): {len(skipped)}."
    )
    lines.append("")
    for engine in engines:
        top = ", ".join(f"{n} ({c})" for n, c in unsupported[engine].most_common(15))
        lines.append(f"Top unsupported functions, {engine} (workbooks): {top or 'none'}")
        lines.append("")
    for engine in engines + (("choice",) if has_formulas else ()):
        top = ", ".join(f"{n} ({c})" for n, c in missing[engine].most_common(15))
        lines.append(f"Functions in mismatching cells, {engine} (cells): {top or 'none'}")
        lines.append("")
    return "\n".join(lines)


def big_workbook_timing(formula_cells: int = 20_000) -> str:
    """Check time of a generated workbook with `formula_cells` formulas (IronCalc)."""
    import openpyxl

    from shared.calc.fidelity.check import check
    from shared.calc.xlsx.write import write_values

    wb = openpyxl.Workbook()
    ws = wb.active
    rows = formula_cells // 4
    expected = {}
    for r in range(1, rows + 1):
        ws.cell(r, 1, r)
        ws.cell(r, 2, f"=A{r}*2")
        ws.cell(r, 3, f"=B{r}+A{r}/7")
        ws.cell(r, 4, f'=IF(MOD(A{r},2)=0,"even","odd")')
        ws.cell(r, 5, f"=SUM($B$1:B{r})")
        running = r * (r + 1)
        expected.update({
            ("Sheet", r, 2): r * 2, ("Sheet", r, 3): r * 2 + r / 7,
            ("Sheet", r, 4): "even" if r % 2 == 0 else "odd", ("Sheet", r, 5): running,
        })
    buffer = io.BytesIO()
    wb.save(buffer)
    data = write_values(buffer.getvalue(), {k: v for k, v in expected.items()})
    started = time.perf_counter()
    report = check(data, "ironcalc")
    seconds = time.perf_counter() - started
    return (
        f"IronCalc check of a generated {report.cells_compared}-formula workbook: "
        f"{seconds:.2f} s, {report.cells_matching} matching."
    )


def _job_times(wb, module, name: str, off, *, warm: bool) -> dict[str, tuple[float, float]]:
    """{"alone": ..., "corrected": ...}: (upload load, one job) seconds for the workbook `wb` with
    the correction `module.name` replaced by `off`, and as it is. `warm`: time the second job
    (the first reads the load plan)."""
    from unittest import mock

    from shared.calc.ironcalc.engine import IronCalcEngine

    buffer = io.BytesIO()
    wb.save(buffer)
    data = buffer.getvalue()
    times = {}
    for label in ("alone", "corrected"):
        with mock.patch.object(module, name, off) if label == "alone" else contextlib.nullcontext():
            engine = IronCalcEngine()
            started = time.perf_counter()
            workbook = engine.load_serialized(engine.load_xlsx(data).serialize())
            loaded = time.perf_counter() - started
            if warm:
                workbook.calculate({}, outputs=[])
            started = time.perf_counter()
            workbook.calculate({}, outputs=[])
            times[label] = (loaded, time.perf_counter() - started)
    return times


def _band_table(rows: int):
    """A new workbook and its sheet with bands 10, 20, ... in A1:A`rows` and 1, 2, ... beside them."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, rows + 1):
        ws.cell(r, 1, r * 10)
        ws.cell(r, 2, r)
    return wb, ws


def whole_column_timing(lookups: int = 50, rows: int = 1000) -> str:
    """Job time of a workbook with `lookups` approximate VLOOKUPs over whole columns, with IronCalc
    alone and with the correction layer (which bounds them to the data at load)."""
    wb, ws = _band_table(rows)
    for r in range(1, lookups + 1):
        ws.cell(r, 4, f"=VLOOKUP({r * 97 + 5},$A:$B,2,TRUE)")
    times = _job_times(
        wb, corrections, "correct_model", lambda model, data, inputs: corrections.ModelCorrections(), warm=False,
    )
    return (
        f"{lookups} approximate VLOOKUPs over $A:$B ({rows} rows of data), one job: IronCalc alone "
        f"{times['alone'][1]:.2f} s, with the correction layer {times['corrected'][1]:.3f} s "
        f"(upload load {times['alone'][0]:.2f} s vs {times['corrected'][0]:.2f} s)."
    )


def exact_lookup_timing(lookups: int = 2000, rows: int = 1000) -> str:
    """Job time of a workbook with `lookups` exact-match VLOOKUPs of numbers in cells over a
    `rows`-row table, as IronCalc evaluates them and as the layer has it evaluate them (INDEX and
    MATCH: corrections/index_match.py)."""
    wb, ws = _band_table(rows)
    for r in range(1, lookups + 1):
        ws.cell(r, 4, (r * 97) % (rows * 10))
        ws.cell(r, 5, f"=VLOOKUP(D{r},$A$1:$B${rows},2,FALSE)")
    times = _job_times(wb, corrections, "index_match_lookups", lambda model, cells: [], warm=True)
    return (
        f"{lookups} exact VLOOKUPs over a {rows}-row table, upload load and one job: IronCalc alone "
        f"{times['alone'][0]:.2f} s and {times['alone'][1]:.3f} s, as INDEX and MATCH "
        f"{times['corrected'][0]:.2f} s and {times['corrected'][1]:.3f} s."
    )


def array_argument_timing(cells: int = 200, rows: int = 1000) -> str:
    """Job time of a workbook with `cells` SUMPRODUCT(--ISNUMBER(SEARCH(term,range))) over `rows`
    rows, which the correction layer evaluates in every job (IronCalc reads the range as one
    cell): what a job pays for Excel's answer, against IronCalc's wrong one."""
    import openpyxl

    from shared.calc.corrections import dynamic

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, rows + 1):
        ws.cell(r, 1, f"item {r} {'ab'[r % 2]}")
    for r in range(1, cells + 1):
        ws.cell(r, 3, f"term{r % 10}")
        ws.cell(r, 4, f'=SUMPRODUCT(--ISNUMBER(SEARCH(C{r}&"",$A$1:$A${rows})))')
    times = _job_times(wb, dynamic, "_SUMPRODUCT", re.compile(r"(?!)"), warm=True)
    return (
        f"{cells} SUMPRODUCT(--ISNUMBER(SEARCH(...))) over {rows} rows, one job: IronCalc alone (wrong) "
        f"{times['alone'][1]:.3f} s, with the layer evaluating them {times['corrected'][1]:.3f} s."
    )


def typed_lookup_timing(lookups: int = 2000, rows: int = 100) -> str:
    """Upload load and job time of a workbook with `lookups` approximate VLOOKUPs of numbers in
    cells over a `rows`-row band table: the layer watches each lookup value (a text or logical
    value there is evaluated as Excel does, a number left to IronCalc), what that costs a job
    whose values are all numbers, against IronCalc alone."""
    from shared.calc.corrections import dynamic

    wb, ws = _band_table(rows)
    for r in range(1, lookups + 1):
        ws.cell(r, 4, (r * 7) % (rows * 10))
        ws.cell(r, 5, f"=VLOOKUP(D{r},$A$1:$B${rows},2)")
    times = _job_times(wb, dynamic, "_LOOKUP_CALL", re.compile(r"(?!)"), warm=True)
    return (
        f"{lookups} approximate VLOOKUPs of numbers in cells over {rows} rows, upload load and one job: "
        f"IronCalc alone {times['alone'][0]:.2f} s and {times['alone'][1]:.3f} s, with the layer watching "
        f"their lookup values {times['corrected'][0]:.2f} s and {times['corrected'][1]:.3f} s."
    )


def date_text_timing(cells: int = 2000) -> str:
    """Upload load and job time of a workbook with `cells` VALUE formulas over dates written as
    text IronCalc reads ("2/2/2026"): the layer watches each for IronCalc's #VALUE! (the forms
    it cannot read are evaluated as Excel does), what that costs a job where none is, against
    IronCalc alone."""
    import openpyxl

    from shared.calc.corrections import dynamic

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, cells + 1):
        ws.cell(r, 1, f"{r % 12 + 1}/{r % 28 + 1}/2026")
        ws.cell(r, 2, f"=VALUE(A{r})+1")
    times = _job_times(wb, dynamic, "_WHEN_ERROR", (), warm=True)
    return (
        f"{cells} VALUEs of dates written as text, upload load and one job: IronCalc alone "
        f"{times['alone'][0]:.2f} s and {times['alone'][1]:.3f} s, with the layer watching them "
        f"{times['corrected'][0]:.2f} s and {times['corrected'][1]:.3f} s."
    )


def _watched_timing(cells: int, watch: str, what: str, wrong: str, quiet, busy,
                    meets: str = "a number of 16 or more digits") -> str:
    """Upload load and job time of `cells` rows whose cells `quiet(r)` gives ({column: value}),
    with the layer's watch `dynamic.<watch>` and without it (IronCalc alone), and one job after
    `busy(r)` rewrites them so that every watched formula is the layer's to evaluate."""
    import openpyxl

    from shared.calc.corrections import dynamic

    never = re.compile(r"(?!)")
    wb = openpyxl.Workbook()
    ws = wb.active
    for fill in (quiet, busy):
        for r in range(1, cells + 1):
            for column, value in fill(r).items():
                ws.cell(r, column, value)
        times = _job_times(wb, dynamic, watch, never, warm=True)
        if fill is quiet:
            calm = times
    return (
        f"{cells} formulas {what}, upload load and one job: IronCalc alone "
        f"{calm['alone'][0]:.2f} s and {calm['alone'][1]:.3f} s, with the layer watching them "
        f"{calm['corrected'][0]:.2f} s and {calm['corrected'][1]:.3f} s; when each meets {meets}, "
        f"one job {times['corrected'][1]:.3f} s (IronCalc alone, with the "
        f"wrong {wrong}, {times['alone'][1]:.3f} s)."
    )


def joined_text_timing(cells: int = 2000) -> str:
    """Formulas joining numbers into text (`=A1&"-"&B1`, whole numbers IronCalc writes as Excel
    does), watched for a number IronCalc writes with more than 15 significant digits; then every
    one showing such a number (B1/3), which the layer evaluates."""
    return _watched_timing(
        cells, "_JOINS", "joining numbers into text", "text",
        lambda r: {1: r, 2: r * 7, 3: f'=A{r}&"-"&B{r}'}, lambda r: {3: f'=A{r}&"-"&B{r}/3'},
    )


def text_function_timing(cells: int = 2000) -> str:
    """Formulas giving numbers to text functions (`=LEN(B1)+LEN(LEFT(B1,3))`, whole numbers),
    watched for a cell given to one holding a number Excel writes otherwise; then every one
    reading such a number (B1 = A1/3), which the layer evaluates."""
    return _watched_timing(
        cells, "_TEXT_OF_NUMBER_CALL", "giving numbers to text functions", "lengths",
        lambda r: {1: r * 7, 2: f"=A{r}+1", 3: f"=LEN(B{r})+LEN(LEFT(B{r},3))"}, lambda r: {2: f"=A{r}/3"},
    )


def mod_divisor_timing(cells: int = 2000) -> str:
    """MODs of a divisor read from a cell (`=MOD(A1,B1)`, whole divisors), watched for a divisor
    that is not whole; then every one dividing by 0.02, which the layer evaluates (Excel's exact
    remainder)."""
    return _watched_timing(
        cells, "_MOD_CALL", "taking MOD of a divisor in a cell", "remainders",
        lambda r: {1: r * 7.04, 2: 7, 3: f"=MOD(A{r},B{r})"}, lambda r: {2: 0.02},
        meets="a divisor that is not whole",
    )


def count_timing(cells: int = 2000) -> str:
    """Binomial probabilities of trials read from a cell (`=BINOM.DIST(A1,B1,0.3,TRUE)`, 20 to
    59 trials), watched for a count above distributions.EXACT_COUNT; then every one over
    1,000,000 trials, which the layer evaluates (the regularized incomplete beta function)."""
    return _watched_timing(
        cells, "_COUNT_CALL", "taking a binomial probability of trials in a cell", "probabilities",
        lambda r: {1: r % 20, 2: r % 40 + 20, 3: f"=BINOM.DIST(A{r},B{r},0.3,TRUE)"},
        lambda r: {1: 300000 + r, 2: 1000000},
        meets="a count above 100",
    )


def distribution_timing(cells: int = 2000, formula: str = "=T.DIST.2T(ABS(A{r}),B{r})",
                        what: str = "T.DIST.2T p-values") -> str:
    """Job time of a workbook with `cells` distribution cells (by default t-test p-values): the
    layer evaluates every function of distributions.ROUTED (Student's t, F, chi-squared, beta and
    gamma tails and inverses, the cumulative normal family, the error functions) in every job.
    What a job pays for Excel's digits."""
    import openpyxl

    from shared.calc.corrections import dynamic

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, cells + 1):
        ws.cell(r, 1, (r % 40) * 0.75 - 15)
        ws.cell(r, 2, r % 60 + 1)
        ws.cell(r, 3, formula.format(r=r))
    times = _job_times(wb, dynamic, "_DISTRIBUTION_CALL", re.compile(r"(?!)"), warm=True)
    return (
        f"{cells} {what}, upload load and one job: IronCalc alone {times['alone'][0]:.2f} s "
        f"and {times['alone'][1]:.3f} s, with the layer evaluating them {times['corrected'][0]:.2f} s "
        f"and {times['corrected'][1]:.3f} s."
    )


def one_value_timing(cells: int = 100, rows: int = 1000) -> str:
    """Job time of a workbook with `cells` array formulas applying a function of one value that
    IronCalc does not apply to each element ({=SUM(TRUNC(range*k))}) over `rows` rows: the layer
    evaluates them in every job, with IronCalc calculating each element in its scratch model
    (dynamic/one_value.py). What a job pays for Excel's answer, against IronCalc's wrong one."""
    from unittest import mock

    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula

    from shared.calc.corrections import dynamic

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, rows + 1):
        ws.cell(r, 1, r * 0.37)
    for r in range(1, cells + 1):
        ws.cell(r, 3).value = ArrayFormula(f"C{r}", f"=SUM(TRUNC($A$1:$A${rows}*{r}))")
    from shared.calc.corrections.dynamic import one_value

    # each job calculates its elements anew (a job with new inputs finds none of them kept)
    with mock.patch.object(one_value, "_CACHE_LIMIT", 0):
        times = _job_times(wb, dynamic, "_NOT_LIFTED_MENTION", re.compile(r"(?!)"), warm=True)
    return (
        f"{cells} array formulas {{=SUM(TRUNC(range*k))}} over {rows} rows, one job: IronCalc alone (wrong) "
        f"{times['alone'][1]:.3f} s, with the layer evaluating them {times['corrected'][1]:.3f} s."
    )


def conditional_aggregate_timing(cells: int = 100, rows: int = 1000) -> str:
    """`cells` legacy array formulas {=AVERAGE(IF(range=key,values))} over `rows` rows, each
    for its own key: IronCalc 0.9.1 counts the IF's FALSE as 0, so the layer evaluates them in
    every job (dynamic.MISCOUNTED). What a job pays for Excel's answer."""
    import openpyxl
    from openpyxl.worksheet.formula import ArrayFormula

    from shared.calc.corrections import dynamic

    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, rows + 1):
        ws.cell(r, 1, f"k{r % cells}")
        ws.cell(r, 2, r * 1.5)
    for r in range(1, cells + 1):
        ws.cell(r, 4, f"k{r - 1}")
        ws.cell(r, 5).value = ArrayFormula(f"E{r}", f"=AVERAGE(IF($A$1:$A${rows}=D{r},$B$1:$B${rows}))")
    times = _job_times(wb, dynamic, "_MISCOUNTED_MENTION", re.compile(r"(?!)"), warm=True)
    return (
        f"{cells} array formulas {{=AVERAGE(IF(range=key,values))}} over {rows} rows, one job: IronCalc alone "
        f"(wrong) {times['alone'][1]:.3f} s, with the layer evaluating them {times['corrected'][1]:.3f} s "
        f"(upload load {times['alone'][0]:.2f} s vs {times['corrected'][0]:.2f} s)."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus")
    settings = get_settings()  # the service's own limits for a formulas check are the defaults
    parser.add_argument("--timeout", type=float, default=settings.fidelity_timeout_seconds,
                        help="seconds for each formulas check (SHEETCALC_FIDELITY_TIMEOUT_SECONDS)")
    parser.add_argument("--memory-mb", type=int, default=settings.fidelity_memory_mb)
    parser.add_argument("--jobs", type=int, default=1, help="workbooks at a time; two formulas children on two cores slow each other past the deadline")
    parser.add_argument("--json", type=Path, help="write per-workbook results here")
    parser.add_argument("--only", default=None, help="only files whose path contains this")
    parser.add_argument("--engines", default=",".join(ENGINES), help="engines to check (ironcalc is always checked)")
    parser.add_argument("--lazy", action="store_true", help="check formulas only where IronCalc misses a cell, as the service does (the formulas column then counts only those)")
    args = parser.parse_args()
    engines = tuple(dict.fromkeys(["ironcalc"] + [e for e in args.engines.split(",") if e]))
    corpus = args.corpus.resolve()
    files = sorted(p for p in corpus.rglob("*.xls[xm]"))
    if args.only:
        files = [p for p in files if args.only in str(p)]
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda p: run_file(p, args.timeout, args.memory_mb, engines, args.lazy), files))
    elapsed = time.perf_counter() - started
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    print(summarise(results, corpus, engines))
    print(f"Corpus run: {len(files)} files in {elapsed:.0f} s ({args.jobs} at a time).")
    print()
    print(big_workbook_timing())
    print(whole_column_timing())
    print(exact_lookup_timing())
    print(array_argument_timing())
    print(typed_lookup_timing())
    print(date_text_timing())
    print(joined_text_timing())
    print(text_function_timing())
    print(mod_divisor_timing())
    print(count_timing())
    print(distribution_timing())
    print(distribution_timing(formula="=NORM.S.DIST(A{r}/10,TRUE)", what="NORM.S.DIST probabilities"))
    print(one_value_timing())
    print(conditional_aggregate_timing())
    return 0


if __name__ == "__main__":
    sys.exit(main())
