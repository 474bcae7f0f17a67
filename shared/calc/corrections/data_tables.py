"""Calculating Excel's what-if data tables (``{=TABLE(r1,r2)}``) on an IronCalc model.

IronCalc does not know the construct, so the package it loads holds each table's body as
constants (shared.calc.xlsx.data_tables.as_constants) and the engine keeps the tables'
definitions beside the model (the blob header's "data_tables"). After IronCalc has calculated
a job, `fill` applies Excel's rule (ECMA-376 Part 1, 18.3.1.40 ``f``; Microsoft's "Calculate
multiple results by using a data table"):

- one variable, column input (dtr=0): each value of the column left of the body is put into
  the input cell r1, the sheet recalculated, and the formulas of the row above the body give
  that row of the body;
- one variable, row input (dtr=1): each value of the row above the body goes into r1, and the
  formulas of the column left of the body give that column of the body;
- two variables (dt2D=1): the top row's value goes into r1 and the left column's into r2, and
  the formula in the corner above-left of the body gives the cell.

Why it is sound: the input cells are saved before and restored after (formula or constant,
style included), so the job's own values are what the rest of the workbook finally sees; the
results are written into the body as constants and the model recalculated, so every dependant
sees them. A table whose formulas read another table's body is handled by repeating the pass
until no body value changes (at most once per table plus one, the longest chain there can be;
with several tables a job whose inputs change a table pays at least a second, checking pass).
Each substitution costs one recalculation (`DataTable.substitutions`), bounded at upload by
the setting ``upload_max_data_table_substitutions``: beyond it the tables keep Excel's saved values
and the upload says so.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Callable

from shared.calc.refs import parse_cell
from shared.calc.scoped import holding
from shared.calc.values import EMPTY
from shared.calc.xlsx.data_tables import DataTable, box

Cell = tuple[int, int]  # (row, col) on the table's sheet

# The upload's limit where the settings cannot be read (the upload's child process is started
# without the service's SHEETCALC_ environment: shared.calc.sandbox); None: the settings'.
_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar("sheetcalc_data_table_limit", default=None)


def substitution_limit(limit: int | None):
    return holding(_limit, limit)


@dataclass(frozen=True)
class Run:
    """One substitution: which value cell goes into which input cell, and which formula cell's
    value lands in which body cell."""

    assign: tuple[tuple[Cell, Cell], ...]  # (input cell, cell holding the value)
    read: tuple[tuple[Cell, Cell], ...]  # (formula cell, body cell)


@dataclass(frozen=True)
class Planned:
    table: DataTable
    sheet: int
    inputs: tuple[Cell, ...]
    runs: tuple[Run, ...]


def runs(table: DataTable) -> tuple[Run, ...]:
    """Excel's substitutions for one table (see the module's docstring); () when the table
    cannot be calculated (no input cell, or a body touching row 1 or column A)."""
    found = box(table)
    inputs = [parse_cell(cell) for cell in table.inputs]
    if found is None or not inputs or None in inputs or (table.two_d and len(inputs) < 2):
        return ()
    _, top, left, bottom, right = found
    if top < 2 or left < 2:
        return ()
    rows, cols = range(top, bottom + 1), range(left, right + 1)
    if table.two_d:
        return tuple(
            Run((((inputs[0]), (top - 1, c)), (inputs[1], (r, left - 1))), (((top - 1, left - 1), (r, c)),))
            for r in rows for c in cols
        )
    if table.row_input:
        return tuple(Run(((inputs[0], (top - 1, c)),), tuple(((r, left - 1), (r, c)) for r in rows)) for c in cols)
    return tuple(Run(((inputs[0], (r, left - 1)),), tuple(((top - 1, c), (r, c)) for c in cols)) for r in rows)


def plan(model, tables: list[DataTable]) -> list[Planned]:
    """The tables IronCalc can calculate, with their sheets' indices in the model."""
    index_of = {p["name"].lower(): i for i, p in enumerate(model.get_worksheets_properties())}
    planned = []
    for table in tables:
        sheet, table_runs = index_of.get(table.sheet.lower()), runs(table)
        if sheet is None or not table_runs:
            continue
        inputs = tuple(dict.fromkeys(cell for run in table_runs[:1] for cell, _ in run.assign))
        planned.append(Planned(table, sheet, inputs, table_runs))
    return planned


def fill(model, planned: list[Planned], recalculate: Callable[[], None]) -> None:
    """Calculate every planned table of an evaluated model and leave the model evaluated with
    the tables' results in their bodies."""
    from shared.calc.ironcalc.cells import read_cell, write_cell

    if not planned:
        return
    rounds = 1 if len(planned) == 1 else len(planned) + 1
    for _ in range(rounds):
        changed = False
        for table in planned:
            results = _substitute(model, table, recalculate, read_cell, write_cell)
            for (row, col), value in results.items():
                # Always written: the body holds values only, as Excel saves a table.
                changed = changed or read_cell(model, table.sheet, row, col) != value
                _write_keeping_style(model, (table.sheet, row, col), value, write_cell)
        recalculate()
        if not changed:
            break


def _substitute(model, table: Planned, recalculate, read_cell, write_cell) -> dict[Cell, tuple]:
    sheet = table.sheet
    saved = {cell: (model.get_cell_formula(sheet, *cell), read_cell(model, sheet, *cell),
                    model.get_cell_style(sheet, *cell)) for cell in table.inputs}
    results: dict[Cell, tuple] = {}
    # Every value to substitute is read first, from the sheet as the job left it.
    values = [[(cell, read_cell(model, sheet, *source)) for cell, source in run.assign] for run in table.runs]
    try:
        for run, assignments in zip(table.runs, values):
            for cell, value in assignments:
                write_cell(model, sheet, *cell, value)
            recalculate()
            for formula_cell, body_cell in run.read:
                results[body_cell] = read_cell(model, sheet, *formula_cell)
    finally:
        _restore(model, sheet, saved, write_cell)
    return results


def _restore(model, sheet: int, saved: dict, write_cell) -> None:
    for cell, (formula, value, style) in saved.items():
        if formula:
            model.update_cell_with_formula(sheet, *cell, formula)
        else:
            write_cell(model, sheet, *cell, value if value is not None else EMPTY)
        if model.get_cell_style(sheet, *cell) != style:
            model.set_cell_style(sheet, *cell, style)


def _write_keeping_style(model, key: tuple[int, int, int], value, write_cell) -> None:
    style = model.get_cell_style(*key)
    write_cell(model, *key, value)
    if model.get_cell_style(*key) != style:
        model.set_cell_style(*key, style)


def calculated(tables: list[DataTable], engine: str = "ironcalc") -> list[DataTable]:
    """The tables the engine calculates for every job: with IronCalc, all of them unless their
    substitutions add up to more than the setting ``upload_max_data_table_substitutions`` (each one a
    recalculation per job); with `formulas`, none (they keep Excel's saved values)."""
    if engine != "ironcalc" or not tables:
        return []
    limit = _limit.get()
    if limit is None:
        from shared.config import get_settings

        limit = get_settings().upload_max_data_table_substitutions
    if sum(table.substitutions for table in tables) > limit:
        return []
    return [table for table in tables if runs(table)]
