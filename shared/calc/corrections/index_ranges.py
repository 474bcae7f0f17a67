"""Ranges whose ends are INDEX calls (`INDEX(B:B,2):INDEX(B:B,COUNTA(B:B))`,
`$B$2:INDEX(B:B,n)`) or XLOOKUP calls, and the cell INDEX or XLOOKUP refers to where a function
reads it as a reference (`ROW(INDEX(B:B,n))`, REFERENCE_READERS), rewritten at model load as the
OFFSET that is the same range.

Excel's rules (Microsoft support, "INDEX function", reference form; "Calculation operators and
precedence", the range operator): INDEX(reference, row_num, [column_num]) returns a reference
to the cell at that row and column of the reference (a one-column or one-row reference takes
the single number as the position along it); 0 stands for the whole column (row); a number
past the reference's end is #REF!, a negative one #VALUE!; numbers are truncated. `X:Y` is the
smallest range holding both X and Y. IronCalc 0.9.1 answers #VALUE! for every range operator
with an INDEX on either side (measured: `SUM(INDEX(B:B,2):INDEX(B:B,5))`,
`SUM(B2:INDEX(B:B,5))`), a pattern Excel users write for ranges that grow with their data, often
inside a defined name (inlined first by names.py).

The rewrite: each end gives a first and last row and column (a static cell its own; an INDEX
over a static reference `start + INT(n) - 1`, or the reference's whole extent for 0), and the
range is `OFFSET(Sheet!$A$1, top-1, left-1, bottom-top+1, right-left+1)` with top = MIN of the
ends' first rows, bottom = MAX of their last ones, and so on, guarded (in OFFSET's rows, so the
result stays a reference) by #VALUE! for a negative position and #REF! for one past the end. XLOOKUP returns a reference too (Microsoft's
XLOOKUP page, example 6: `SUM(XLOOKUP(B3,B6:B10,E6:E10):XLOOKUP(C3,B6:B10,E6:E10))` sums the
values from one match to the other); an end `XLOOKUP(v,lookup,return,,mode,search)` over a
return range of one row or column is first written as the INDEX it stands for,
`INDEX(return,XMATCH(v,lookup,mode,search))` (not found: #N/A, as XLOOKUP). INDEX over a defined name to a range
(`INDEX(Prices,2):INDEX(Prices,5)`) reads as over that range (the cell's sheet's own name
first, then the workbook's). Left alone: INDEX over a computed reference, over several areas,
a two-dimensional reference with one number (a whole row), ends on different sheets, array
formulas. Such a range over a computed reference (`INDEX(OFFSET(...),2):...`, a name to an
OFFSET) or in an array formula stays IronCalc's #VALUE!, so the cell is flagged at upload
(`unfixable_index_ranges`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import (
    calls,
    function_name,
    tokenize,
    without_spaces,
)
from shared.calc.corrections.lookups import Box, parse_range
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.corrections.names import book_definitions
from shared.calc.refs import column_number

# The functions that read a reference itself (its place, not its value), by the argument: given
# the one cell INDEX or XLOOKUP refers to, IronCalc 0.9.1 answers #VALUE! (ISREF FALSE), where
# Excel reads that cell (measured: ROW(INDEX(B1:B5,3)) 3, CELL("address",INDEX(B1:B5,3)) $B$3,
# SUM(OFFSET(INDEX(B1:B5,2),0,0,2)), ISREF(XLOOKUP(...)) TRUE)
REFERENCE_READERS = {"ROW": 0, "COLUMN": 0, "CELL": 1, "OFFSET": 0, "ISREF": 0}
_READERS = "|".join(REFERENCE_READERS)
MENTION = re.compile(
    rb"(?i)(?:INDEX|XLOOKUP)\([^<]*\)\s*:|:\s*(?:_XLFN\.)?(?:INDEX|XLOOKUP)\("
    rb"|(?:" + _READERS.encode() + rb")\([^()<]*?(?:INDEX|XLOOKUP)\("
)
KEYWORDS = (b"INDEX(", b"XLOOKUP(")
_HINT = re.compile(
    r"(?i)\)\s*:|:\s*(?:_xlfn\.)?(?:INDEX|XLOOKUP)\(|(?:" + _READERS + r")\([^()]*?(?:INDEX|XLOOKUP)\("
)


def _opening(name: str) -> re.Pattern:
    """A function token of `name` (`INDEX(`, `@_xlfn.XLOOKUP(`), with what the tokenizer joins
    before it when a range ends there (`B2:INDEX(`: group `pre`, the cell in `cell`)."""
    return re.compile(r"(?i)^(?P<pre>(?P<cell>.*?)\s*:\s*)?@?(?:_xlfn\.)?" + name + r"\($")


_OPEN = _opening("INDEX")
_LOOKUP_OPEN = _opening("XLOOKUP")
_CELL = re.compile(r"(?:(?P<sheet>'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!)?\$?(?P<col>[A-Za-z]{1,3})\$?(?P<row>\d{1,7})")


class _Skip(Exception):
    """An end this rewrite does not express."""


class _Error(Exception):
    """An end that is an error whatever the data: a literal position past the reference's end
    (#REF!) or negative (#VALUE!)."""


def _sheet(text: str | None) -> str | None:
    return None if text is None else text.strip("'").replace("''", "'").lower()


def _span(expr: str, start: int, end: int, guards: list) -> tuple[str, str]:
    """(first, last) position of INDEX's `expr` along [start, end], as formula text."""
    expr = expr.strip()
    if not expr:
        raise _Skip
    try:
        number = int(float(expr))
    except ValueError:
        at = f"INT({expr})"
        guards.append((f"{at}<0", f"{at}>{end - start + 1}"))
        return f"IF({at}=0,{start},{start - 1}+{at})", f"IF({at}=0,{end},{start - 1}+{at})"
    if number < 0 or number > end - start + 1:
        raise _Error("#VALUE!" if number < 0 else "#REF!")
    return (str(start), str(end)) if number == 0 else (str(start + number - 1),) * 2


def _index_end(tokens: list[Token], args: list[list[int]], guards: list,
               names: Callable[[str], str | None]) -> tuple[str | None, tuple]:
    """(sheet of the reference, ((first row, last row), (first col, last col))) of one INDEX."""
    if len(args) not in (2, 3) or len(args[0]) != 1:
        raise _Skip
    ref = tokens[args[0][0]]
    if ref.type != Token.OPERAND or ref.subtype != Token.RANGE:
        raise _Skip
    text = ref.value.lstrip("@")
    box = parse_range(text)
    if box is None:  # a name to a range on one sheet (`INDEX(Data,2)`) reads as the range
        target = names(text)
        box = parse_range(target) if target is not None else None
    if box is None:
        raise _Skip
    text = ["".join(tokens[i].value for i in arg) for arg in args[1:]]
    if len(args) == 3:
        rows, cols = _span(text[0], box.top, box.bottom, guards), _span(text[1], box.left, box.right, guards)
    elif box.cols == 1:
        rows, cols = _span(text[0], box.top, box.bottom, guards), (str(box.left),) * 2
    elif box.rows == 1:
        rows, cols = (str(box.top),) * 2, _span(text[0], box.left, box.right, guards)
    else:
        raise _Skip
    return box.sheet, (rows, cols)


def _cell_end(text: str) -> tuple[str | None, tuple]:
    match = _CELL.fullmatch(text.strip().lstrip("@"))
    if match is None:
        raise _Skip
    row, col = match.group("row"), str(column_number(match.group("col")))
    return match.group("sheet"), ((row, row), (col, col))


def _bounds(first: str, second: str, pick: str) -> str:
    if first.isdigit() and second.isdigit():
        return str(min(int(first), int(second)) if pick == "MIN" else max(int(first), int(second)))
    return first if first == second else f"{pick}({first},{second})"


def _offset(sheet: str | None, ends: list[tuple], guards: list) -> str:
    (r1, c1), (r2, c2) = ends
    top, bottom = _bounds(r1[0], r2[0], "MIN"), _bounds(r1[1], r2[1], "MAX")
    left, right = _bounds(c1[0], c2[0], "MIN"), _bounds(c1[1], c2[1], "MAX")
    anchor = Box(sheet, 1, 1, 1, 1).text().split(":")[0]
    size = lambda low, high: str(int(high) - int(low) + 1) if low.isdigit() and high.isdigit() else f"{high}-{low}+1"
    start = lambda low: str(int(low) - 1) if low.isdigit() else f"{low}-1"
    rows = start(top)
    if guards:  # inside OFFSET, which stays a reference (ROW(IF(...,OFFSET(...))) is #VALUE!)
        negative = ",".join(g[0] for g in guards)
        past = ",".join(g[1] for g in guards)
        rows = f"IF(OR({negative}),#VALUE!,IF(OR({past}),#REF!,{rows}))"
    return f"OFFSET({anchor},{rows},{start(left)},{size(top, bottom)},{size(left, right)})"


def _no_names(_: str) -> None:
    return None


def rewrite_formula(formula: str, names: Callable[[str], str | None] = _no_names) -> str | None:
    """The formula with its first INDEX-ended range as an OFFSET, or None; `names` gives the
    range a defined name stands for (None for a name to anything else)."""
    if not _HINT.search(formula):
        return None
    tokens = tokenize(formula)
    if tokens is None:
        return None
    found = calls(tokens)
    sites = _read_as_references(tokens, found)
    as_index = _lookups_as_index(tokens, sites, found)
    if as_index is not None:
        return as_index
    for _, opened, closed, args in found:
        head = _OPEN.match(tokens[opened].value)
        if head is None:
            continue
        after = tokens[closed + 1] if closed + 1 < len(tokens) else None
        if opened in sites:  # `ROW(INDEX(...))`: the range of INDEX alone
            sides, start, stop = [("index", args), ("index", args)], opened, closed
        elif head.group("pre"):  # `X:INDEX(...)`, X a cell written before it
            sides, start, stop = [("cell", head.group("cell")), ("index", args)], opened, closed
        elif after is not None and after.value.startswith(":"):
            if after.type == Token.FUNC and _OPEN.match(after.value):
                inner = next((c for c in found if c[1] == closed + 1), None)
                if inner is None:
                    continue
                sides, start, stop = [("index", args), ("index", inner[3])], opened, inner[2]
            elif after.type == Token.OPERAND and after.subtype == Token.RANGE:
                cell, _, rest = after.value[1:].partition(":")
                if rest:
                    continue
                sides, start, stop = [("index", args), ("cell", cell)], opened, closed + 1
            else:
                continue
        else:
            continue
        guards: list = []
        try:
            first, second = (
                _cell_end(what) if kind == "cell" else _index_end(tokens, what, guards, names) for kind, what in sides
            )
            if first[0] is not None and second[0] is not None and _sheet(first[0]) != _sheet(second[0]):
                continue
            text = _offset(first[0] if first[0] is not None else second[0], [first[1], second[1]], guards)
        except _Skip:
            continue
        except _Error as error:
            text = str(error)
        values = [t.value for t in tokens]
        lead = "@" if tokens[start].value.startswith("@") else ""
        return "".join(values[:start]) + lead + text + "".join(values[stop + 1:])
    return None


def _read_as_references(tokens: list[Token], found: list) -> set[int]:
    """The open tokens of the INDEX and XLOOKUP calls that are the whole reference argument of a
    function in REFERENCE_READERS (`found`: the formula's calls)."""
    closing = {opened: closed for _, opened, closed, _ in found}
    sites = set()
    for name, _, _, args in found:
        position = REFERENCE_READERS.get(name)
        kept = without_spaces(tokens, args[position]) if position is not None and position < len(args) else []
        if kept and closing.get(kept[0]) == kept[-1] and function_name(tokens[kept[0]]) in ("INDEX", "XLOOKUP"):
            sites.add(kept[0])
    return sites


def _ends_reference(tokens: list[Token], head: re.Match, opened: int, closed: int, sites: set[int]) -> bool:
    """Whether the call at `opened` gives a reference that is read as one: the end of a range
    (`X:INDEX(...)`, `INDEX(...):...`) or a site of _read_as_references."""
    after = tokens[closed + 1] if closed + 1 < len(tokens) else None
    return bool(head.group("pre")) or after is not None and after.value.startswith(":") or opened in sites


def _lookups_as_index(tokens: list[Token], sites: set[int], found: list) -> str | None:
    """The formula with each XLOOKUP read as a reference (_ends_reference) written as the INDEX
    it stands for, `INDEX(return,XMATCH(value,lookup[,match_mode][,search_mode]))`, or None when
    none is: an XLOOKUP whose return array is one row or column of cells and whose if_not_found
    is left out (its value is no reference)."""
    values, changed = [t.value for t in tokens], False
    for _, opened, closed, args in found:
        head = _LOOKUP_OPEN.match(tokens[opened].value)
        if head is None or not _ends_reference(tokens, head, opened, closed, sites):
            continue
        if not 3 <= len(args) <= 6 or len(args) > 3 and without_spaces(tokens, args[3]):
            continue
        returned = without_spaces(tokens, args[2])
        box = parse_range(tokens[returned[0]].value.lstrip("@")) if len(returned) == 1 else None
        if box is None or (box.rows != 1 and box.cols != 1) \
                or any(values[i] != tokens[i].value for i in range(opened, closed + 1)):
            continue
        texts = ["".join(values[i] for i in arg).strip() for arg in args]
        values[opened] = f"{head.group('pre') or ''}INDEX({texts[2]},XMATCH({','.join(texts[:2] + texts[4:])})"
        for i in range(opened + 1, closed):
            values[i] = ""
        changed = True
    return "".join(values) if changed else None


def correct_index_ranges(model, cells: list[tuple[int, int, int]],
                         names: dict[tuple[str, int | None], str] | None = None) -> list[Rewrite]:
    """Rewrite, in `model`, the INDEX-ended ranges of `cells` (array formulas left out by the
    caller); `names` are the defined names as written ({(name in lower case, sheet index or
    None): formula}). Returns what changed."""

    def rewrite(formula: str, sheet: int, row: int, col: int) -> str | None:
        text = _rewritten(formula.lstrip("="), _resolver(names or {}, sheet))
        return None if text == formula.lstrip("=") else text

    return rewrite_cells(model, cells, rewrite)


def _rewritten(text: str, names: Callable[[str], str | None]) -> str:
    for _ in range(8):  # one range per pass; a formula rarely has more
        again = rewrite_formula(text, names)
        if again is None:
            break
        text = again
    return text


def _resolver(names: dict[tuple[str, int | None], str], sheet: int | None) -> Callable[[str], str | None]:
    """The range a name stands for on `sheet` (its own name first, then the workbook's)."""

    def resolve(name: str) -> str | None:
        key = name.lower()
        target = names.get((key, sheet), names.get((key, None)))
        target = None if target is None else target.strip().lstrip("=")
        return target if target is not None and parse_range(target) is not None else None

    return resolve


UNREAD_REASON = (
    "a range ended by INDEX over a calculated reference or a name to one, or by XLOOKUP with an "
    "if_not_found ({end}): IronCalc 0.9.1 answers #VALUE! for it and the rewrite cannot express it"
)

ARRAY_REASON = (
    "a range ended by INDEX in an array formula ({end}): IronCalc 0.9.1 answers #VALUE! for it, "
    "and array formulas are not rewritten"
)


def unfixable_index_ranges(book) -> list[tuple[object, str]]:
    """[(formula cell, reason)] of an ExcelBook's cells holding a range ended by INDEX that the
    rewrite leaves (`INDEX(OFFSET(A1,0,0,n),2):INDEX(OFFSET(A1,0,0,n),5)`, a name to OFFSET),
    array formulas included: IronCalc answers #VALUE! for every such range."""
    names = book_definitions(book)
    found = []
    for cell in book.cells:
        if cell.array_area or not _HINT.search(cell.formula):
            continue
        text = cell.formula.lstrip("=")
        if cell.array_formula:  # not rewritten (the caller of correct_index_ranges)
            end = _index_range_left(text)
            if end is not None:
                found.append((cell, ARRAY_REASON.format(end=end)))
            continue
        end = _index_range_left(_rewritten(text, _resolver(names, None)))
        if end is not None:
            found.append((cell, UNREAD_REASON.format(end=end)))
    return found


def _index_range_left(formula: str) -> str | None:
    """The first INDEX call joined to a range operator in `formula` (its text), or None."""
    tokens = tokenize(formula)
    if tokens is None:
        return None
    found = calls(tokens)
    sites = _read_as_references(tokens, found)
    for _, opened, closed, _ in found:
        head = _OPEN.match(tokens[opened].value) or _LOOKUP_OPEN.match(tokens[opened].value)
        if head is not None and _ends_reference(tokens, head, opened, closed, sites):
            return "".join(t.value for t in tokens[opened:closed + 1]).lstrip("@")
    return None
