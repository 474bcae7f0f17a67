"""The correction layer between the engine interface and IronCalc: a defect we know about is
fixed once, here, in Python, and so applies to the upload check, the background check and every
job alike (they all load models through shared.calc.ironcalc.engine).

Mechanisms:

- Formula rewrites at model load (`correct_model`): a formula IronCalc gets wrong is replaced,
  in the model only, by one it calculates right where Excel's meaning allows it. Today:
  approximate-match VLOOKUP/HLOOKUP/MATCH/LOOKUP over whole columns or blank-tailed ranges are
  bounded to the cells that can hold values (lookups.py, model.py). The decision is made once
  per uploaded model and kept in its serialized form: a job pays nothing, and a workbook with no
  lookup costs one scan of its sheet XML at upload. The exported workbook shows the formulas as
  written (`restore_formulas`).
- Exact-match VLOOKUP/HLOOKUP/MATCH over whole columns bounded to the rows that can hold
  values, one blank row kept (`exact_lookups.py`): same answers, without IronCalc reading a
  million blank cells per lookup.
- AVERAGE, MAX, COUNTA, the other statistics that ignore blank cells, SUMPRODUCT, and SUM,
  MAX, MIN, AND and OR in one-cell array formulas over whole columns bounded the same way
  (`whole_columns.py`).
- Reference operators between references written out (`reference_operators.py`): the space
  (intersection), the union in parentheses and a range of ranges, resolved at load.
- Ranges ended by INDEX calls (`INDEX(B:B,2):INDEX(B:B,n)`) as the OFFSET they stand for
  (`index_ranges.py`).
- INDIRECT given the name of a range or a table's structured reference
  (`SUM(INDIRECT("Prices"))`, `INDIRECT("Sales[Amount]")`) reading that range
  (`indirect_names.py`).
- Defined names IronCalc gets wrong (`names.py`): names to formulas or constants inlined,
  relative names resolved from each cell, `@` written where Excel intersects a multi-cell name.
- Date functions (`dates.py`): YEAR/MONTH/DAY/WEEKDAY of serials 0-60 as Excel has them
  (1900-02-29), and every date function moved across in 1904 workbooks.
- Arguments (`arguments.py`): TRUE or "3" typed into STDEV/VAR/DEVSQ/SUMSQ/... counted as
  Excel counts them; OFFSET's omitted height or width as the reference's.
- CONVERT (`units.py`): conversions to Celsius by Excel's offset, a logical value #VALUE!.
- Structured references to tables and 3-D references as plain references (`tables.py`).
- References to other workbooks as the values the file saved for them (`external.py`).
- GETPIVOTDATA as the pivot table cell it reads, as saved (`functions/pivots.py`).
- FORMULATEXT of a rewritten cell answers the upload's formula (`formula_text.py`).
- Our own implementations of functions, evaluated after IronCalc (subpackage `functions`).
- Iterative calculation (`iteration.py`): the circular references of a workbook saved with
  iteration enabled recalculated round by round until they settle, as Excel does.
- Flags (`flagged_cells`): cells known to be wrong in an engine that no correction can fix are
  named in the version's fidelity report and the upload warnings.

Models serialized before this layer existed are used as they were stored (no formula text of
the upload is kept to tell their array formulas apart); a re-upload corrects them.
"""

from __future__ import annotations

