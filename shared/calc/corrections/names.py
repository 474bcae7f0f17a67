"""Defined names IronCalc 0.9.1 gets wrong, rewritten at model load.

Excel's rules (Microsoft support, "Define and use names in formulas"; "Implicit intersection
operator: @"; ECMA-376 Part 1, 18.2.5 definedName):

- A name can stand for a formula or a constant (`DAILY_CHARGE` = `Sheet1!$B$2*24`, `TAX` =
  `0.05`, `LABEL` = `"net"`): a formula using it calculates as if the name's formula were
  written in its place. IronCalc answers #NAME? for every such name (measured: `=DAILY_CHARGE`,
  `=TAX*100`). The rewrite puts the name's formula, in parentheses, where the name is.
- A sheet-scoped name (localSheetId) is found first from its own sheet, and from any sheet
  when written with the sheet's name, `Other!Rate` ("Define and use names in formulas": a name's
  scope is a worksheet or the workbook; a worksheet-level name is recognised in other sheets
  only qualified by its sheet's name). IronCalc 0.9.1 resolves the unqualified name per sheet
  as Excel does (measured: a workbook `Rate` shadowed on one sheet) but answers #ERROR! for the
  qualified form; the rewrite puts the name's reference there.
- A name whose reference is relative (`Sheet1!B1`, no `$`) is stored relative to cell A1 and
  refers, from each cell that uses it, to the cell at the same offset from that cell (wrapping
  round the sheet's edges, which is how "the cell to the left" is written). IronCalc reads it
  as the absolute cell. The rewrite puts the reference as seen from the cell.
- Implicit intersection: in a formula that is not an array formula, a multi-cell range where a
  single value is expected (an operand of an operator, the formula's whole result, an argument
  of a function that takes one value) is the cell of the range in the formula's row (a column
  range) or column (a row range), #VALUE! when there is none: `=Rate*100` in row 3 with `Rate`
  = `$E$1:$E$5` is `E3*100`. IronCalc does this for a range written in the formula (it renders
  it `@E1:E5`) but not for a name: `=Rate*100` is #VALUE! in every row. The rewrite writes the
  operator IronCalc already implements, `@Rate`, in those places only: the top level, functions
  of single values (IF, ROUND, ...) and the single-value arguments of others (VLOOKUP's lookup
  value, SUMIF's criteria, INDEX's row; formula_tokens.Context), and inside a function that
  takes references (SUM, AVERAGE, MAX, MATCH's lookup array ...: formula_tokens.VALUE_AGGREGATES)
  where the name is joined to an operator (`=SUM(Price*Qty)` in row 3 is Price's and Qty's
  cells on row 3 multiplied: an older Excel's formula, which Excel 365 shows as
  `=SUM(@Price*@Qty)`). Elsewhere (a name alone in SUM, anything inside SUMPRODUCT, LOOKUP's
  vectors, INDEX's array and the other functions that take arrays) it is left as it is.
  The same holds for ranges written in the formula (`intersect_ranges`): IronCalc 0.9.1 reads
  `=SUM(A1:A4*B1:B4)` in a plain formula element by element, as an array formula would (Excel
  saves such a formula as an array formula when it means that, `t="array"`: IronCalc's
  IFERROR.xlsx, saved by Excel 365, writes `SUM(IFERROR(G4:G7/H4:H7, 0))` so). And IF inside
  such a function gives it the range it chooses whole (IF's result is a reference, as CHOOSE's
  is): `=SUM(IF(C1="x",B1:B4,A1:A4))` is the sum of B1:B4, where IronCalc intersects the range
  with the formula's row; `_references_chosen` writes it `CHOOSE(IF(c,1,2),B1:B4,A1:A4)`.
- A name to a structured reference (`Table1[Amount]`, `SUM(Table1[Amount])`) is the table's
  cells (tables.py resolves them in the name's formula first); IronCalc answers #NAME?.
- A name whose cells were deleted (`=#REF!`, `=Sheet1!#REF!`, as Excel rewrites it) makes the
  formulas using it #REF! (Microsoft support, "How to correct a #REF! error"); IronCalc answers
  #NAME?. The rewrite puts the error itself in the name's place. Ranges ended by INDEX calls in
  a name's formula are then rewritten by index_ranges.py.

In Excel 365's dynamic arrays and in one-cell array formulas a name's formula is put in its
place the same way, without implicit intersection (an array formula reads arrays whole).
Left alone, and so IronCalc's as before (flagged at upload, `unfixable_names`, where it is
wrong): legacy array formulas of several cells (a rewrite through IronCalc's API would make
one a dynamic array), LAMBDA names (called, not referenced), names to other workbooks, names
using `[@Col]` (the using cell's row), and a name whose formula yields several cells at its top level (`Sheet1!$A$1:$A$3*2`, an
intersection of ranges) where a single value is expected (Excel's reading of such an array in
that place is not one IronCalc's operators express).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from xml.sax.saxutils import unescape

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import (
    SCALAR_ARGUMENTS,
    SCALAR_FUNCTIONS,
    VALUE_AGGREGATES,
    Context,
    calls,
    function_name,
    replace_call,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.lookups import parse_name
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.refs import MAX_COLS, MAX_ROWS, column_letters, column_number

_DEFINED = re.compile(rb"<definedName\b([^>]*)>(.*?)</definedName>", re.DOTALL)
_ABSOLUTE_CELL = re.compile(
    r"(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!\$[A-Za-z]{1,3}\$\d{1,7}"
)
_SHEET = r"(?:(?P<sheet>'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!)?"
_CELL = r"(?P<{0}c>\$?)(?P<{0}col>[A-Za-z]{{1,3}})(?P<{0}r>\$?)(?P<{0}row>\d{{1,7}})"
_REFERENCE = re.compile(_SHEET + _CELL.format("a") + r"(?::" + _CELL.format("b") + r")?")
_MAX_DEPTH = 8  # names inside names; deeper (or a cycle) is left alone


def may_need_names(data_workbook_xml: bytes) -> bool:
    """Whether a workbook.xml defines a name this module could rewrite: anything but a plain
    absolute single-cell reference. One regex pass: a workbook without such names pays nothing
    more."""
    for match in _DEFINED.finditer(data_workbook_xml):
        if b'name="_xlnm.' in match.group(1) or b'name="_xlfn.' in match.group(1):
            continue  # Excel's own (print areas, filters, newer functions' placeholders)
        text = match.group(2).decode("utf-8", "replace").strip()
        if not _ABSOLUTE_CELL.fullmatch(text) or b"localSheetId=" in match.group(1):
            return True  # a sheet-scoped name may be written `Sheet!Name` (_replacement)
    return False


@dataclass(frozen=True)
class _Ref:
    """A reference as written: sheet text (quotes kept) or None, and each corner's row and
    column with whether it is absolute."""

    sheet: str | None
    corners: tuple[tuple[int, bool, int, bool], ...]  # (row, row absolute, col, col absolute)

    @property
    def relative(self) -> bool:
        return any(not ra or not ca for _, ra, _, ca in self.corners)

    @property
    def multi(self) -> bool:
        return len(self.corners) == 2 and self.corners[0][::2] != self.corners[1][::2]

    def seen_from(self, row: int, col: int) -> str:
        """The reference from the cell (row, col): relative parts moved by the cell's offset
        from A1, wrapping round the sheet's edges."""
        parts = []
        for r, ra, c, ca in self.corners:
            r = r if ra else (r - 1 + row - 1) % MAX_ROWS + 1
            c = c if ca else (c - 1 + col - 1) % MAX_COLS + 1
            parts.append(f"{'$' if ca else ''}{column_letters(c)}{'$' if ra else ''}{r}")
        return (f"{self.sheet}!" if self.sheet else "") + ":".join(parts)


