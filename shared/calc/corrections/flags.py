"""Cells the correction layer knows an engine gets wrong and cannot fix: flagged at upload, in
the version's fidelity report and warnings, whether or not the file carries Excel's values."""

from __future__ import annotations

from dataclasses import replace

from shared.calc.corrections.lookups import (
    find_lookups,
    is_computed,
    parse_name,
    parse_range,
    references_by_function,
)
from shared.calc.corrections.functions.criteria_ranges import unfixable_criteria_ranges
from shared.calc.corrections.functions.not_equal import unfixable_not_equal
from shared.calc.corrections.functions.unfixable import unfixable_functions
from shared.calc.corrections.index_ranges import unfixable_index_ranges
from shared.calc.corrections.names import array_names_inlined, unfixable_names
from shared.calc.corrections.reference_operators import unfixable_operators
from shared.calc.corrections.tables import unfixable_references
from shared.calc.xlsx.cells import ExcelBook

# The engines whose known defects this module describes.
FLAGGED_ENGINES = frozenset({"ironcalc"})
FLAG_LIMIT = 200


def _reason(function: str, text: str) -> str:
    return (
        f"approximate-match {function} over a computed range ({text}): IronCalc 0.9.1 answers "
        "from the range's blank cells when it ends in blank cells, and the range is not known "
        "before calculation, so it cannot be bounded"
    )


def flagged_cells(book: ExcelBook, engine: str) -> tuple[list[dict], int]:
    """([{sheet, cell, formula, reason}] capped at FLAG_LIMIT, total) for `engine`."""
    if engine not in FLAGGED_ENGINES:
        return [], 0
    flags, total = [], 0
    for cell in book.cells:
        if cell.array_area:
            continue
        found = find_lookups(cell.formula)
        for site in found.sites:
            if not site.needs_bounds:
                continue
            text = site.searched.text
            computed = is_computed(site.searched)
            if not computed and site.searched.token is not None and parse_range(text) is None:
                named = parse_name(text)
                target = book.defined_names.get(named[1].upper()) if named and not named[0] else None
                # a name to a formula (OFFSET, INDIRECT, ...) rather than to cells
                computed = target is not None and parse_range(target.lstrip("=")) is None \
                    and references_by_function(target)
            if computed:
                total += 1
                if len(flags) < FLAG_LIMIT:
                    flags.append({
                        "sheet": cell.sheet, "cell": cell.address,
                        "formula": "=" + cell.formula.lstrip("="),
                        "reason": _reason(site.function, text),
                    })
                break
    # the other checks read array formulas as the layer rewrites them, names inlined
    cells = array_names_inlined(book)
    view = replace(book, cells=cells)
    written = {id(cell): original for cell, original in zip(cells, book.cells)}
    for cell, reason in unfixable_names(book) + unfixable_references(view) + unfixable_functions(view) \
            + unfixable_operators(view) + unfixable_not_equal(view) + unfixable_criteria_ranges(view) \
            + unfixable_index_ranges(view):
        cell = written.get(id(cell), cell)
        total += 1
        if len(flags) < FLAG_LIMIT:
            flags.append({
                "sheet": cell.sheet, "cell": cell.address,
                "formula": "=" + cell.formula.lstrip("="), "reason": reason,
            })
    return flags, total