from shared.calc.corrections import whole_columns
from shared.calc.corrections.arguments import (
    ARRAY_NAME,
    STATISTIC_MENTION,
    correct_arguments,
    correct_array_logicals,
)
from shared.calc.corrections.arguments import (
    KEYWORDS as ARGUMENT_KEYWORDS,
)
from shared.calc.corrections.arguments import (
    MENTION as ARGUMENT_MENTION,
)
from shared.calc.corrections.dates import KEYWORDS as DATE_KEYWORDS
from shared.calc.corrections.dates import MENTION as DATE_MENTION
from shared.calc.corrections.dates import OFFSET_1904, correct_dates
from shared.calc.corrections.exact_lookups import bound_exact_lookups
from shared.calc.corrections.external import correct_external
from shared.calc.corrections.flags import flagged_cells
from shared.calc.corrections.formula_text import keep_formula_text
from shared.calc.corrections.functions.array_constants import correct_array_constants
from shared.calc.corrections.functions.criteria_ranges import correct_criteria_ranges
from shared.calc.corrections.functions.holidays import correct_holidays
from shared.calc.corrections.functions.not_equal import correct_not_equal
from shared.calc.corrections.functions.pivots import correct_pivot_data
from shared.calc.corrections.functions.ref_ranges import correct_ref_ranges
from shared.calc.corrections.functions.reference_arguments import (
    correct_reference_arguments,
)
from shared.calc.corrections.functions.subtotal import correct_filtered_subtotals
from shared.calc.corrections.index_match import index_match_lookups
from shared.calc.corrections.model import (
    InputBox,
    ModelCorrections,
    Rewrite,
    adjust_to_inputs,
    bound_lookups,
)
from shared.calc.corrections.names import (
    AGGREGATE_KEYWORDS,
    INTERSECTION_KEYWORDS,
    INTERSECTION_MENTION,
    OPERATOR_RANGE_MENTION,
    defined_names,
    inline_names,
    intersect_ranges,
)
from shared.calc.corrections.package import (
    forget_formulas,
    names_survey,
    survey,
    workbook_names,
)
from shared.calc.corrections.package import restore_formulas as _restore
from shared.calc.corrections.tables import (
    correct_references,
    may_need_3d,
    tables_in,
    written_with_line_breaks,
)
from shared.calc.corrections.text_operands import (
    KEYWORDS as TEXT_OPERAND_KEYWORDS,
)
from shared.calc.corrections.text_operands import (
    MENTION as TEXT_OPERAND_MENTION,
)
from shared.calc.corrections.text_operands import (
    correct_text_operands,
)
from shared.calc.corrections.whole_columns import bound_whole_columns
from shared.calc.xlsx.package import open_package

__all__ = [
    "OFFSET_1904", "InputBox", "ModelCorrections", "Rewrite", "adjust_to_inputs", "correct_model", "flagged_cells",
    "restore_formulas",
]


def correct_model(model, data: bytes, inputs: list[InputBox]) -> ModelCorrections:
    """Apply every formula rewrite to an IronCalc `model` freshly loaded from the xlsx `data`;
    `inputs` are the named input ranges (sheet index, top, left, bottom, right)."""
    try:
        return _corrected(model, data, inputs)
    finally:
        forget_formulas()  # the surveys' shared reading of the sheets, kept while they ran


def _corrected(model, data: bytes, inputs: list[InputBox]) -> ModelCorrections:
    fixes: list[Rewrite] = []
    for rewrite in (correct_external, _correct_references, _inline_names, _index_ranges, _indirect_names,
                    _reference_operators,
                    _intersect_ranges, _correct_text_operands, _correct_dates,
                    _correct_arguments, _correct_units, _correct_charset, correct_filtered_subtotals, correct_holidays,
                    correct_not_equal, correct_criteria_ranges, correct_reference_arguments,
                    correct_array_constants, correct_ref_ranges, correct_pivot_data):
        fixes = _merged(fixes, rewrite(model, data))
    candidates, arrays = survey(data)
    if candidates:
        # exact matches first: an approximate one in the same formula then keeps their bounds
        fixes = _merged(fixes, bound_exact_lookups(model, data, inputs, sorted(candidates - arrays)))
        fixes = _merged(fixes, bound_lookups(model, inputs, sorted(candidates - arrays)).rewrites)
        # then exact VLOOKUP/HLOOKUP as INDEX/MATCH over those bounds (fifteen times faster),
        # but in formulas whose approximate lookups each job cuts again (adjust_to_inputs)
        recut = {(w.sheet, w.row, w.col) for w in fixes if w.dynamic}
        fixes = _merged(fixes, index_match_lookups(model, sorted(candidates - arrays - recut)))
    fixes = _merged(fixes, _whole_columns(model, data, inputs))
    fixes = _merged(fixes, keep_formula_text(model, data, fixes))
    from shared.calc.corrections.dynamic import clear_spill_tails, spill_areas

    spills = spill_areas(data)  # dynamic arrays: their saved spilled values are not constants
    clear_spill_tails(model, spills)
    return ModelCorrections(fixes, spills)


def _whole_columns(model, data: bytes, inputs: list[InputBox]) -> list[Rewrite]:
    try:
        named = whole_columns.column_names(open_package(data).read("xl/workbook.xml"))
    except KeyError:
        named = frozenset()
    spread: set[tuple[int, int, int]] = set()
    # the formulas calling one of the functions where a name may stand for a whole column, else
    # only those writing a whole column out (fewer cells to look at in a SUM-heavy workbook)
    mention, keywords = (whole_columns.MENTION, whole_columns.KEYWORDS) if named else (
        whole_columns.COLUMN_MENTION, (b":",))
    candidates, arrays = survey(data, mention, keywords, spread=spread)
    if not candidates:
        return []
    return bound_whole_columns(model, data, inputs, sorted(candidates), named, frozenset(arrays - spread),
                               frozenset(spread))