def _reference(text: str) -> _Ref | None:
    match = _REFERENCE.fullmatch(text.strip())
    if match is None:
        return None
    corners = []
    for p in ("a", "b"):
        if match.group(p + "col") is None:
            continue
        row, col = int(match.group(p + "row")), column_number(match.group(p + "col"))
        if not (1 <= row <= MAX_ROWS and 1 <= col <= MAX_COLS):
            return None
        corners.append((row, bool(match.group(p + "r")), col, bool(match.group(p + "c"))))
    return _Ref(match.group("sheet"), tuple(corners))


def defined_names(workbook_xml: bytes) -> dict[tuple[str, int | None], str]:
    """{(name in lower case, sheet index or None): formula} as Excel wrote them in workbook.xml
    (IronCalc's own list drops what it does not parse: `A1:A3 B2:C2` comes back as `A1:A3`)."""
    found = {}
    for match in _DEFINED.finditer(workbook_xml):
        attrs = match.group(1).decode("utf-8", "replace")
        name = re.search(r'\bname="([^"]*)"', attrs)
        if name is None or name.group(1).lower().startswith(("_xlnm.", "_xlfn.")):
            continue
        scope = re.search(r'\blocalSheetId="(\d+)"', attrs)
        text = unescape(match.group(2).decode("utf-8", "replace")).strip().lstrip("=")
        found[(unescape(name.group(1)).lower(), int(scope.group(1)) if scope else None)] = text
    return found


