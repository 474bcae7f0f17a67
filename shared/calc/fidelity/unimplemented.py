"""Cells calling a function the calculation engine does not implement, everything calculated
from them, and the named outputs that depend on them.

Such a cell has no value Excel would agree with: IronCalc answers `#N/IMPL!` or `#NAME?`, which
`IFERROR`, `ISERROR` or a branch of `IF` can turn into a plausible number. So the upload names
every such cell and its dependants (the version's fidelity report, under "unimplemented", and
the upload warnings), the version records which named outputs depend on one (an activation
gate reads it through shared.services.version_checks.unimplemented_outputs), and a job whose
outputs include one fails naming it (`output_failure`), rather than return a value.

The dependency walk is static (the references written in the formulas, names followed): an
output depends on a cell when any formula on the way reads it, whatever the branch taken.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from shared.calc.corrections.formula_tokens import TEXT_LITERAL
from shared.calc.fidelity.references import _references, function_names
from shared.calc.refs import parse_range_formula
from shared.calc.xlsx.cells import ExcelBook
from shared.errors import WorkbookError

REPORT_KEY = "unimplemented"
CELL_LIMIT = 50  # cells and dependants listed in a report; the totals stay exact
_SMALL_BOX = 4096  # boxes up to this many cells are indexed cell by cell
_FUNCTION_NAME = re.compile(r"[A-Z][A-Z0-9._]*")
# The values an engine gives a cell calling a function it does not know.
UNIMPLEMENTED_VALUES = frozenset({"#N/IMPL!"})


def function_list(unsupported: set[str] | list[str]) -> set[str]:
    """The plain function names of an engine's unsupported list (which also names flagged cells
    as "TEXT at Sheet1!B2 (...)")."""
    return {name for name in unsupported if _FUNCTION_NAME.fullmatch(name)}


def analyse(book: ExcelBook, unknown: set[str], names_as_written: dict[str, str] | None = None) -> dict[str, Any]:
    """The report section: cells calling one of `unknown`, their dependants, the named outputs
    depending on them ({} when no cell calls one)."""
    names = book.defined_names
    unknown = set(unknown) - set(names)  # a LAMBDA kept in a defined name is called by its name
    if not unknown:
        return {}
    calling_names = {
        name for name, text in names.items() if function_names(text.lstrip("=")) & unknown
    }
    name_use = re.compile(
        r"(?<![A-Za-z0-9_.!$])(" + "|".join(re.escape(n) for n in sorted(calling_names, key=len, reverse=True))
        + r")(?![A-Za-z0-9_.(!])",
        re.IGNORECASE,
    ) if calling_names else None
    roots: dict[int, set[str]] = {}
    for index, cell in enumerate(book.cells):
        if cell.array_area or not cell.formula:
            continue
        found = set(function_names(cell.formula) & unknown)
        if found and _BINDS.search(cell.formula):
            found -= _bound_names(cell.formula)
        if name_use is not None:
            for used in name_use.findall(TEXT_LITERAL.sub('""', cell.formula)):
                found |= function_names(names[used.upper()].lstrip("=")) & unknown
        if found:
            roots[index] = found
    if not roots:
        return {}
    origin = _walk(book, roots)
    section = _section(book, roots, origin)
    section["outputs"] = _outputs(book, origin, names_as_written or {n: t for n, t in names.items()})
    return section


_BINDS = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?(?:LET|LAMBDA)\s*\(", re.IGNORECASE)
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_.])(?:_xlpm\.)?([A-Za-z_][A-Za-z0-9_.]*)(?![A-Za-z0-9_.])(?!\s*\()", re.IGNORECASE)


def _bound_names(formula: str) -> set[str]:
    """Names a LET or LAMBDA of the formula binds (used bare somewhere, not only called): a
    lambda bound by LET is called by its name, which is no function of the engine's."""
    return {name.upper() for name in _IDENTIFIER.findall(TEXT_LITERAL.sub('""', formula))}


