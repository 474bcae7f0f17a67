"""Approximate-match lookups in a formula: which range each one searches, and whether it can be
bounded to the cells that can hold values.

Excel's rule (Microsoft support, "VLOOKUP function", "HLOOKUP function", "MATCH function",
"LOOKUP function"): with range_lookup TRUE or omitted (MATCH's match_type 1 or omitted, -1 for
descending data, and LOOKUP always) the search returns the largest value less than or equal to
the lookup value (-1: the smallest greater or equal) in data sorted in that order, and cells with
nothing in them are not values it can land on: `VLOOKUP(2.5,A:B,2,TRUE)` over data in A1:B10 is
the value of row 2, as over A1:B10. IronCalc 0.9.1 binary-searches the blank tail of a
whole-column or blank-tailed range as if the blanks were values (ironcalc/IronCalc pull request
1347) and answers 0, the last row, or a wrong row. Searching the range cut just after its last
cell that can hold a value is therefore the same search in Excel's terms, and one IronCalc gets
right: that is the rewrite (shared.calc.corrections.model applies it).

This module only reads formula text (IronCalc's rendering or Excel's, with or without the
leading "="): it finds each VLOOKUP/HLOOKUP/MATCH/LOOKUP call, its mode, and its range
arguments as operand-token positions (static references or names) or as computed expressions
(OFFSET, INDIRECT, IF, ...), which cannot be bounded at load time. XLOOKUP and XMATCH are right
in IronCalc 0.9.1 over blank tails (measured) and are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from openpyxl.formula.tokenizer import Token, Tokenizer

from shared.calc.corrections.formula_tokens import TEXT_LITERAL, without_spaces
from shared.calc.refs import MAX_COLS, MAX_ROWS, CellBox, column_letters, column_number

LOOKUP_FUNCTIONS = frozenset({"VLOOKUP", "HLOOKUP", "MATCH", "LOOKUP"})
# Functions that can hand a lookup a reference (and so a blank tail); SORT, FILTER and the like
# return arrays of values, which have none.
REFERENCE_FUNCTIONS = frozenset({
    "OFFSET", "INDIRECT", "INDEX", "CHOOSE", "IF", "IFS", "SWITCH", "XLOOKUP", "LET", "IFERROR", "IFNA",
})
_CALL = re.compile(r"(?<![A-Za-z0-9_.!$\]])([A-Za-z_][A-Za-z0-9_.]*)\(")
MENTION = re.compile(rb"(?i)(?:LOOKUP|MATCH)\(")  # cheap test on raw sheet XML

_SHEET = r"(?:'(?P<quoted>(?:[^']|'')+)'|(?P<plain>[^'!\[\]:*?/\\,()\s]+))"
_CELL_SPAN = r"\$?(?P<c1>[A-Za-z]{1,3})\$?(?P<r1>\d{1,7}):\$?(?P<c2>[A-Za-z]{1,3})\$?(?P<r2>\d{1,7})"
_COL_SPAN = r"\$?(?P<cc1>[A-Za-z]{1,3}):\$?(?P<cc2>[A-Za-z]{1,3})"
_ROW_SPAN = r"\$?(?P<rr1>\d{1,7}):\$?(?P<rr2>\d{1,7})"
_RANGE_RE = re.compile(rf"(?:{_SHEET}!)?(?:{_CELL_SPAN}|{_COL_SPAN}|{_ROW_SPAN})")
_NAME_RE = re.compile(rf"(?:{_SHEET}!)?(?P<name>[A-Za-z_\\][A-Za-z0-9_.\\]*)")
_SINGLE_CELL = re.compile(r"\$?[A-Za-z]{1,3}\$?\d{1,7}")


@dataclass(frozen=True)
class Box(CellBox):
    """A rectangular reference as a formula writes it: sheet name as written (None: the
    formula's own sheet), 1-based; rows and cols as refs.CellBox has them."""

    sheet: str | None

    def text(self) -> str:
        """Absolute A1 text, sheet-qualified when the box names its sheet."""
        return self.prefix() + f"${column_letters(self.left)}${self.top}:${column_letters(self.right)}${self.bottom}"

    def prefix(self) -> str:
        """The sheet as a reference starts with it (`Data!`, `'My sheet'!`), "" for the own sheet."""
        if self.sheet is None:
            return ""
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.sheet) and not _SINGLE_CELL.fullmatch(self.sheet):
            return f"{self.sheet}!"
        return "'" + self.sheet.replace("'", "''") + "'!"


