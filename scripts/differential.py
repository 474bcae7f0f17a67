#!/usr/bin/env python3
"""Differential run: random arguments within each function's domain, for functions both engines
implement, calculated by IronCalc alone, formulas alone and the service's layer (IronCalc with
the correction layer); prints where they disagree.

    .venv/bin/python scripts/differential.py [--trials 20] [--seed 1] [--only ROUND,MOD]

A disagreement is not a verdict: neither engine is Excel. It points at where a conformance case
(with Excel's value from Microsoft's documentation or an Excel-saved file) is worth writing.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ["alpha", "Beta", "gamma delta", "x", "", "Excel 365", "  padded  ", "ÅçÉ", "a,b;c"]

# Argument domains: each draws one argument as formula text.
DOMAINS = {
    "num": lambda r: _n(r.uniform(-1000, 1000)),
    "pos": lambda r: _n(r.uniform(0.01, 1000)),
    "unit": lambda r: _n(r.uniform(0.001, 0.999)),
    "int": lambda r: str(r.randint(0, 12)),
    "sint": lambda r: str(r.randint(-12, 12)),
    "digits": lambda r: str(r.randint(-3, 4)),
    "date": lambda r: str(r.randint(1, 73000)),
    "text": lambda r: '"' + r.choice(WORDS).replace('"', '""') + '"',
    "bool": lambda r: r.choice(["TRUE", "FALSE"]),
    "code": lambda r: str(r.randint(1, 255)),
    "basis": lambda r: str(r.randint(0, 4)),
    "range": lambda r: "{" + ",".join(_n(r.uniform(-100, 100)) for _ in range(r.randint(1, 8))) + "}",
    "prange": lambda r: "{" + ",".join(_n(r.uniform(0.1, 100)) for _ in range(r.randint(2, 8))) + "}",
}

# Function -> argument domains (optional ones after "|").
SIGNATURES = {
    "ABS": "num", "ACOS": "unit", "ASIN": "unit", "ATAN": "num", "ATAN2": "num num", "COS": "num", "SIN": "num",
    "TAN": "num", "EXP": "unit", "LN": "pos", "LOG": "pos|pos", "LOG10": "pos", "SQRT": "pos", "POWER": "num sint",
    "MOD": "num num", "INT": "num", "TRUNC": "num|digits", "ROUND": "num digits", "ROUNDUP": "num digits",
    "ROUNDDOWN": "num digits", "MROUND": "pos pos", "CEILING": "pos pos", "FLOOR": "pos pos", "EVEN": "num",
    "ODD": "num", "SIGN": "num", "FACT": "int", "FACTDOUBLE": "int", "GCD": "int int", "LCM": "int int",
    "COMBIN": "int int", "PERMUT": "int int", "DEGREES": "num", "RADIANS": "num", "SINH": "unit", "COSH": "unit",
    "TANH": "num", "SUM": "range", "PRODUCT": "range", "AVERAGE": "range", "MEDIAN": "range", "MAX": "range",
    "MIN": "range", "STDEV": "range", "VAR": "range", "AVEDEV": "range", "DEVSQ": "range", "KURT": "range",
    "SKEW": "range", "GEOMEAN": "prange", "HARMEAN": "prange", "LARGE": "range int", "SMALL": "range int",
    "SUMSQ": "range", "NORM.DIST": "num num pos bool", "NORM.S.DIST": "unit bool", "NORM.INV": "unit num pos",
    "NORM.S.INV": "unit", "EXPON.DIST": "pos pos bool", "POISSON.DIST": "int pos bool", "BINOM.DIST": "int int unit bool",
    "GAMMALN": "pos", "ERF": "unit", "ERFC": "unit", "FISHER": "unit", "FISHERINV": "num",
    "LEFT": "text|int", "RIGHT": "text|int", "MID": "text int int", "LEN": "text", "LOWER": "text", "UPPER": "text",
    "PROPER": "text", "TRIM": "text", "REPT": "text int", "EXACT": "text text", "FIND": "text text",
    "SEARCH": "text text", "SUBSTITUTE": "text text text", "CHAR": "code", "CODE": "text", "CLEAN": "text",
    "CONCATENATE": "text text", "VALUE": "text", "DOLLAR": "num|digits", "FIXED": "num|digits", "ROMAN": "int",
    "DATE": "int int int", "YEAR": "date", "MONTH": "date", "DAY": "date", "WEEKDAY": "date|int", "WEEKNUM": "date",
    "EDATE": "date sint", "EOMONTH": "date sint", "DAYS360": "date date", "NETWORKDAYS": "date date",
    "WORKDAY": "date int", "YEARFRAC": "date date basis", "HOUR": "unit", "MINUTE": "unit", "SECOND": "unit",
    "PMT": "unit int pos", "FV": "unit int num", "PV": "unit int num", "NPER": "unit num pos", "IPMT": "unit int int pos",
    "EFFECT": "unit int", "NOMINAL": "unit int", "SLN": "pos pos int", "SYD": "pos pos int int",
    "AND": "bool bool", "OR": "bool bool", "XOR": "bool bool", "NOT": "bool",
    "DEC2BIN": "int", "BIN2DEC": "int", "DEC2HEX": "int", "HEX2DEC": "int", "BITAND": "int int", "BITOR": "int int",
    "DELTA": "int int", "GESTEP": "num num", "ISEVEN": "num", "ISODD": "num",
}


def _n(x: float) -> str:
    return repr(round(x, 6))


def formula(name: str, spec: str, rng: random.Random) -> str:
    required, _, optional = spec.partition("|")
    args = [DOMAINS[d](rng) for d in required.split()]
    for d in optional.split():
        if rng.random() < 0.5:
            args.append(DOMAINS[d](rng))
    return f"={name}({','.join(args)})"


def both_engines(names: list[str]) -> list[str]:
    from shared.calc.fidelity import support

    rows = {row["function"]: row for row in support.load()["functions"]}
    return [n for n in names if rows.get(n, {}).get("ironcalc") and rows.get(n, {}).get("formulas")]


def same(a: tuple, b: tuple) -> bool:
    if a[0] == "empty" or b[0] == "empty":
        a = ("n", 0.0) if a[0] == "empty" else a
        b = ("n", 0.0) if b[0] == "empty" else b
    if a[0] != b[0]:
        return False
    if a[0] == "n":
        return math.isclose(a[1], b[1], rel_tol=1e-9, abs_tol=1e-12)
    return a[1] == b[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="random calls per function")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated function names")
    parser.add_argument("--show", type=int, default=3, help="examples printed per function")
    args = parser.parse_args(argv)

    import io

    from openpyxl import Workbook

    from shared.calc import get_engine
    from tests.conformance import harness

    rng = random.Random(args.seed)
    names = [n.strip().upper() for n in args.only.split(",") if n.strip()] or sorted(SIGNATURES)
    names = both_engines([n for n in names if n in SIGNATURES])
    book = Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    calls = []  # (function, formula, row, col)
    for col, name in enumerate(names, start=1):
        for row in range(1, args.trials + 1):
            text = formula(name, SIGNATURES[name], rng)
            sheet.cell(row, col, harness.as_written(text))
            calls.append((name, text, row, col))
    out = io.BytesIO()
    book.save(out)
    data = out.getvalue()

    # IronCalc alone
    case = harness.Case(function="*", name="*", formula="=0", excel=0)
    import os
    import tempfile

    import ironcalc

    fd, path = tempfile.mkstemp(suffix=".xlsx")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    model = ironcalc.load_from_xlsx(path, "en", "UTC")
    os.unlink(path)
    model.evaluate()
    from shared.calc.ironcalc.cells import read_cell

    alone = [read_cell(model, 0, row, col) for _, _, row, col in calls]
    # formulas alone, in a child process (the service patches formulas' table in this one)
    from openpyxl.utils import get_column_letter

    targets = {f"{row},{col}": ("Sheet1", f"{get_column_letter(col)}{row}", 1, 1) for _, _, row, col in calls}
    import concurrent.futures
    import multiprocessing

    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        answers = pool.submit(harness.formulas_batch, data, targets).result()
    other = [answers.get(f"{row},{col}") for _, _, row, col in calls]
    # the layer: IronCalc with the correction layer, as the upload's check calculates
    layer, _ = get_engine("ironcalc").recalculate_cells(data, [("Sheet1", row, col) for _, _, row, col in calls], set())
    del case

    disagreements: dict[str, list[str]] = {}
    for (name, text, _, _), a, f, l in zip(calls, alone, other, layer):
        f = f[0][0] if isinstance(f, list) else ("failed", f)
        if not same(a, f) or not same(a, l):
            disagreements.setdefault(name, []).append(
                f"{text}: IronCalc {a[1]!r}, formulas {f[1]!r}, layer {l[1]!r}"
            )
    print(f"{len(names)} functions both engines implement, {args.trials} calls each, seed {args.seed}")
    for name in sorted(disagreements, key=lambda n: -len(disagreements[n])):
        lines = disagreements[name]
        print(f"{name}: {len(lines)} of {args.trials} disagree")
        for line in lines[: args.show]:
            print("   " + line)
    print(f"{len(disagreements)} functions with disagreements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