def _merged(earlier: list[Rewrite], later: list[Rewrite]) -> list[Rewrite]:
    """Both lists of rewrites; a cell rewritten twice is the later one (the formula the model
    holds) with the earlier one's original (the formula as the upload had it)."""
    if not earlier:
        return later
    originals = {(w.sheet, w.row, w.col): w for w in earlier}
    for rewrite in later:
        first = originals.pop((rewrite.sheet, rewrite.row, rewrite.col), None)
        if first is not None:
            rewrite.original = first.original
    return list(originals.values()) + later


def _correct_text_operands(model, data: bytes) -> list[Rewrite]:
    """Dates, times and numbers typed as text where Excel reads a number (text_operands.py); before
    the date functions' rewrite, which then treats them as any other date."""
    from shared.calc.corrections.functions import uses_1904_dates

    candidates, arrays = survey(data, TEXT_OPERAND_MENTION, TEXT_OPERAND_KEYWORDS)
    if not candidates:
        return []
    return correct_text_operands(model, sorted(candidates - arrays), uses_1904_dates(data))


def _correct_dates(model, data: bytes) -> list[Rewrite]:
    """Date functions at serials 0-60 and in the 1904 date system (dates.py); a workbook
    without date functions costs one scan of its sheet XML."""
    from shared.calc.corrections.dates import KEYWORDS_1904, MENTION_1904
    from shared.calc.corrections.functions import uses_1904_dates

    date1904 = uses_1904_dates(data)
    if date1904:
        candidates, arrays = survey(data, MENTION_1904, KEYWORDS_1904)
    else:
        candidates, arrays = survey(data, DATE_MENTION, DATE_KEYWORDS)
    if not candidates:
        return []
    return correct_dates(model, sorted(candidates - arrays), date1904)


def _correct_arguments(model, data: bytes) -> list[Rewrite]:
    """Literal values given to statistical functions and OFFSET's omitted height or width
    (arguments.py); a workbook without those functions costs one scan of its sheet XML."""
    spread: set = set()
    candidates, arrays = survey(data, ARGUMENT_MENTION, ARGUMENT_KEYWORDS, spread=spread)
    if ARRAY_NAME.search(open_package(data).read("xl/workbook.xml")):
        # a name to an array constant, inlined by names.py: its COUNT/AVERAGE cells too
        more, more_arrays = survey(data, STATISTIC_MENTION, (b"COUNT(", b"AVERAGE("))
        candidates, arrays = candidates | more, arrays | more_arrays
    if not candidates:
        return []
    return correct_arguments(model, sorted(candidates - arrays)) \
        + correct_array_logicals(model, sorted(arrays - spread))


def _correct_units(model, data: bytes) -> list[Rewrite]:
    """CONVERT to Celsius and of a logical value (units.py); a workbook without CONVERT costs one
    scan of its sheet XML."""
    from shared.calc.corrections import units

    candidates, arrays = survey(data, units.MENTION, units.KEYWORDS)
    if not candidates:
        return []
    return units.correct_units(model, sorted(candidates - arrays))


def _correct_charset(model, data: bytes) -> list[Rewrite]:
    """CHAR and CODE in a workbook saved by Excel for Mac (charset.py); any other workbook costs
    a look at its docProps/app.xml."""
    from shared.calc.corrections import charset

    if not charset.saved_on_mac(data):
        return []
    candidates, arrays = survey(data, charset.MENTION, charset.KEYWORDS)
    if not candidates:
        return []
    return charset.correct_charset(model, sorted(candidates - arrays))


def _correct_references(model, data: bytes) -> list[Rewrite]:
    """Structured references to tables and 3-D references (tables.py); a workbook without
    tables or 3-D references costs a look at its part names and one scan of its sheet XML."""
    tables = tables_in(data)
    if not tables and not may_need_3d(data):
        return []
    package = open_package(data)
    defined = {name for name, _ in defined_names(package.read("xl/workbook.xml"))}
    # Legacy (Ctrl+Shift+Enter) array formulas of several cells are left alone: a rewrite
    # through IronCalc's API would make one a dynamic array. Excel 365's dynamic arrays
    # (`FILTER(Table1[],...)`) and one-cell array formulas are rewritten, without intersection.
    legacy, rewritten = _array_formulas(data)
    cells = sorted(set(model.get_all_cells()) - legacy)
    return correct_references(model, tables, cells, defined, written_with_line_breaks(data) if tables else None,
                              arrays=rewritten)