def _intersection(text: str) -> str | None:
    """A static intersection of references on one sheet (`S!$A$1:$A$3 S!$A$2:$C$2`, Excel's
    space operator, which IronCalc 0.9.1 does not implement) as the one reference it is, or
    #NULL! when the ranges do not meet (Microsoft: "Calculation operators and precedence")."""
    parts = text.split()
    if len(parts) < 2:
        return None
    refs = [_reference(p) for p in parts]
    if any(r is None or r.relative or r.sheet is None for r in refs) \
            or len({r.sheet.strip("'").lower() for r in refs}) != 1:
        return None
    top = max(min(c[0] for c in r.corners) for r in refs)
    bottom = min(max(c[0] for c in r.corners) for r in refs)
    left = max(min(c[2] for c in r.corners) for r in refs)
    right = min(max(c[2] for c in r.corners) for r in refs)
    if top > bottom or left > right:
        return "#NULL!"
    corners = ((top, True, left, True),) if (top, left) == (bottom, right) else \
        ((top, True, left, True), (bottom, True, right, True))
    return _Ref(refs[0].sheet, corners).seen_from(1, 1)


_DELETED = re.compile(r"(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s\"]+)!#REF!", re.IGNORECASE)
_THIS_ROW = re.compile(r"@|#this row", re.IGNORECASE)


def _deleted(text: str) -> str:
    """A name's formula with each reference to deleted cells (`Sheet1!#REF!`, as Excel writes
    it once the cells a name pointed at are deleted) as the error itself, which IronCalc reads:
    cells using `=#REF!` or `=Sheet1!#REF!*2` are then #REF! as in Excel."""
    return _DELETED.sub("#REF!", text) if "#REF!" in text.upper() else text


def _structured(text: str, tables: list, sheets: list[str], defined: set[str]) -> str | None:
    """A name's formula with its structured references (`Table1[Amount]`, `SUM(Table1[Amount])`)
    as the plain references they stand for (tables.py), or None: none, another workbook's
    (`[1]Sheet1!A1`), or one that depends on the cell using the name (`[@Amount]`)."""
    if not tables or "[" not in text or re.match(r"'?\[\d+\]", text) or _THIS_ROW.search(text):
        return None
    from shared.calc.corrections.tables import rewrite_formula

    resolved = rewrite_formula(text, -1, 0, 0, tables, sheets, defined)
    if resolved is None or "[" in resolved:
        return None
    if resolved.startswith("@") and _reference(resolved[1:]) is not None:
        return resolved[1:]  # the name is the whole range; where it is used decides (_rewrite)
    return None if "@" in resolved else resolved