def parse_range(text: str) -> Box | None:
    """`A1:B10`, `$A:$B`, `1:2`, `Sheet!A:B`, `'My sheet'!$A$1:$A$9` -> Box; None otherwise
    (single cells, names, other workbooks)."""
    match = _RANGE_RE.fullmatch(text.strip())
    if match is None:
        return None
    quoted, plain = match.group("quoted"), match.group("plain")
    sheet = quoted.replace("''", "'") if quoted is not None else plain
    if match.group("c1"):
        r1, r2 = int(match.group("r1")), int(match.group("r2"))
        c1, c2 = column_number(match.group("c1")), column_number(match.group("c2"))
    elif match.group("cc1"):
        r1, r2 = 1, MAX_ROWS
        c1, c2 = column_number(match.group("cc1")), column_number(match.group("cc2"))
    else:
        r1, r2 = int(match.group("rr1")), int(match.group("rr2"))
        c1, c2 = 1, MAX_COLS
    box = Box(sheet, min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2))
    if box.bottom > MAX_ROWS or box.right > MAX_COLS or box.top < 1 or box.left < 1:
        return None
    return box


def parse_name(text: str) -> tuple[str | None, str] | None:
    """(sheet or None, name) when an operand is a defined name rather than a reference."""
    match = _NAME_RE.fullmatch(text.strip())
    if match is None or _SINGLE_CELL.fullmatch(match.group("name")):
        return None
    if match.group("name").upper() in ("TRUE", "FALSE"):
        return None
    quoted, plain = match.group("quoted"), match.group("plain")
    sheet = quoted.replace("''", "'") if quoted is not None else plain
    return sheet, match.group("name")


@dataclass
class RangeArg:
    """One range argument of a lookup: the operand token's position (None when the argument is
    an expression) and its text."""

    token: int | None
    text: str
    literal: bool = False  # a number, text or boolean: an error in Excel too, nothing to bound


@dataclass
class LookupSite:
    """One approximate-capable lookup call in a formula.

    `searched` is the range whose first column (rows axis) or first row (cols axis) is searched;
    `follows` is LOOKUP's result vector, cut to the same length as the searched vector. `axis` is
    None when the orientation depends on the size (MATCH, LOOKUP): decided once the box is known.
    """

    function: str
    mode: str  # "approximate" | "exact" | "unknown" (an expression decides at run time)
    searched: RangeArg
    follows: RangeArg | None = None
    array_form: bool = False  # LOOKUP(value, array): orientation must survive the cut
    open_token: int = 0  # the call's "NAME(" and ")" tokens
    close_token: int = 0
    args: list[list[int]] = field(default_factory=list)  # each argument's token positions
    enclosing: tuple[str, ...] = ()  # the calls it sits in, innermost first ("" for parentheses)

    @property
    def needs_bounds(self) -> bool:
        return self.mode != "exact"


@dataclass
class FormulaLookups:
    """The tokens of a formula and its lookup calls; `tokens` is None when it did not tokenize."""

    tokens: list[str] | None
    kinds: list[str] = field(default_factory=list)
    sites: list[LookupSite] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.tokens or [])


