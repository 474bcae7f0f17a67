"""The slowest workbooks of a corpus for IronCalc, per job: what an upload's load costs and
what each job then costs, the way the service runs them (the model restored from its stored
bytes, calculated with no inputs).

Prints the N workbooks with the slowest job, with their upload load, job load (restoring the
stored model) and job calculation times. `--without exact` switches the bounding of
exact-match lookups over whole columns off, `--without whole` that of statistics and
SUMPRODUCT over whole columns, for before/after figures; `--crafted ROWS,LOOKUPS` adds a
generated workbook of LOOKUPS exact `VLOOKUP(A2,Data!$A:$D,3,FALSE)` over ROWS items, and
`--statistics ROWS,CELLS` one of CELLS summaries over whole columns of ROWS items (AVERAGE, MAX,
COUNTA and `SUMPRODUCT((Data!$A:$A=A2)*Data!$C:$C)` in turn), and `--values ROWS` a data sheet of
ROWS rows of four constants with three formulas at its top (what an upload's load costs when a
sheet is mostly data), and `--filters ROWS,CELLS` one of CELLS sums and maxima of FILTER over
whole columns of ROWS items, and `--schedule MONTHS` a debt schedule of MONTHS chained circular
references (interest on the average balance) with iterative calculation enabled. Generated
workbooks are always listed.

Usage: python bench/slowest_workbooks.py [--corpus tests/corpus] [--only SUBSTRING]
                                         [--slowest 10] [--without exact,whole]
                                         [--crafted 1000,20] [--statistics 1000,20]
                                         [--values 40000] [--filters 1000,20]
                                         [--schedule 120]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import shared.calc.corrections as layer
from shared.calc.ironcalc.engine import IronCalcEngine

SWITCHES = {"exact": ("bound_exact_lookups", lambda *a, **k: []),
            "whole": ("bound_whole_columns", lambda *a, **k: [])}
LOOKUPS = ("=VLOOKUP(A{row},Data!$A:$D,3,FALSE)",)
SUMMARIES = ("=AVERAGE(Data!$C:$C)", "=MAX(Data!$C:$C)", "=COUNTA(Data!$A:$A)",
             "=SUMPRODUCT((Data!$A:$A=A{row})*Data!$C:$C)")
FILTERS = ("=SUM(_xlfn._xlws.FILTER(Data!$C:$C,Data!$A:$A=A{row}))",
           "=MAX(_xlfn._xlws.FILTER(Data!$D:$D,Data!$A:$A=A{row}))")


def generated(rows: int, cells: int, kinds: int, formulas: tuple[str, ...]) -> bytes:
    """Items P-1.. (`kinds` distinct keys; every item its own when 0) in Data!A:D, and `cells`
    formulas in Calc!B2.., taken in turn from `formulas` ({row}: the formula's row), each with a
    key in column A."""
    import openpyxl

    wb = openpyxl.Workbook()
    calc = wb.active
    calc.title = "Calc"
    data = wb.create_sheet("Data")
    for r in range(1, rows + 1):
        data.append([f"P-{r % kinds if kinds else r}", f"item {r}", r * 0.25, r % 97])
    for r in range(2, cells + 2):
        calc.cell(r, 1, f"P-{r % kinds}" if kinds else f"P-{(r * 37) % rows + 1}")
        calc.cell(r, 2, formulas[r % len(formulas)].format(row=r))
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def values(rows: int) -> bytes:
    """ROWS rows of a number, a text, a number and a date-like text in A:D of one sheet, with a
    SUM, an exact VLOOKUP and a TEXT over them at its top (F1:F3), as a data sheet with its
    summary carries them."""
    import openpyxl

    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet.title = "Data"
    for r in range(1, rows + 1):
        sheet.append([r, f"item {r}", r * 0.25, f"{r % 28 + 1}/{r % 12 + 1}/2024"])
    sheet["F1"] = "=SUM(A1:A100)"
    sheet["F2"] = "=VLOOKUP(5,A1:C100,3,FALSE)"
    sheet["F3"] = '=TEXT(C2,"0.00")'
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def schedule(months: int) -> bytes:
    """A debt schedule with iterative calculation enabled: opening A = the last closing B,
    interest C = 6% / 12 * (A + B) / 2, closing B = A + C + D with a repayment D every twelfth
    month; each month a circular reference feeding the next."""
    import openpyxl

    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet["B1"] = 1_000_000
    for r in range(2, months + 2):
        sheet[f"A{r}"], sheet[f"C{r}"] = f"=B{r - 1}", f"=0.06/12*(A{r}+B{r})/2"
        sheet[f"D{r}"], sheet[f"B{r}"] = "=IF(MOD(ROW(),12)=0,-50000,0)", f"=A{r}+C{r}+D{r}"
    wb.calculation.iterate = True
    buffer = io.BytesIO()
    wb.save(buffer)
    return buffer.getvalue()


def measure(data: bytes) -> tuple[float, float, float, float]:
    """(upload load, job load, job calculation, the next job's calculation on the same loaded
    workbook, as a warm worker runs it) in seconds."""
    engine = IronCalcEngine()
    started = time.perf_counter()
    uploaded = engine.load_xlsx(data)
    upload = time.perf_counter() - started
    stored = uploaded.serialize()
    started = time.perf_counter()
    workbook = engine.load_serialized(stored)
    job_load = time.perf_counter() - started
    started = time.perf_counter()
    workbook.calculate({}, outputs=[])
    job = time.perf_counter() - started
    started = time.perf_counter()
    workbook.calculate({}, outputs=[])
    return upload, job_load, job, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus")
    parser.add_argument("--only", default=None, help="only files whose path contains this")
    parser.add_argument("--slowest", type=int, default=10, help="how many workbooks to list")
    parser.add_argument("--without", default="", help="corrections to switch off: " + ", ".join(SWITCHES))
    parser.add_argument("--crafted", default=None, help="ROWS,LOOKUPS: add a generated whole-column workbook")
    parser.add_argument("--statistics", default=None, help="ROWS,CELLS: add generated whole-column summaries")
    parser.add_argument("--values", type=int, default=None, help="ROWS: add a generated data sheet")
    parser.add_argument("--filters", default=None, help="ROWS,CELLS: add generated FILTERs over whole columns")
    parser.add_argument("--schedule", type=int, default=None, help="MONTHS: add a generated schedule of circular references")
    args = parser.parse_args()
    for name in filter(None, args.without.split(",")):
        attr, off = SWITCHES[name]
        setattr(layer, attr, off)
    files = sorted(args.corpus.rglob("*.xls[xm]"))
    if args.only:
        files = [p for p in files if args.only in str(p)]
    results = []
    started = time.perf_counter()
    books = [(str(p.relative_to(args.corpus)), p.read_bytes) for p in files]
    if args.crafted:
        rows, lookups = (int(n) for n in args.crafted.split(","))
        books.append((f"(generated) {lookups} VLOOKUP(..,Data!$A:$D,3,FALSE) over {rows} rows",
                      lambda: generated(rows, lookups, 0, LOOKUPS)))
    if args.statistics:
        rows, cells = (int(n) for n in args.statistics.split(","))
        books.append((f"(generated) {cells} AVERAGE/MAX/COUNTA/SUMPRODUCT over Data!$A:$C, {rows} rows",
                      lambda: generated(rows, cells, 50, SUMMARIES)))
    if args.filters:
        rows, cells = (int(n) for n in args.filters.split(","))
        books.append((f"(generated) {cells} SUM/MAX of FILTER(Data!$C:$C,Data!$A:$A=..), {rows} rows",
                      lambda: generated(rows, cells, 50, FILTERS)))
    if args.schedule:
        books.append((f"(generated) debt schedule of {args.schedule} chained circular references, iterated",
                      lambda: schedule(args.schedule)))
    if args.values:
        books.append((f"(generated) {args.values:,} rows of data, three formulas", lambda: values(args.values)))
    for label, read in books:
        try:
            results.append((label, *measure(read())))
        except Exception as exc:  # noqa: BLE001 - an unreadable file is reported and skipped
            print(f"{label}: {type(exc).__name__}: {exc}")
    results.sort(key=lambda r: r[3], reverse=True)
    print("| Workbook | Upload load (s) | Job load (s) | Job (s) | Next job (s) |\n|---|---:|---:|---:|---:|")
    listed = results[: args.slowest] + [r for r in results[args.slowest:] if r[0].startswith("(generated)")]
    for label, upload, job_load, job, next_job in listed:
        print(f"| {label} | {upload:.2f} | {job_load:.3f} | {job:.3f} | {next_job:.3f} |")
    total = sum(r[3] for r in results)
    print(f"\n{len(results)} workbooks, jobs {total:.1f} s in all; run {time.perf_counter() - started:.0f} s"
          + (f" (without {args.without})" if args.without else ""))


if __name__ == "__main__":
    main()