class _Names:
    """The workbook's defined names, found the way a formula does: the formula's sheet scope
    first, then the workbook's."""

    def __init__(self, sheets: list[str], formulas: dict[tuple[str, int | None], str], tables: list = ()):
        self._index = {s.lower(): i for i, s in enumerate(sheets)}
        defined = {name for name, _ in formulas}
        self._formulas = {
            key: _intersection(text) or _structured(text, tables, sheets, defined) or _deleted(text)
            for key, text in formulas.items()
        }
        # references IronCalc does not have as the name's (it reads `A1:A3 B2:C2` as `A1:A3`)
        self.resolved = {text for key, text in self._formulas.items() if text != formulas[key]}
        self.lowered = {name for name, _ in self._formulas}
        self._mention = re.compile(
            r"(?<![A-Za-z0-9_.\\])(?:" + "|".join(re.escape(n) for n in sorted(self.lowered, key=len, reverse=True))
            + r")(?![A-Za-z0-9_.(\\])",
            re.IGNORECASE,
        ) if self.lowered else None

    def mentioned(self, formula: str) -> bool:
        """Whether a formula may use one of the names (a quick test before tokenizing)."""
        return self._mention is not None and self._mention.search(formula) is not None

    def lookup(self, sheet: str | None, name: str, own_sheet: int) -> str | None:
        if sheet is not None:
            scope = self._index.get(sheet.strip("'").replace("''", "'").lower())
            return None if scope is None else self._formulas.get((name.lower(), scope))
        found = self._formulas.get((name.lower(), own_sheet))
        return found if found is not None else self._formulas.get((name.lower(), None))


class _Unchanged(Exception):
    """The formula is left as IronCalc has it."""


def _rewrite(tokens: list[Token], names: _Names, sheet: int, row: int, col: int,
             intersect_top: bool, depth: int) -> str:
    """The formula text with each name IronCalc gets wrong replaced (module docstring).
    `intersect_top`: whether the formula's top level expects a single value."""
    context = Context()
    out: list[str] = []
    for index, token in enumerate(tokens):
        value = token.value
        context.step(token)
        if token.type != Token.OPERAND or token.subtype != Token.RANGE:
            out.append(value)
            continue
        at = value.startswith("@")
        bare = value[1:] if at else value
        ref = _reference(bare)
        if ref is not None and depth > 0 and ref.relative:  # inside a name: as seen from the cell
            out.append(("@" if at else "") + ref.seen_from(row, col))
            continue
        named = parse_name(bare) if ref is None else None
        if named is None:
            out.append(value)
            continue
        definition = names.lookup(named[0], named[1], sheet)
        if definition is None or definition.upper().startswith(("_XLFN.LAMBDA(", "LAMBDA(")) \
                or "[" in definition:
            out.append(value)
            continue
        intersect = at or intersect_top and (
            context.expects_one_value()
            or context.reads_one_value_in_aggregate() and _operand_of_operator(tokens, index))
        out.append(_replacement(value, definition, names, sheet, row, col, intersect, depth))
    return "".join(out)


def _replacement(value: str, definition: str, names: _Names, sheet: int, row: int, col: int,
                 intersect: bool, depth: int) -> str:
    ref = _reference(definition)
    if ref is not None and ref.sheet is not None:
        qualified = "!" in value  # `Other!Rate`: IronCalc 0.9.1 answers #ERROR!
        if not ref.relative and definition not in names.resolved and not qualified:
            return "@" + value.lstrip("@") if ref.multi and intersect else value
        text = ref.seen_from(row, col)
        return "@" + text if ref.multi and intersect else text
    if depth >= _MAX_DEPTH:
        raise _Unchanged
    tokens = tokenize(definition)
    if tokens is None:
        raise _Unchanged
    if intersect and _several_cells_at_top(tokens, names, sheet, depth):
        raise _Unchanged
    return "(" + _rewrite(tokens, names, sheet, row, col, False, depth + 1) + ")"


def _several_cells_at_top(tokens: list[Token], names: _Names, sheet: int, depth: int) -> bool:
    """Whether a name's formula may yield several cells outside any function call: a
    multi-cell range, a name to one or to a formula that may, an array constant."""
    level = 0
    for token in tokens:
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.ARRAY):
            level += 1
            if token.type == Token.ARRAY and level == 1:
                return True
        elif token.subtype == Token.CLOSE and token.type in (Token.FUNC, Token.ARRAY):
            level -= 1
        elif level == 0 and token.type == Token.OPERAND and token.subtype == Token.RANGE:
            ref = _reference(token.value.lstrip("@"))
            if ref is not None:
                if ref.multi:
                    return True
                continue
            named = parse_name(token.value.lstrip("@"))
            target = names.lookup(named[0], named[1], sheet) if named else None
            if target is None:
                return True
            inner = _reference(target)
            if inner is not None and inner.sheet is not None:
                if inner.multi:
                    return True
                continue
            inner_tokens = tokenize(target)
            if depth >= _MAX_DEPTH or inner_tokens is None \
                    or _several_cells_at_top(inner_tokens, names, sheet, depth + 1):
                return True
    return False


