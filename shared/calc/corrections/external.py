"""References to other workbooks, rewritten at model load to the values Excel saved for them.

IronCalc 0.9.1 reads neither external-link parts nor other files: `[1]Sheet1!B2` is #ERROR!
(measured), and a path written in a formula (`'/tmp/[b.xlsx]S'!A1`) #REF!. Excel, when links
are not updated, calculates with the values the link part saved (shared.calc.xlsx.external_links,
which also says what the file does not save: #REF!). The rewrite puts those values in the
formula, as constants: a cell as its value (`[1]S!B2*2` -> `125*2`), a range as an array
constant (`SUM([1]S!B1:B3)` -> `SUM({1;2;3})`), where a single value is expected (a formula
that is not an array formula) the range's cell in the formula's row or column, as Excel's
implicit intersection picks it. A defined name standing for one external reference is treated
the same where a formula uses it. The exported workbook shows the formulas as written.

Where the answer can differ from Excel's (every such cell is among those the upload's warnings
name as reading another workbook): a blank cell of a linked range is "" in the array (SUM,
AVERAGE, MIN and MAX skip it as they skip a blank; COUNTA counts it; IronCalc 0.9.1's COUNT of an
array counts nothing); a function that needs a reference rather than values (SUMIF's or
COUNTIF's range, OFFSET, ROW, CELL) answers as it does for an array; array formulas are left as
they are (an error); a range of more cells than the link part can have saved is #REF! (see
external_links.saved_area); constants past MAX_TEXT characters in one workbook are #REF!, so a
hostile link part cannot inflate the model.
"""

from __future__ import annotations

import math

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import Context, tokenize
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.package import array_cells
from shared.calc.refs import column_letters
from shared.calc.values import CellValue
from shared.calc.xlsx.external_links import (
    ExternalBook,
    ExternalReference,
    SavedArea,
    external_books,
    parse_reference,
    reference_box,
    saved_area,
)
from shared.calc.xlsx.package import defined_names, open_package, workbook_parts

MAX_TEXT = 4_000_000  # characters of constants put into one workbook's formulas
_REF = "#REF!"


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "#NUM!"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _literal(value: CellValue, in_array: bool) -> str:
    kind, content = value
    if kind == "n":
        text = _number(content)
        return f"({text})" if text.startswith("-") and not in_array else text
    if kind == "s":
        return '"' + str(content).replace('"', '""') + '"'
    if kind == "b":
        return "TRUE" if content else "FALSE"
    if kind == "e":
        return str(content)
    return '""' if in_array else "0"  # blank: "" inside an array, 0 where a value is read


class _Rendering:
    """The constants put into one workbook's formulas: what each reference renders to (many
    cells read the same one), and the characters left before every further one is #REF!."""

    def __init__(self, books: dict[int, ExternalBook], chars: int = MAX_TEXT):
        self.books = books
        self.chars = chars
        self._done: dict[tuple[str, str], str] = {}

    def constant(self, reference: ExternalReference, row: int, col: int, one_value: bool) -> str:
        """The formula text standing for what `reference` reads, seen from cell (row, col)."""
        if one_value and reference.sheet is not None:
            reference = _intersected(reference, row, col)
            if reference is None:
                return "#VALUE!"
        key = (reference.text, reference.ref)
        text = self._done.get(key)
        if text is None:
            area = saved_area(reference, self.books)
            if area is None:
                text = _REF
            elif not isinstance(area, SavedArea):
                text = _literal(area, in_array=False)
            elif area.size * 2 > self.chars:  # each value takes a character and a separator at least
                text = _REF
            else:
                values = area.values()
                if len(values) == 1 and len(values[0]) == 1:
                    text = _literal(values[0][0], in_array=False)
                else:
                    text = "{" + ";".join(",".join(_literal(v, True) for v in line) for line in values) + "}"
            self._done[key] = text
        if len(text) > self.chars:
            return _REF
        self.chars -= len(text)
        return text


def _intersected(reference: ExternalReference, row: int, col: int) -> ExternalReference | None:
    """Excel's implicit intersection of a multi-cell reference where one value is expected: its
    cell in the formula's row (a column) or column (a row); None (#VALUE!) when there is none."""
    box = reference_box(reference.ref)
    if box is None or (box[0], box[1]) == (box[2], box[3]):
        return reference
    top, left, bottom, right = box
    if left == right and top <= row <= bottom:
        cell = f"{column_letters(left)}{row}"
    elif top == bottom and left <= col <= right:
        cell = f"{column_letters(col)}{top}"
    else:
        return None
    return ExternalReference(reference.text, reference.book, reference.path, reference.sheet, cell)


def rewrite_formula(formula: str, row: int, col: int, names: dict[str, ExternalReference],
                    rendering: _Rendering) -> str | None:
    """The formula with every external reference (and name standing for one) as constants, or
    None when it has none."""
    if "[" not in formula and not names:
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    values = [t.value for t in tokens]
    context = Context()
    changed = False
    for index, token in enumerate(tokens):
        if context.step(token) or token.type != Token.OPERAND or token.subtype != Token.RANGE:
            continue
        reference = parse_reference(token.value)
        if reference is None and "!" not in token.value:
            reference = names.get(token.value.lstrip("@").upper())
        if reference is None:
            continue
        values[index] = rendering.constant(reference, row, col, context.expects_one_value())
        changed = True
    return "".join(values) if changed else None


def _external_names(workbook_xml) -> dict[str, ExternalReference]:
    """Workbook-scoped names (upper case) whose whole formula is one external reference."""
    found = {}
    for name, text in defined_names(workbook_xml).items():
        if "[" not in text:
            continue
        reference = parse_reference(text.strip().lstrip("=").strip())
        if reference is not None:
            found[name] = reference
    return found


def correct_external(model, data: bytes, cells: list[tuple[int, int, int]] | None = None) -> list[Rewrite]:
    """Rewrite, in `model`, every formula reading another workbook (array formulas left out)
    to the values saved for it. Returns what changed; a workbook without link parts costs a
    look at its part names (IronCalc answers an error for a reference to a book it has no part
    for, and never reads another file)."""
    books = {b.index: b for b in external_books(data)}
    if not books:
        return []
    workbook_xml, _, _ = workbook_parts(open_package(data))
    names = _external_names(workbook_xml)
    if cells is None:
        cells = sorted(set(model.get_all_cells()) - array_cells(data))
    rendering = _Rendering(books)
    return rewrite_cells(
        model, cells,
        lambda formula, sheet, row, col: rewrite_formula(formula, row, col, names, rendering),
    )