def _mode(function: str, args: list[list[int]], tokens: list[Token]) -> str:
    position = {"VLOOKUP": 3, "HLOOKUP": 3, "MATCH": 2}.get(function)
    if position is None:  # LOOKUP: always approximate
        return "approximate"
    if len(args) <= position:
        return "approximate"  # omitted: TRUE / 1
    text = "".join(tokens[i].value for i in args[position]).strip().upper()
    if text in ("", "FALSE", "0", "+0", "-0"):
        return "exact"  # an empty argument is 0 in Excel
    if text == "TRUE":
        return "approximate"
    try:
        return "exact" if float(text.lstrip("+")) == 0 else "approximate"
    except ValueError:
        return "unknown"


def _range_arg(arg: list[int], tokens: list[Token]) -> RangeArg:
    meaningful = without_spaces(tokens, arg)
    text = "".join(t.value for t in tokens[min(arg):max(arg) + 1]).strip() if arg else ""
    if meaningful and tokens[meaningful[0]].type == Token.ARRAY:
        return RangeArg(None, text, literal=True)  # an array constant {1,2;3,4}
    if len(meaningful) == 1:
        token = tokens[meaningful[0]]
        if token.type == Token.OPERAND and token.subtype == Token.RANGE:
            return RangeArg(meaningful[0], text)
        if token.type == Token.OPERAND:
            return RangeArg(None, text, literal=True)
    return RangeArg(None, text)


@lru_cache(maxsize=16384)
def find_lookups(formula: str) -> FormulaLookups:
    """The lookup calls of a formula whose range could hold a blank tail."""
    body = formula[1:] if formula.startswith("=") else formula
    if not MENTION.search(body.encode("utf-8", "replace")):
        return FormulaLookups(None)
    try:
        tokens = Tokenizer("=" + body).items
    except Exception:  # noqa: BLE001 - an unparsable formula is left as it is
        return FormulaLookups(None)
    if "".join(t.value for t in tokens) != body:
        return FormulaLookups(None)
    found = FormulaLookups([t.value for t in tokens], [f"{t.type}:{t.subtype}" for t in tokens])
    stack: list[tuple[str, list[list[int]], int]] = []
    for index, token in enumerate(tokens):
        if stack and not (token.subtype == Token.CLOSE and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY)):
            if not (token.type == Token.SEP and token.subtype == Token.ARG):
                stack[-1][1][-1].append(index)
        if token.subtype == Token.OPEN and token.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            name = token.value[:-1].upper() if token.type == Token.FUNC else ""
            name = re.sub(r"^(?:_XLFN\.|_XLWS\.)+", "", name)
            stack.append((name, [[]], index))
        elif token.type == Token.SEP and token.subtype == Token.ARG and stack:
            stack[-1][1].append([])
        elif token.subtype == Token.CLOSE and stack:
            name, args, opened = stack.pop()
            if stack:  # the call's tokens belong to the enclosing argument too
                stack[-1][1][-1].append(index)
            if name in LOOKUP_FUNCTIONS and len(args) >= 2:
                mode = _mode(name, args, tokens)
                site = LookupSite(name, mode, _range_arg(args[1], tokens), open_token=opened, close_token=index,
                                  args=args, enclosing=tuple(entry[0] for entry in reversed(stack)))
                if name == "LOOKUP":
                    if len(args) >= 3:
                        site.follows = _range_arg(args[2], tokens)
                    else:
                        site.array_form = True
                found.sites.append(site)
    return found


def is_computed(arg: RangeArg) -> bool:
    """A range given by an expression that can return a reference (OFFSET, INDIRECT, IF,
    A1:INDEX(...), ...)."""
    return arg.token is None and not arg.literal and references_by_function(arg.text)


def references_by_function(text: str) -> bool:
    """Whether an expression calls a function that can return a reference."""
    bare = TEXT_LITERAL.sub('""', text)
    return any(
        re.sub(r"^(?:_xlfn\.|_xlws\.)+", "", name, flags=re.IGNORECASE).upper() in REFERENCE_FUNCTIONS
        for name in _CALL.findall(bare)
    )