def inline_names(model, definitions: dict[tuple[str, int | None], str],
                 cells: list[tuple[int, int, int]], skip: set[tuple[int, int, int]],
                 tables: list = (), arrays: set[tuple[int, int, int]] = frozenset()) -> list[Rewrite]:
    """Rewrite, in `model`, the formulas of `cells` (sheet index, row, col) that use a name
    IronCalc gets wrong; `definitions` as `defined_names` reads them, `skip` the cells left
    alone (legacy array formulas of several cells), `arrays` the array formulas rewritten
    without implicit intersection (dynamic arrays, one-cell array formulas), `tables` the
    workbook's (tables.tables_in) for names to structured references. Returns what changed."""
    names = _Names([p["name"] for p in model.get_worksheets_properties()], definitions, tables)
    if not names.lowered:
        return []

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        if not names.mentioned(formula):
            return None
        tokens = tokenize(formula)
        if tokens is None:
            return None
        try:
            return _rewrite(tokens, names, sheet, row, col, (sheet, row, col) not in arrays, 0)
        except _Unchanged:
            return None

    return rewrite_cells(model, [cell for cell in cells if cell not in skip], rewrite)


def book_definitions(book) -> dict[tuple[str, int | None], str]:
    """An ExcelBook's workbook-scoped names keyed as `defined_names` keys them."""
    return {(name.lower(), None): text for name, text in book.defined_names.items()}


def array_names_inlined(book) -> list:
    """An ExcelBook's formula cells, those of the array formulas inline_names rewrites (dynamic
    arrays, one-cell array formulas) with each name's formula in its place as it writes it: the
    other checks of flags.py then read what IronCalc calculates (`{=COUNT(Arr)}` with Arr an
    array constant is COUNT of that array)."""
    names = _Names(book.sheets, book_definitions(book))
    if not names.lowered:
        return book.cells
    found = []
    for cell in book.cells:
        text = None
        if cell.array_formula and not cell.legacy_array and names.mentioned(cell.formula):
            tokens = tokenize(cell.formula)
            try:
                text = _rewrite(tokens, names, -1, cell.row, cell.col, False, 0) if tokens else None
            except _Unchanged:
                text = None
        found.append(replace(cell, formula=text) if text and text != cell.formula else cell)
    return found


ARRAY_NAME_REASON = (
    "the defined name {name} stands for a formula or constant (an array constant too) inside a "
    "legacy array formula of several cells: IronCalc 0.9.1 answers #NAME? for it (COUNT and "
    "other functions that skip errors then miss its values) and the layer does not rewrite such "
    "array formulas"
)


def _computed_name(tokens: list[Token], definitions: dict[str, str]) -> str | None:
    """The first workbook-scoped name a formula uses that is not a plain reference (a constant,
    an array constant, a formula), or None."""
    from shared.calc.corrections.lookups import parse_range

    for token in tokens:
        if token.type != Token.OPERAND or token.subtype != Token.RANGE:
            continue
        named = parse_name(token.value.lstrip("@"))
        if named is None or named[0] is not None:
            continue
        definition = definitions.get(named[1].upper())
        if definition is None:
            continue
        text = definition.strip().lstrip("=")
        if "#REF!" in text.upper() or "[" in text:
            continue  # Excel's #REF! either way; another workbook's
        if _reference(text) is None and parse_range(text) is None:
            return named[1]
    return None