def _walk(book: ExcelBook, roots: dict[int, set[str]]) -> dict[int, tuple[int, str]]:
    """Every cell reached from the roots -> (the root cell's index, its function), breadth first."""
    position = {(c.sheet.lower(), c.row, c.col): i for i, c in enumerate(book.cells) if not c.array_area}
    readers: dict[tuple[str, int, int], list[int]] = {}
    large: dict[str, list[tuple[int, int, int, int, int]]] = {}
    for index, cell in enumerate(book.cells):
        if cell.array_area or not cell.formula:
            continue
        for box in _references(cell.formula, cell.sheet, book.defined_names):
            if box == "external":
                continue
            where, top, left, bottom, right = box
            if (bottom - top + 1) * (right - left + 1) <= _SMALL_BOX:
                for row in range(top, bottom + 1):
                    for col in range(left, right + 1):
                        if (where, row, col) in position:
                            readers.setdefault((where, row, col), []).append(index)
            else:
                large.setdefault(where, []).append((index, top, left, bottom, right))
    origin = {index: (index, sorted(found)[0]) for index, found in roots.items()}
    queue = deque(roots)
    while queue:
        index = queue.popleft()
        cell = book.cells[index]
        key = (cell.sheet.lower(), cell.row, cell.col)
        found = list(readers.get(key, ()))
        found += [
            reader for reader, top, left, bottom, right in large.get(key[0], ())
            if top <= cell.row <= bottom and left <= cell.col <= right
        ]
        for reader in found:
            if reader not in origin:
                origin[reader] = origin[index]
                queue.append(reader)
    return origin


def _where(cell) -> str:
    return f"{cell.sheet}!{cell.address}"


def _section(book: ExcelBook, roots: dict[int, set[str]], origin: dict[int, tuple[int, str]]) -> dict[str, Any]:
    cells = [
        {"sheet": book.cells[i].sheet, "cell": book.cells[i].address, "formula": "=" + book.cells[i].formula.lstrip("="),
         "functions": sorted(found)}
        for i, found in roots.items()
    ]
    dependants = [
        {"sheet": book.cells[i].sheet, "cell": book.cells[i].address, "formula": "=" + book.cells[i].formula.lstrip("="),
         "via": _where(book.cells[root]), "function": function}
        for i, (root, function) in origin.items() if i not in roots
    ]
    return {
        "functions": sorted(set().union(*roots.values())),
        "cells": cells[:CELL_LIMIT],
        "cells_total": len(cells),
        "dependants": dependants[:CELL_LIMIT],
        "dependants_total": len(dependants),
    }


def reached(book: ExcelBook, roots: list[tuple[str, int, int]]) -> set[tuple[str, int, int]]:
    """The formula cells (sheet lower-cased, row, column) calculated from the roots, the roots
    among them: the same static walk as for unimplemented functions."""
    indexes = _roots(book, {(sheet.lower(), row, col): "root" for sheet, row, col in roots},
                     lambda cell: (cell.sheet.lower(), cell.row, cell.col))
    return {
        (book.cells[index].sheet.lower(), book.cells[index].row, book.cells[index].col)
        for index in _walk(book, indexes)
    } if indexes else set()


def dependent_outputs(book: ExcelBook, roots: list[tuple[str, str, str]], names: dict[str, str]) -> list[dict[str, str]]:
    """[{output, cell, reason}] for each named range holding or calculated from one of the roots
    (sheet, cell address, why it is named), by the same static walk."""
    indexes = _roots(book, {(sheet.lower(), address.upper()): reason for sheet, address, reason in roots},
                     lambda cell: (cell.sheet.lower(), cell.address.upper()))
    if not indexes:
        return []
    found = _outputs(book, _walk(book, indexes), names)
    return [{"output": o["output"], "cell": o["cell"], "reason": o["function"]} for o in found]


def _roots(book: ExcelBook, labels: dict, place) -> dict[int, set[str]]:
    """{cell index: {label}} of the book's formula cells (not inside an array formula's area)
    whose `place(cell)` is a key of `labels`: where a static walk starts."""
    return {
        index: {labels[place(cell)]} for index, cell in enumerate(book.cells)
        if not cell.array_area and place(cell) in labels
    }


def _outputs(book: ExcelBook, origin: dict[int, tuple[int, str]], names: dict[str, str]) -> list[dict[str, str]]:
    """[{output, cell, function}] for each named range holding or calculated from a reached cell
    (the cell is the one calling the function)."""
    by_sheet: dict[str, list[int]] = {}
    for index in origin:
        by_sheet.setdefault(book.cells[index].sheet.lower(), []).append(index)
    outputs = []
    for name, text in names.items():
        if name.lower().startswith("_xlnm."):
            continue
        box = parse_range_formula(text)
        if box is None:
            continue
        for index in by_sheet.get(box.sheet.lower(), ()):
            cell = book.cells[index]
            if box.top <= cell.row <= box.bottom and box.left <= cell.col <= box.right:
                root, function = origin[index]
                outputs.append({"output": name, "cell": _where(book.cells[root]), "function": function})
                break
    return sorted(outputs, key=lambda o: o["output"].lower())


