"""Excel's reference operators between references written in a formula, which IronCalc 0.9.1
does not calculate: the intersection (a space, `SUM(A1:C3 B2:D4)`), the union in parentheses
(`AREAS((B2:D4,E5,F6:I9))`) and a range of ranges (`A1:B2:C3`).

Excel's rules (Microsoft support, "Calculation operators and precedence": the space is "the
intersection operator, which produces one reference to cells common to the two references", the
comma "the union operator, which combines multiple references into one reference", the colon
"one reference to all the cells between two references, including the two references"; "How to
correct a #NULL! error": ranges that do not intersect are #NULL!; "AREAS function":
`AREAS((B2:D4,E5,F6:I9))` is 3 and `AREAS(B2:D4 B2)` 1; "INDEX function": the reference form's
`area_num` chooses one area of a union). Excel-saved cells of formulas' test.xlsx agree: a union
keeps every area, twice over where two meet (`AREAS(((F4:G4,G4:I4,F6:G6,G6:I6) G3:G11))` 4),
ROWS and COLUMNS of a union of several areas are #REF!, and AREAS of a cell holding an error is 1.

IronCalc answers #ERROR! for a formula with a space or a union between references and reads
`A1:B2 B2:C3` at the top of a formula as `@A1:B2` (a plausible wrong value). The references are
fixed text, so the result is known at load: each such reference expression is rewritten, in the
model only, as the one reference it makes (or #NULL!); a union of several areas is rewritten
where its meaning is plain: AREAS of it is the count, it is spread into separate arguments of
the functions that add up every argument (SUM, COUNT, MAX, ...), ROWS and COLUMNS of it are
#REF!, INDEX takes the area its literal `area_num` names. A union elsewhere, and an expression
with a name or a reference to another workbook, is left to the engine (an error, never a
number)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import calls, replace_call, tokenize, without_spaces
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.refs import MAX_COLS, MAX_ROWS, column_letters, column_number

# Candidate formulas (upper-cased sheet XML): a reference or a name, spaces and another or a
# parenthesis; a parenthesis that opens no call, holding a reference or a name and a comma; three
# references joined by colons; AREAS (an error in its cell is not its answer).
_CELL = rb"\$?[A-Z]{1,3}\$?\d{1,7}"
MENTION = re.compile(
    rb"[A-Z0-9_.)] +[(\$A-Z_']|(?<![A-Z0-9_.])\( *(?:'[^']*'!|[A-Z0-9_.]+!)?" + _CELL + rb"(?::" + _CELL
    + rb")? *,|(?<![A-Z0-9_.])\( *[A-Z_\\][A-Z0-9_.\\]* *,|\d:" + _CELL + rb":|AREAS\("
)
KEYWORDS = (b"<F",)
# the functions whose whole call a static reference expression can settle (support table)
FUNCTIONS = ("AREAS", "ROWS", "COLUMNS", "INDEX")

# Functions that add up every argument, a union's areas alike (Microsoft's pages: "number1,
# number2, ..."): `SUM((A1:A2,C1:C2))` is `SUM(A1:A2,C1:C2)`.
_LISTS = frozenset({
    "SUM", "COUNT", "COUNTA", "AVERAGE", "AVERAGEA", "MAX", "MAXA", "MIN", "MINA", "PRODUCT",
    "SUMSQ", "STDEV", "STDEV.S", "STDEV.P", "STDEVA", "STDEVP", "STDEVPA", "VAR", "VAR.S",
    "VAR.P", "VARA", "VARP", "VARPA", "MEDIAN", "AVEDEV", "DEVSQ", "GEOMEAN", "HARMEAN", "KURT",
    "SKEW", "SKEW.P",
})

_SHEET = r"(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!"
_PART = re.compile(r"\$?([A-Za-z]{1,3})?\$?(\d{1,7})?")
_OPERAND = re.compile(rf"(?P<sheet>{_SHEET})?(?P<parts>[$A-Za-z0-9]+(?::[$A-Za-z0-9]+)*)")


@dataclass(frozen=True)
class Area:
    """A rectangle of cells on one sheet (`sheet` as written, None for the formula's own)."""

    sheet: str | None
    top: int
    left: int
    bottom: int
    right: int

    def meet(self, other: Area) -> Area | None:
        top, left = max(self.top, other.top), max(self.left, other.left)
        bottom, right = min(self.bottom, other.bottom), min(self.right, other.right)
        if top > bottom or left > right:
            return None
        return Area(self.sheet if self.sheet is not None else other.sheet, top, left, bottom, right)

    def text(self) -> str:
        prefix = self.sheet or ""
        if self.top == 1 and self.bottom == MAX_ROWS:
            return f"{prefix}{column_letters(self.left)}:{column_letters(self.right)}"
        if self.left == 1 and self.right == MAX_COLS:
            return f"{prefix}{self.top}:{self.bottom}"
        first = f"{column_letters(self.left)}{self.top}"
        if (self.top, self.left) == (self.bottom, self.right):
            return prefix + first
        return f"{prefix}{first}:{column_letters(self.right)}{self.bottom}"


class _NotStatic(Exception):
    """The expression holds something other than references written out (a name, a call)."""


def operand_area(text: str, names: dict[str, Area] | None = None) -> Area | None:
    """The area a reference token covers (`B2`, `S!A1:C3`, `A:C`, `2:5`, `A1:B2:C3` as the
    range from the first to the last corner; a workbook name in `names`, by its upper-cased
    name), or None for another name or another workbook."""
    if names and text.lstrip("@").upper() in names:
        return names[text.lstrip("@").upper()]
    found = _OPERAND.fullmatch(text.lstrip("@"))
    if found is None:
        return None
    sheet = found.group("sheet")
    if sheet is not None and sheet.startswith("["):
        return None
    parts = [_PART.fullmatch(p) for p in found.group("parts").split(":")]
    if any(p is None or not (p.group(1) or p.group(2)) for p in parts):
        return None
    kinds = {(bool(p.group(1)), bool(p.group(2))) for p in parts}
    if kinds == {(True, True)}:
        rows = [int(p.group(2)) for p in parts]
        cols = [column_number(p.group(1).upper()) for p in parts]
    elif kinds == {(True, False)} and len(parts) == 2:
        rows, cols = [1, MAX_ROWS], [column_number(p.group(1).upper()) for p in parts]
    elif kinds == {(False, True)} and len(parts) == 2:
        rows, cols = [int(p.group(2)) for p in parts], [1, MAX_COLS]
    else:
        return None
    if not (all(1 <= r <= MAX_ROWS for r in rows) and all(1 <= c <= MAX_COLS for c in cols)):
        return None
    return Area(sheet, min(rows), min(cols), max(rows), max(cols))


class _Expression:
    """Recursive descent over the tokens of one reference expression:

        union     := intersect ("," intersect)*      (inside parentheses only)
        intersect := primary (space primary)*
        primary   := reference | "(" union ")"
    """

    def __init__(self, tokens: list[Token], own_sheet: str, names: dict[str, Area] | None = None):
        self.tokens = tokens
        self.own = own_sheet.lower()
        self.names = names
        self.operators = 0  # spaces, commas and colon chains met

    def _skip(self, i: int) -> int:
        while i < len(self.tokens) and self.tokens[i].type == Token.WSPACE:
            i += 1
        return i

    def _sheet(self, area: Area) -> str:
        if area.sheet is None:
            return self.own
        return area.sheet[:-1].strip("'").replace("''", "'").lower()

    def intersect(self, i: int) -> tuple[list[Area], int]:
        areas, i = self.primary(i)
        while True:
            j = self._skip(i)
            if j == i or j >= len(self.tokens):
                return areas, i
            token = self.tokens[j]
            if not (token.type == Token.OPERAND and token.subtype == Token.RANGE
                    or token.type == Token.PAREN and token.subtype == Token.OPEN):
                return areas, i
            more, i = self.primary(j)
            self.operators += 1
            met = []
            for a in areas:
                for b in more:
                    if self._sheet(a) != self._sheet(b):
                        raise _NotStatic  # Excel's #VALUE!: left to the engine
                    both = a.meet(b)
                    if both is not None:
                        met.append(both)
            areas = met

    def primary(self, i: int) -> tuple[list[Area], int]:
        if i >= len(self.tokens):
            raise _NotStatic
        token = self.tokens[i]
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            area = operand_area(token.value, self.names)
            if area is None:
                raise _NotStatic
            self.operators += token.value.count(":") > 1
            return [area], i + 1
        if token.type == Token.PAREN and token.subtype == Token.OPEN:
            areas, i = self.intersect(self._skip(i + 1))
            while True:
                i = self._skip(i)
                if i >= len(self.tokens):
                    raise _NotStatic
                token = self.tokens[i]
                if token.type == Token.PAREN and token.subtype == Token.CLOSE:
                    return areas, i + 1
                if token.type == Token.OP_IN and token.value == ",":
                    more, i = self.intersect(self._skip(i + 1))
                    self.operators += 1
                    areas = areas + more
                    continue
                raise _NotStatic
        raise _NotStatic


def _expressions(tokens: list[Token], own_sheet: str, names: dict[str, Area] | None = None):
    """(first token, token after the last, areas) of each outermost reference expression that
    uses an operator; an empty list of areas is #NULL!."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        starts = token.type == Token.OPERAND and token.subtype == Token.RANGE \
            or token.type == Token.PAREN and token.subtype == Token.OPEN
        if starts:
            parser = _Expression(tokens, own_sheet, names)
            try:
                areas, end = parser.intersect(i)
            except _NotStatic:
                i += 1
                continue
            if parser.operators:
                yield i, end, areas
            i = end
            continue
        i += 1


def rewrite(formula: str, own_sheet: str, names: dict[str, Area] | None = None) -> str | None:
    """The formula with its static reference expressions resolved (module docstring), or None
    when it has none it can resolve; `names`: the workbook's names to one reference
    (`reference_names`), which an intersection of named ranges reads (`=Jan Sales`)."""
    tokens = tokenize(formula)
    if tokens is None:
        return None
    values = [t.value for t in tokens]
    enclosing = {}  # first significant token of a whole argument -> (call, its tokens)
    for name, opened, closed, args in calls(tokens):
        for position, arg in enumerate(args):
            kept = without_spaces(tokens, arg)
            if kept:
                enclosing[kept[0]] = (name, opened, closed, args, position, kept[-1])
    changed = False
    for start, end, areas in _expressions(tokens, own_sheet, names):
        text = _resolved(tokens, values, enclosing, start, end, areas)
        if text is not None:
            replace_call(values, start, end - 1, text)
            changed = True
    for opened, closed, text in _areas_calls(tokens, enclosing, own_sheet, names):
        replace_call(values, opened, closed, text)
        changed = True
    return "".join(values) if changed else None


def _resolved(tokens, values, enclosing, start: int, end: int, areas: list[Area]) -> str | None:
    """The text for one expression, or None to leave it (and the call around it) to the engine.
    Whole calls it settles (ROWS, COLUMNS, AREAS, INDEX's area) are written into `values`."""
    call = enclosing.get(start)
    whole = call is not None and call[5] == end - 1
    name = call[0] if whole else None
    if name == "AREAS":
        return None  # the whole call: _areas_calls
    if not areas:
        return "#NULL!"
    if len(areas) == 1:
        return areas[0].text()
    if name in _LISTS:
        return ",".join(a.text() for a in areas)
    if name in ("ROWS", "COLUMNS"):
        replace_call(values, call[1], call[2], "#REF!")  # the whole call
        return ""
    if name == "INDEX" and call[4] == 0:
        args = call[3]
        chosen = 1
        if len(args) >= 4:
            kept = without_spaces(tokens, args[3])
            if len(kept) != 1 or tokens[kept[0]].subtype != Token.NUMBER:
                return None
            chosen = float(tokens[kept[0]].value)
            if chosen != int(chosen):
                return None
            chosen = int(chosen)
            for i in args[3]:
                values[i] = ""
            values[kept[0]] = "1"
        if not 1 <= chosen <= len(areas):
            return "#REF!"
        return areas[chosen - 1].text()
    return None


def _areas_calls(tokens: list[Token], enclosing, own_sheet: str, names: dict[str, Area] | None):
    """(opened, closed, the count) of each AREAS call whose argument is references written
    out: AREAS counts areas, whatever the cells hold (IronCalc answers a cell's error)."""
    for first, (name, opened, closed, args, _, last) in enclosing.items():
        if name != "AREAS" or len(args) != 1:
            continue
        try:
            areas, end = _Expression(tokens, own_sheet, names).intersect(first)
        except _NotStatic:
            continue
        if end - 1 == last:
            yield opened, closed, str(len(areas)) if areas else "#NULL!"


def correct_reference_operators(
    model, cells: list[tuple[int, int, int]], written: dict[tuple[int, int, int], str],
) -> list[Rewrite]:
    """Rewrite the static reference expressions of `cells` (sheet index, row, col) in `model`;
    `written` holds their formulas as the file writes them: IronCalc keeps only the first
    reference of an intersection at the top of a formula (`A1:B2 B2:C3` is `@A1:B2` in its
    model), so there the file's text is read instead."""
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    names = None

    def fix(formula: str, sheet: int, row: int, col: int) -> str | None:
        nonlocal names
        as_written = _PREFIXES.sub("", written.get((sheet, row, col), "").lstrip("="))
        if as_written and _cut_short(formula, as_written):
            formula = as_written
        resolved = rewrite(formula, sheets[sheet])
        left = tokenize(resolved if resolved is not None else formula)
        if left is not None and (_intersections(left) or _unions(left)):  # maybe of named ranges
            # (`=Jan Sales`, `SUM((Prices,C2))`)
            if names is None:  # read once (IronCalc's list grows slowly with many names)
                names = reference_names({d["name"]: d["formula"] for d in model.get_defined_name_list()
                                         if d["scope"] is None})
            resolved = rewrite(formula, sheets[sheet], names) if names else resolved
        return resolved

    return rewrite_cells(model, cells, fix)


def reference_names(defined: dict[str, str]) -> dict[str, Area]:
    """{NAME: area} of the workbook-scoped names defined as one reference on a named sheet
    (`Sheet1!$A$1:$C$1`); a name to a formula, a constant or another workbook is left out."""
    found = {}
    for name, text in defined.items():
        area = operand_area(text.lstrip("="))
        if area is not None and area.sheet is not None and not name.lower().startswith("_xlnm."):
            found[name.upper()] = area
    return found


def unfixable_operators(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells with an intersection (a space between
    references) or a union (a comma between them, a name to one included) the rewrite cannot
    resolve: IronCalc 0.9.1 answers #ERROR! or, at the top of a formula, reads only what comes
    before the space (a plausible wrong value)."""
    found = []
    names = None
    unions = {name.upper(): "(" + text.strip().lstrip("=") + ")" for name, text in book.defined_names.items()
              if union_name(text)}
    for cell in book.cells:
        if cell.array_area or " " not in cell.formula and "," not in cell.formula:
            continue
        tokens = tokenize(_union_names_written(cell.formula, unions) if unions else cell.formula)
        if tokens is None or not (_intersections(tokens) or _unions(tokens)):
            continue
        if names is None:
            names = reference_names(book.defined_names)
        text = "=" + "".join(t.value for t in tokens)
        resolved = rewrite(text, cell.sheet, names)
        after = tokenize(resolved) if resolved is not None else tokens
        if after is None or _intersections(after):
            found.append((cell, (
                "an intersection of references (a space between them) that is not known before "
                "calculation (a name to a formula, a function's result, another sheet): IronCalc 0.9.1 "
                "does not calculate it"
            )))
        elif _unions(after):
            found.append((cell, (
                "a union of references (a comma between them) where the rewrite does not settle it (only "
                "AREAS, INDEX's area, ROWS, COLUMNS and the functions adding up every argument, SUM, "
                "COUNT, MAX, ..., of references written out or named): IronCalc 0.9.1 answers #ERROR!"
            )))
    return found


def _union_names_written(formula: str, unions: dict[str, str]) -> str:
    """The formula with each name to a union written as its union in parentheses."""
    tokens = tokenize(formula)
    if tokens is None:
        return formula
    return "=" + "".join(
        unions.get(t.value.lstrip("@").upper(), t.value) if t.type == Token.OPERAND and t.subtype == Token.RANGE
        else t.value for t in tokens
    )


def _unions(tokens: list[Token]) -> bool:
    """Whether a comma joins references outside any call's arguments (Excel's union operator,
    which the tokenizer reads as an infix operator there): in parentheses that open no call, or
    at the top of a name's formula. The arguments of a LAMBDA called in place
    (`LAMBDA(x,y,x+y)(A5,B5)`) are no union."""
    called: list[bool] = []  # per open parenthesis: whether it holds a call's arguments
    previous = None
    for token in tokens:
        if token.type == Token.WSPACE:
            continue
        if token.type == Token.PAREN and token.subtype == Token.OPEN:
            called.append(previous is not None and previous.type in (Token.FUNC, Token.PAREN)
                          and previous.subtype == Token.CLOSE)
        elif token.type == Token.PAREN and token.subtype == Token.CLOSE:
            if called:
                called.pop()
        elif token.type == Token.OP_IN and token.value == "," and not (called and called[-1]):
            return True
        previous = token
    return False


def union_name(definition: str) -> bool:
    """Whether a defined name's formula is or holds a union (`Sheet1!$A$2:$A$4,Sheet1!$C$2`)."""
    if "," not in definition:
        return False
    tokens = tokenize("=" + definition.strip().lstrip("="))
    return tokens is not None and _unions(tokens)


def _intersections(tokens: list[Token]) -> bool:
    """Whether a space stands between two operands (Excel's intersection operator)."""
    for i in range(1, len(tokens) - 1):
        if tokens[i].type != Token.WSPACE:
            continue
        before, after = tokens[i - 1], tokens[i + 1]
        left = before.type == Token.OPERAND and before.subtype == Token.RANGE \
            or before.type in (Token.PAREN, Token.FUNC) and before.subtype == Token.CLOSE
        right = after.type == Token.OPERAND and after.subtype == Token.RANGE \
            or after.type in (Token.PAREN, Token.FUNC) and after.subtype == Token.OPEN
        if left and right:
            return True
    return False


_PREFIXES = re.compile(r"(?i)_xl(?:fn|ws)\.")
_NOISE = re.compile(r"[@$\s]")


def _cut_short(read: str, as_written: str) -> bool:
    """Whether IronCalc's text is the file's formula cut at an intersection it did not parse:
    outside a call's parentheses it keeps what comes before the space (`=A1:A6 A6:B9*2` is
    `=@A1:A6` in its model, a plausible wrong value)."""
    seen = _NOISE.sub("", read.lstrip("=")).upper()
    whole = _NOISE.sub("", as_written).upper()
    return len(seen) < len(whole) and whole.startswith(seen)