def unfixable_names(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells using a workbook-scoped name that the
    rewrite leaves alone although IronCalc gets it wrong: a name whose formula gives several
    cells where Excel takes one value (see the module docstring)."""
    names = _Names(book.sheets, book_definitions(book))
    if not names.lowered:
        return []
    found = []
    for cell in book.cells:
        if cell.array_area or not names.mentioned(cell.formula):
            continue
        tokens = tokenize(cell.formula)
        if tokens is None:
            continue
        if cell.legacy_array:
            computed = _computed_name(tokens, book.defined_names)
            if computed is not None:
                found.append((cell, ARRAY_NAME_REASON.format(name=computed)))
            continue
        try:
            _rewrite(tokens, names, -1, cell.row, cell.col, not cell.array_formula, 0)
        except _Unchanged:
            found.append((cell, (
                "a defined name whose formula gives several cells, where Excel takes the one in "
                "the formula's row or column (implicit intersection): IronCalc 0.9.1 calculates "
                "it differently and the name cannot be rewritten"
            )))
    return found


# A formula that may give a range to a single-value argument: a function taking one, and a
# multi-cell range (the survey's cheap test; the tokens decide)
# whole columns or rows (`A:A`, `$B:$C`, `Sheet1!1:1`): intersected as any range there
_WHOLE_LINES = re.compile(
    r"(?:(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!)?(?:\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}|\$?\d+:\$?\d+)"
)
_SINGLE_VALUE_CALLS = sorted({*SCALAR_FUNCTIONS, *SCALAR_ARGUMENTS}, key=len, reverse=True)
INTERSECTION_MENTION = re.compile(
    rb"(?i)(?<![A-Z0-9_.])(?:" + "|".join(re.escape(n) for n in _SINGLE_VALUE_CALLS).encode() + rb")\("
    rb"[^<]*(?:\$?[A-Za-z]{1,3}\$?\d+:\$?[A-Za-z]{1,3}\$?\d+|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}(?![A-Za-z0-9(]))"
)
INTERSECTION_KEYWORDS = tuple(n.encode() + b"(" for n in _SINGLE_VALUE_CALLS)
# A range joined to an operator, as the sheet XML writes them (`A1:A4*`, `-A1:A4`, `&lt;A:A`),
# in a sheet calling a function that takes references: the tokens decide whether it is inside
# one (written with a literal first, the pattern is a fast scan)
OPERATOR_RANGE_MENTION = re.compile(
    rb":\$?[A-Z]{1,3}\$?\d*\s*[-+*/^&=%]|[-+*/^=;]\s*\(?\s*\$?[A-Z]{1,3}\$?\d*:"
)
AGGREGATE_KEYWORDS = tuple(n.encode() + b"(" for n in VALUE_AGGREGATES)


_VALUE_OPERATORS = frozenset({"+", "-", "*", "/", "^", "&", "=", "<>", "<", ">", "<=", ">="})


def _operand_of_operator(tokens: list[Token], index: int) -> bool:
    """Whether the operand at `index` is joined to an arithmetic, text or comparison operator
    (not to the reference operators `:`, `,` and the space)."""
    def skipped(token: Token, opening: str) -> bool:  # spaces and the parentheses around it
        return token.type == Token.WSPACE or token.type == Token.PAREN and token.subtype == opening

    before = next((t for t in reversed(tokens[:index]) if not skipped(t, Token.OPEN)), None)
    after = next((t for t in tokens[index + 1:] if not skipped(t, Token.CLOSE)), None)
    if before is not None and (before.type == Token.OP_PRE or
                               before.type == Token.OP_IN and before.value in _VALUE_OPERATORS):
        return True
    return after is not None and (after.type == Token.OP_POST or
                                  after.type == Token.OP_IN and after.value in _VALUE_OPERATORS)


def _multi_cell(token: Token, marked: bool = False) -> bool:
    """A range of several cells written in the formula, a whole column or row; with `marked`,
    also one IronCalc marks with its `@`."""
    value = token.value[1:] if marked and token.value.startswith("@") else token.value
    if token.type != Token.OPERAND or token.subtype != Token.RANGE or value.startswith("@"):
        return False
    ref = _reference(value)
    return ref.multi if ref is not None else bool(_WHOLE_LINES.fullmatch(value))


def _references_chosen(tokens: list[Token], values: list[str]) -> bool:
    """IF choosing between ranges for a function that takes references (`SUM(IF(C1="x",B1:B4,
    A1:A4))`): IF gives Excel's function the range itself (its result is a reference, as
    CHOOSE's is), where IronCalc 0.9.1 intersects it with the formula's row outside an array
    formula (the one cell there, #VALUE! off the range; it shows its formula as
    `SUM(IF(C1="x",@B1:B4,@A1:A4))`). Written `CHOOSE(IF(c,1,2),r1,r2)`, whose range IronCalc
    passes on whole, when the condition holds no range of several cells, no array and no
    function but those answering one value (IF, ISBLANK, AND, SUM ...), and each value is a
    range, a cell or a constant. Only for workbooks whose formulas write no @ of their own
    (`_xlfn.SINGLE`): IronCalc's text shows both alike."""
    changed = False
    context = Context()
    found = {opened: (name, closed, args) for name, opened, closed, args in calls(tokens)}
    for index, token in enumerate(tokens):
        inside = context.reads_one_value_in_aggregate() and context.frames[-1][0] in VALUE_AGGREGATES
        context.step(token)
        if not inside or index not in found or found[index][0] != "IF":
            continue
        _, closed, args = found[index]
        if not 2 <= len(args) <= 3 or not _whole_argument(tokens, index, closed):
            continue
        condition, chosen = args[0], args[1:]
        if any(_multi_cell(tokens[i]) and not values[i].startswith("@") or tokens[i].type == Token.ARRAY
               or tokens[i].type == Token.FUNC and tokens[i].subtype == Token.OPEN
               and function_name(tokens[i]) not in SCALAR_FUNCTIONS and function_name(tokens[i]) not in VALUE_AGGREGATES
               for i in condition) \
                or not any(_multi_cell(tokens[i], marked=True) for arg in chosen for i in arg):
            continue
        texts = []
        for arg in chosen:
            kept = without_spaces(tokens, arg)
            if len(kept) != 1 and kept or kept and tokens[kept[0]].type != Token.OPERAND:
                break
            text = values[kept[0]] if kept else "0"
            texts.append(text[1:] if kept and _multi_cell(tokens[kept[0]], marked=True) and text.startswith("@") else text)
        else:
            if len(texts) == 1:
                texts.append("FALSE")  # IF(c,r) is FALSE when c is
            test = "".join(values[i] for i in condition)
            replace_call(values, index, closed, f"CHOOSE(IF({test},1,2),{texts[0]},{texts[1]})")
            changed = True
    return changed


def _whole_argument(tokens: list[Token], opened: int, closed: int) -> bool:
    """Whether the call from `opened` to `closed` is the whole argument it sits in."""
    before = next((t for t in reversed(tokens[:opened]) if t.type != Token.WSPACE), None)
    after = next((t for t in tokens[closed + 1:] if t.type != Token.WSPACE), None)
    return before is not None and (before.type == Token.SEP or before.type == Token.FUNC and before.subtype == Token.OPEN) \
        and after is not None and (after.type == Token.SEP or after.type == Token.FUNC and after.subtype == Token.CLOSE)


def intersect_ranges(model, cells: list[tuple[int, int, int]], single_written: bool = True) -> list[Rewrite]:
    """Excel's implicit intersection (module docstring) for multi-cell ranges written in the
    formula where a function takes one value (`IF($E$1:$E$5>4,1,0)`, `VLOOKUP($E$1:$E$5,...)`):
    IronCalc 0.9.1 intersects such a range at the top level and under operators only (#VALUE!
    or #N/A here), so the range gets IronCalc's `@`; likewise a range joined to an operator
    inside a function that takes references (`SUM(A1:A4*2)`), which IronCalc reads element by
    element; and IF choosing a range for such a function (`_references_chosen`) unless
    `single_written` (the workbook writes @ of its own). `cells` leave out array formulas."""

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        tokens = tokenize(formula)
        if tokens is None:
            return None
        context = Context()
        out, changed = [], False
        for index, token in enumerate(tokens):
            value = token.value
            if not context.step(token) and _multi_cell(token) and context.frames and (
                    context.expects_one_value()
                    or context.reads_one_value_in_aggregate() and _operand_of_operator(tokens, index)):
                value, changed = "@" + value, True
            out.append(value)
        if not single_written:
            changed |= _references_chosen(tokens, out)
        return "".join(out) if changed else None

    return rewrite_cells(model, cells, rewrite)