def warnings(section: dict[str, Any] | None) -> list[str]:
    """Upload warnings naming the cells, their dependants and the outputs depending on them."""
    if not section:
        return []
    shown = ", ".join(f"{c['sheet']}!{c['cell']} ({'/'.join(c['functions'])})" for c in section["cells"][:10])
    more = section["cells_total"] - min(10, len(section["cells"]))
    lines = [
        f"{section['cells_total']} formula cells call a function the engine does not implement "
        f"({', '.join(section['functions'])}): {shown}" + (f" and {more} more" if more > 0 else "")
        + "; their values are not Excel's"
    ]
    if section["dependants_total"]:
        deps = ", ".join(f"{d['sheet']}!{d['cell']}" for d in section["dependants"][:10])
        more = section["dependants_total"] - min(10, len(section["dependants"]))
        lines.append(
            f"{section['dependants_total']} formula cells are calculated from them: {deps}"
            + (f" and {more} more" if more > 0 else "")
        )
    for output in section.get("outputs") or []:
        lines.append(
            f"Output '{output['output']}' depends on {output['cell']}, which calls {output['function']}: "
            "jobs fail rather than return it"
        )
    return lines


def output_failure(section: dict[str, Any] | None, outputs: dict[str, Any]) -> str | None:
    """Why a job's outputs cannot be returned (None when they can): an output that depends on a
    cell calling an unimplemented function (the version's report), or whose value is the
    engine's own unimplemented-function error."""
    # The consumer learns which of its outputs, not the workbook's cells or formulas (the spec: a
    # failed job's message exposes no internals); the version's fidelity report names the cell.
    wanted = {name.lower(): name for name in outputs}
    for output in (section or {}).get("outputs") or []:
        if output["output"].lower() in wanted:
            return (
                f"Output '{wanted[output['output'].lower()]}' cannot be calculated: it depends on a function "
                "the calculation engine does not implement (the version's fidelity report names the cell)"
            )
    for name, value in outputs.items():
        if _holds_unimplemented(value):
            return (
                f"Output '{name}' cannot be calculated: it depends on a function the calculation "
                "engine does not implement"
            )
    return None


def flagged_failure(flagged: list[str]) -> str | None:
    """Why a job's outputs cannot be returned when its calculation flagged some (None when it
    did not): a cell they are calculated from could not be computed as Excel would for these
    inputs (fenced.Result.flagged); the consumer learns which output, not the cell."""
    if not flagged:
        return None
    return (
        f"Output '{flagged[0]}' cannot be calculated as Excel would for these inputs: it depends on a "
        "cell the service cannot reproduce for them"
    )


def _holds_unimplemented(value: Any) -> bool:
    if isinstance(value, str):
        return value in UNIMPLEMENTED_VALUES
    if isinstance(value, list):
        return any(_holds_unimplemented(v) for v in value)
    return False


def unknown_to(engine: str, functions: set[str]) -> set[str]:
    """The functions of `functions` that `engine`, with the service's own implementations,
    does not implement."""
    if not functions:
        return set()
    if engine == "ironcalc":
        from shared.calc.corrections import functions as corrected
        from shared.calc.corrections.dynamic import EVALUATED
        from shared.calc.ironcalc.model import unknown_functions

        # GROUPBY, PIVOTBY and spill references: unknown to IronCalc, evaluated by the
        # dynamic-array layer (which flags the forms it leaves out)
        return unknown_functions(functions) - corrected.NAMES - EVALUATED
    import formulas

    known = {name.upper() for name in formulas.get_functions()} | {"INDIRECT"}
    return {f for f in functions if f not in known and f"_XLFN.{f}" not in known}


def analyse_workbook(data: bytes, engine: str) -> dict[str, Any]:
    """The report section of an uploaded workbook for `engine` (versions whose report predates it)."""
    from shared.calc.xlsx import data_tables
    from shared.calc.xlsx.cells import read_excel_cells

    try:
        book = read_excel_cells(data)
        written = data_tables.defined_names_as_written(data)
    except WorkbookError:
        return {}
    functions: set[str] = set()
    for cell in book.cells:
        functions |= function_names(cell.formula)
    for text in book.defined_names.values():
        functions |= function_names(text.lstrip("="))
    return analyse(book, unknown_to(engine, functions), written)
