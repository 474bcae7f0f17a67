"""The fidelity check: recalculate every formula cell with an engine, compare with Excel's cache.

Excel's side comes from the package (shared.calc.xlsx.cells), the engine's from its
`recalculate_cells`. Volatile functions, the cells that depend on them and references to
other workbooks are left out (shared.calc.fidelity.references). For engines that can take
minutes or gigabytes, shared.calc.fidelity.fence runs this check in a child process.
"""

from __future__ import annotations

import re
import time
from collections import Counter

from shared.calc.base import get_engine
from shared.calc.corrections import data_tables as table_layer
from shared.calc.corrections import flagged_cells
from shared.calc.fidelity import unimplemented
from shared.calc.fidelity.compare import display, values_match
from shared.calc.fidelity.references import excluded_cells, function_names, names_reading
from shared.calc.fidelity.report import MISMATCH_LIMIT, FidelityReport
from shared.calc.xlsx import data_tables
from shared.calc.xlsx.cells import read_excel_cells
from shared.errors import WorkbookError


def check_book(data: bytes, engine: str) -> FidelityReport:
    """Run the check in this process (see check_isolated for engines that need a fence)."""
    started = time.perf_counter()
    tables = data_tables.find_data_tables(data)
    # IronCalc calculates the tables (shared.calc.corrections.data_tables): their cells are
    # compared with Excel's like any other; otherwise they are constants, Excel's own values.
    calculated = table_layer.calculated(tables, engine)
    original = data
    if tables:
        data = data_tables.as_constants(data)
    book = read_excel_cells(data)
    report = FidelityReport(engine=engine, application=book.application)
    if tables:
        report.data_tables = _data_table_notes(data, book, tables, calculated)
        tables = [t for t in tables if t not in calculated]
    # Flagged whether or not the file carries Excel's values: those cells are not compared.
    report.flagged, report.flagged_total = flagged_cells(book, engine)
    excluded = excluded_cells(book)
    skipped: Counter = Counter(excluded.values())
    targets = []
    for index, cell in enumerate(book.cells):
        if index in excluded:
            continue
        if tables and _in_data_table(cell, tables):
            skipped["data_table"] += 1  # Excel's own value, written as a literal: nothing to check
            continue
        if cell.array_area:
            # Only cells holding a formula count, as Excel and the corpus define them;
            # the rest of an array formula's area is left out (and counted).
            skipped["array_area"] += 1
            continue
        if cell.expected is None:
            skipped["no_cached_value"] += 1
            continue
        targets.append(cell)
    functions: set[str] = set()
    for cell in book.cells:
        functions |= function_names(cell.formula)
    # An engine's recalculate_cells answers the values in request order (as Value tuples)
    # and the functions it does not know.
    try:
        values, unsupported = get_engine(engine).recalculate_cells(
            original if calculated else data, [(c.sheet, c.row, c.col) for c in targets], functions
        )
    except WorkbookError as exc:  # readable xlsx, but not by this engine
        report.status, report.error = "failed", exc.message
        report.seconds = time.perf_counter() - started
        return report
    report.unsupported_functions = sorted(unsupported)
    report.unimplemented = _unimplemented(data, book, engine, functions, unsupported)
    report.flagged_outputs = _flagged_outputs(data, book, report)
    per_function: Counter = Counter()
    for cell, actual in zip(targets, values):
        report.cells_compared += 1
        if values_match(cell.expected, actual):
            report.cells_matching += 1
            continue
        report.mismatches_total += 1
        per_function.update(function_names(cell.formula) or {"(no function)"})
        if len(report.mismatches) < MISMATCH_LIMIT:
            report.mismatches.append({
                "sheet": cell.sheet,
                "cell": cell.address,
                "formula": _shown_formula(cell.formula),
                "expected": display(cell.expected),
                "actual": display(actual),
            })
    report.functions = dict(per_function.most_common())
    report.skipped = dict(skipped)
    report.seconds = time.perf_counter() - started
    return report


def _unimplemented(data: bytes, book, engine: str, functions: set[str], unsupported: set[str]) -> dict:
    """The cells calling a function `engine` lacks (also through a defined name), their
    dependants and the named outputs depending on them."""
    unknown = unimplemented.function_list(unsupported)
    in_names: set[str] = set()
    for text in book.defined_names.values():
        in_names |= function_names(text.lstrip("="))
    unknown |= unimplemented.unknown_to(engine, in_names - functions)
    if not unknown:
        return {}
    return unimplemented.analyse(book, unknown, data_tables.defined_names_as_written(data))


# an engine's unsupported entry for one cell: "TEXT at Sheet1!B2 (...)", "dynamic array at 'My sheet'!C3 (...)"
_FLAGGED_AT = re.compile(
    r"^(?P<what>.+?) at (?:'(?P<quoted>(?:[^']|'')+)'|(?P<plain>[^!' ]+))!(?P<cell>\$?[A-Z]{1,3}\$?\d+)\b"
    r"(?: \((?P<why>.*)\))?$"
)


def _flagged_outputs(data: bytes, book, report: FidelityReport) -> list[dict]:
    """The named outputs calculated from a cell flagged at load or named by the engine's check as
    one it could not calculate as Excel would: jobs answer them with the engine's value."""
    roots = [(f["sheet"], f["cell"], f["reason"]) for f in report.flagged]
    for entry in report.unsupported_functions:
        match = _FLAGGED_AT.match(entry)
        if match:
            sheet = (match.group("quoted") or "").replace("''", "'") or match.group("plain")
            why = match.group("why")
            roots.append((sheet, match.group("cell").replace("$", ""),
                          f"{match.group('what')}: {why}" if why else match.group("what")))
    if not roots:
        return []
    return unimplemented.dependent_outputs(book, roots, data_tables.defined_names_as_written(data))


def _in_data_table(cell, tables: list[data_tables.DataTable]) -> bool:
    for table in tables:
        box = data_tables.box(table)
        if box and box[0].lower() == cell.sheet.lower() and box[1] <= cell.row <= box[3] \
                and box[2] <= cell.col <= box[4]:
            return True
    return False


def _data_table_notes(data: bytes, book, tables: list[data_tables.DataTable],
                      calculated: list[data_tables.DataTable]) -> list[dict]:
    """Each data table, calculated or not, with the named ranges inside it or calculated from
    it (those of a table kept as constants keep Excel's saved values whatever the inputs)."""
    names = data_tables.defined_names_as_written(data)
    notes = []
    for table in tables:
        box = data_tables.box(table)
        note = table.to_dict(calculated=table in calculated)
        note["outputs"] = names_reading(book, [box], names) if box else []
        notes.append(note)
    return notes


_FUNC_PREFIX_ANY = re.compile(r"_xl(?:fn|ws|l)\.", re.IGNORECASE)


def _shown_formula(formula: str) -> str:
    text = _FUNC_PREFIX_ANY.sub("", formula)
    return text if text.startswith("{") else "=" + text


def check(data: bytes, engine: str = "ironcalc") -> FidelityReport:
    """The check in this process; a workbook the engine cannot read gives status "failed"."""
    try:
        return check_book(data, engine)
    except WorkbookError:
        raise
    except Exception as exc:  # noqa: BLE001 - an engine's failure is a report, not a crash
        from shared.calc.fenced import out_of_memory

        error = "out of memory" if out_of_memory(exc) else f"{type(exc).__name__}: {exc}"
        return FidelityReport(engine=engine, status="failed", error=error)