def _reference_operators(model, data: bytes) -> list[Rewrite]:
    """Intersections, unions and ranges of ranges written between references
    (reference_operators.py); costs one scan of the sheet XML."""
    from shared.calc.corrections import reference_operators

    written: dict = {}
    candidates, arrays = survey(data, reference_operators.MENTION, reference_operators.KEYWORDS, written)
    named, named_arrays = _named_cells(model, data, reference_operators.union_name)
    candidates |= named - named_arrays
    if not candidates:
        return []
    return reference_operators.correct_reference_operators(model, sorted(candidates), written)


def _intersect_ranges(model, data: bytes) -> list[Rewrite]:
    """Multi-cell ranges in single-value arguments and under operators inside functions that
    take references (names.intersect_ranges); a workbook without such a formula costs two
    searches of its formulas."""
    written: dict = {}
    candidates, arrays = survey(data, INTERSECTION_MENTION, INTERSECTION_KEYWORDS, written)
    more, more_arrays = survey(data, OPERATOR_RANGE_MENTION, AGGREGATE_KEYWORDS, written)
    candidates, arrays = candidates | more, arrays | more_arrays
    if not candidates:
        return []
    single_written = any("SINGLE(" in text.upper() or "@" in text for text in written.values())
    return intersect_ranges(model, sorted(candidates - arrays), single_written)


def _index_ranges(model, data: bytes) -> list[Rewrite]:
    """Ranges ended by INDEX calls (index_ranges.py), written in a formula or in a defined name
    inlined before; a workbook without them costs one scan of its sheet XML."""
    from shared.calc.corrections import index_ranges

    candidates, arrays = survey(data, index_ranges.MENTION, index_ranges.KEYWORDS)
    named, named_arrays = _named_cells(model, data, lambda text: "INDEX(" in text.upper())
    candidates, arrays = candidates | named, arrays | named_arrays
    if not candidates:
        return []
    return index_ranges.correct_index_ranges(model, sorted(candidates - arrays), workbook_names(data))


def _named_cells(model, data: bytes, holds) -> tuple[set, set]:
    """(every cell of the model, its array-formula cells) when a defined name's formula `holds`
    what a rewrite looks for: the names rewrite, run before, may have put it into any formula;
    two empty sets otherwise."""
    named = names_survey(data)
    if named is None or not any(holds(text) for text in named[0].values()):
        return set(), set()
    return set(model.get_all_cells()), named[1]


def _indirect_names(model, data: bytes) -> list[Rewrite]:
    """INDIRECT given the name of a range or a table's column (indirect_names.py); a workbook
    without INDIRECT costs one scan of its sheet XML."""
    from shared.calc.corrections import indirect_names

    candidates, arrays = survey(data, indirect_names.MENTION, indirect_names.KEYWORDS)
    named, named_arrays = _named_cells(model, data, lambda text: "INDIRECT(" in text.upper())
    candidates, arrays = candidates | named, arrays | named_arrays
    if not candidates - arrays:
        return []
    names, tables = workbook_names(data), tables_in(data)
    if not names and not tables:
        return []
    return indirect_names.correct_indirect_names(model, sorted(candidates - arrays), names, tables)


def _inline_names(model, data: bytes) -> list[Rewrite]:
    """Defined names IronCalc gets wrong (names.py), rewritten where formulas use them; a
    workbook without such names costs one look at workbook.xml."""
    surveyed = names_survey(data)
    if surveyed is None:
        return []
    definitions, arrays = surveyed
    legacy, rewritten = _array_formulas(data) if arrays else (set(), set())
    return inline_names(model, definitions, model.get_all_cells(), legacy, tables_in(data), rewritten)


def _array_formulas(data: bytes) -> tuple[set, set]:
    """(the cells of legacy, Ctrl+Shift+Enter, array formulas of several cells, which a rewrite
    through IronCalc's API would make dynamic arrays; the (sheet index, row, col) of every other
    array formula: Excel 365's dynamic arrays and one-cell array formulas, rewritten without
    intersection)."""
    from shared.calc.corrections.dynamic import spill_areas

    legacy, rewritten = set(), set()
    for sheet, row, col, bottom, right, is_dynamic in spill_areas(data):
        if is_dynamic or (bottom, right) == (row, col):
            rewritten.add((sheet, row, col))
        else:
            legacy |= {(sheet, r, c) for r in range(row, bottom + 1) for c in range(col, right + 1)}
    return legacy, rewritten


def restore_formulas(xlsx: bytes, corrections: ModelCorrections) -> bytes:
    """An exported workbook with the rewritten formulas shown as the user wrote them."""
    if not corrections:
        return xlsx
    return _restore(xlsx, {(w.sheet, w.row, w.col): w.original for w in corrections.rewrites})
