"""Formula text as tokens for the correction layer's rewrites: tokenizing a formula as
IronCalc renders it, and the function calls in it with their arguments."""

from __future__ import annotations

import re

from openpyxl.formula.tokenizer import Token, Tokenizer

# A text literal in a formula (`"say ""hi"""`): the one pattern the modules blank or skip them with
TEXT_LITERAL = re.compile(r'"(?:[^"]|"")*"')


def tokenize(formula: str) -> list[Token] | None:
    """The tokens of a formula (with or without "="); None when it does not tokenize back to
    the same text."""
    body = formula.removeprefix("=")
    try:
        tokens = Tokenizer("=" + body).items
    except Exception:  # noqa: BLE001 - an unparsable formula is left as it is
        return None
    return tokens if "".join(t.value for t in tokens) == body else None


def neighbour(tokens: list[Token], index: int, step: int) -> Token | None:
    """The nearest token before (`step` -1) or after (1) the one at `index` that is not white
    space, or None."""
    index += step
    while 0 <= index < len(tokens) and tokens[index].type == Token.WSPACE:
        index += step
    return tokens[index] if 0 <= index < len(tokens) else None


def function_name(token: Token) -> str:
    """A function token's name, upper case, without `@` and the `_xlfn.`/`_xlws.` prefixes."""
    return re.sub(r"^@?(?:_xlfn\.|_xlws\.)*", "", token.value[:-1], flags=re.IGNORECASE).upper()


def calls(tokens: list[Token]) -> list[tuple[str, int, int, list[list[int]]]]:
    """(function, open token, close token, argument token positions: an empty list for an
    empty argument, none for `F()`) of every call, inner calls first."""
    calls, stack = [], []
    for index, token in enumerate(tokens):
        bracket = token.type in (Token.FUNC, Token.PAREN, Token.ARRAY)
        if bracket and token.subtype == Token.CLOSE and stack:
            name, opened, args = stack.pop()
            for frame in stack:  # the whole call belongs to every enclosing argument
                frame[2][-1].append(index)
            if name:
                calls.append((name, opened, index, [] if args == [[]] else args))
            continue
        if token.type == Token.SEP and token.subtype == Token.ARG and stack:
            stack[-1][2].append([])
            for frame in stack[:-1]:
                frame[2][-1].append(index)
            continue
        for frame in stack:
            frame[2][-1].append(index)
        if bracket and token.subtype == Token.OPEN:
            stack.append((function_name(token) if token.type == Token.FUNC else "", index, [[]]))
    return calls


def rewrite_calls(formula: str, handle) -> str | None:
    """The formula with `handle(tokens, values, name, opened, closed, args)` applied to each
    call, inner calls first (`values`: the tokens' texts, which the handler changes; it
    returns whether it changed any), or None when no handler changed anything."""
    tokens = tokenize(formula)
    if tokens is None:
        return None
    values = [t.value for t in tokens]
    changed = False
    for name, opened, closed, args in calls(tokens):
        changed |= bool(handle(tokens, values, name, opened, closed, args))
    return "".join(values) if changed else None


# one cell, maybe on another sheet (`B1`, `$B$1`, `'My sheet'!B1`), as IronCalc renders it
SINGLE_CELL = re.compile(r"(?:(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!)?\$?[A-Za-z]{1,3}\$?\d{1,7}")


# one cell or a range of cells, maybe on another sheet; `sheet` with its "!", the corners apart
PLAIN_REFERENCE = re.compile(
    r"(?P<sheet>(?:'(?:[^']|'')+'|[^'!\[\]:*?/\\,()\s]+)!)?"
    r"(?P<c1>\$?[A-Za-z]{1,3})(?P<r1>\$?\d{1,7})(?::(?P<c2>\$?[A-Za-z]{1,3})(?P<r2>\$?\d{1,7}))?"
)


def plain_reference(tokens: list[Token], positions: list[int]) -> tuple[int, re.Match | None] | None:
    """(its token, PLAIN_REFERENCE's match or None for a name) for an argument that is one
    reference token (IronCalc's `@` aside), None for anything else."""
    kept = without_spaces(tokens, positions)
    if len(kept) != 1 or tokens[kept[0]].type != Token.OPERAND or tokens[kept[0]].subtype != Token.RANGE:
        return None
    return kept[0], PLAIN_REFERENCE.fullmatch(tokens[kept[0]].value.lstrip("@"))


def one_cell_range(match: re.Match) -> str | None:
    """A PLAIN_REFERENCE match of one cell written as the range of that cell (`Sheet1!$A$1` ->
    `Sheet1!$A$1:$A$1`, which IronCalc reads where it refuses one cell for a range), None for a
    range."""
    if match["c2"] is not None:
        return None
    cell = match["c1"] + match["r1"]
    return f"{match['sheet'] or ''}{cell}:{cell}"


def is_single_cell(token: Token) -> bool:
    """Whether a token is a reference to one cell (IronCalc's `@` aside)."""
    return token.type == Token.OPERAND and token.subtype == Token.RANGE \
        and SINGLE_CELL.fullmatch(token.value.lstrip("@")) is not None


def without_spaces(tokens: list[Token], positions: list[int]) -> list[int]:
    """The positions that are not white space."""
    return [i for i in positions if tokens[i].type != Token.WSPACE]


def text_and_cell(tokens: list[Token], positions: list[int]) -> tuple[int, str, str | None] | None:
    """(the text's token, the text, None) for an argument that is a typed text alone (`"<>x"`),
    (the text's token, the text, the cell) for a typed text joined to one cell (`"<>"&B1`), None
    otherwise."""
    kept = without_spaces(tokens, positions)
    if not kept or tokens[kept[0]].type != Token.OPERAND or tokens[kept[0]].subtype != Token.TEXT:
        return None
    text = tokens[kept[0]].value[1:-1].replace('""', '"')
    if len(kept) == 1:
        return kept[0], text, None
    if len(kept) == 3 and tokens[kept[1]].value == "&" and is_single_cell(tokens[kept[2]]):
        return kept[0], text, tokens[kept[2]].value.lstrip("@")
    return None


def written_arguments(formula: str, start: int) -> list[str]:
    """The top-level arguments, as written, of the call whose "(" ends at formula[start - 1]: a
    scan of the text without tokenizing (for a quick look at the formulas of a large workbook)."""
    args, depth, quoted, begin = [], 0, False, start
    for index in range(start, len(formula)):
        ch = formula[index]
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                args.append(formula[begin:index])
                return args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(formula[begin:index])
            begin = index + 1
    return args


def write_into_empty_argument(tokens: list[Token], values: list[str], opened: int, args: list[list[int]],
                              position: int, text: str) -> None:
    """Put `text` into the empty argument at `position` of the call opened at token `opened`
    (after its spaces, or after the comma that opens it)."""
    if args[position]:
        values[args[position][-1]] += text
        return
    if position == 0:
        values[opened] += text
        return
    depth, commas = 0, 0
    for index in range(opened + 1, len(tokens)):
        token = tokens[index]
        if token.type in (Token.FUNC, Token.PAREN, Token.ARRAY) and token.subtype == Token.OPEN:
            depth += 1
        elif token.type in (Token.FUNC, Token.PAREN, Token.ARRAY) and token.subtype == Token.CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and token.type == Token.SEP and token.subtype == Token.ARG:
            commas += 1
            if commas == position:
                values[index] += text
                return
    raise ValueError("no such argument")


def one_cell(tokens: list[Token], positions: list[int]) -> bool:
    """Whether an argument is one cell, maybe behind prefix operators and in parentheses
    (`B1`, `+Sheet2!B1`, `(B1)`): no range, name or call."""
    kept = without_spaces(tokens, positions)
    operands = [i for i in kept if tokens[i].type == Token.OPERAND]
    if len(operands) != 1 or not is_single_cell(tokens[operands[0]]):
        return False
    return all(tokens[i].type in (Token.OP_PRE, Token.PAREN) for i in kept if i != operands[0])


def pure(tokens: list[Token], positions: list[int], literals=frozenset({Token.NUMBER})) -> bool:
    """Whether an argument is literals of the given subtypes and single cells joined by
    operators (no function, range or name): one value, cheap to repeat, never an array."""
    kept = without_spaces(tokens, positions)
    if not kept:
        return False
    for i in kept:
        token = tokens[i]
        if token.type == Token.OPERAND:
            if token.subtype in literals or is_single_cell(token):
                continue
            return False
        if token.type not in (Token.OP_IN, Token.OP_PRE, Token.PAREN):
            return False
    return True


def replace_call(values: list[str], opened: int, closed: int, text: str) -> None:
    """Put `text` in place of the whole call from token `opened` to token `closed`."""
    values[opened] = text
    for i in range(opened + 1, closed + 1):
        values[i] = ""


# Functions all of whose arguments are single values, and the single-value arguments (0-based)
# of functions that take ranges in others: a range there is intersected in a formula that is
# not an array formula (Microsoft: "Implicit intersection operator: @"); any other argument
# keeps the range it is given.
SCALAR_FUNCTIONS = frozenset({
    "IF", "IFERROR", "IFNA", "NOT", "ROUND", "ROUNDUP", "ROUNDDOWN", "ABS", "INT", "TRUNC", "MOD",
    "POWER", "SQRT", "EXP", "LN", "LOG", "LOG10", "SIGN", "CEILING", "FLOOR", "TEXT", "LEFT",
    "RIGHT", "MID", "LEN", "UPPER", "LOWER", "TRIM", "VALUE", "DATE", "YEAR", "MONTH", "DAY",
    "EDATE", "EOMONTH", "ISBLANK", "ISNUMBER", "ISTEXT", "ISERROR", "ISERR", "ISNA",
})
SCALAR_ARGUMENTS = {
    "VLOOKUP": {0, 2, 3}, "HLOOKUP": {0, 2, 3}, "MATCH": {0, 2}, "LOOKUP": {0},
    "INDEX": {1, 2, 3}, "SUMIF": {1}, "COUNTIF": {1}, "AVERAGEIF": {1}, "CHOOSE": {0},
}
# Functions that take references (Excel's reference class, "R" in the file format's function
# table) in the arguments given (None: every one) and read an expression there as one value: in
# a formula that is not an array formula, a range joined to an operator in such an argument is
# intersected (`=SUM(A1:A4*2)` in row 3 is A3*2, and #VALUE! in a row outside 1-4: "Implicit
# intersection operator: @" shows it as `=SUM(@A1:A4*2)`). Functions that take arrays there
# (SUMPRODUCT, LOOKUP's vectors, INDEX's array, MODE, CORREL, MMULT ...) calculate the
# expression element by element instead, and are not listed.
VALUE_AGGREGATES: dict[str, frozenset[int] | None] = {
    **dict.fromkeys((
        "SUM", "AVERAGE", "MIN", "MAX", "COUNT", "COUNTA", "PRODUCT", "STDEV", "STDEVP", "VAR", "VARP",
        "MEDIAN", "AVEDEV", "DEVSQ", "GEOMEAN", "HARMEAN", "SUMSQ", "KURT", "SKEW", "AVERAGEA", "MAXA",
        "MINA", "STDEVA", "STDEVPA", "VARA", "VARPA", "STDEV.S", "STDEV.P", "VAR.S", "VAR.P", "AND", "OR",
    )),
    **dict.fromkeys(("LARGE", "SMALL", "PERCENTILE", "QUARTILE", "PERCENTRANK", "TRIMMEAN"), frozenset({0})),
    "MATCH": frozenset({1}),
    "NPV": frozenset(range(1, 255)),
}


class Context:
    """Where a token sits: the calls and parentheses around it, innermost last, each as
    [function name (upper case, no _xlfn. prefix; "" for parentheses, "{" for an array
    constant), index of the argument]."""

    def __init__(self) -> None:
        self.frames: list[list] = []

    def step(self, token: Token) -> bool:
        """Follow one token; True when it opened, closed or separated (no operand)."""
        if token.type in (Token.FUNC, Token.PAREN, Token.ARRAY) and token.subtype == Token.OPEN:
            kind = function_name(token) if token.type == Token.FUNC else ("" if token.type == Token.PAREN else "{")
            self.frames.append([kind, 0])
            return True
        if token.type in (Token.FUNC, Token.PAREN, Token.ARRAY) and token.subtype == Token.CLOSE and self.frames:
            self.frames.pop()
            return True
        if token.type == Token.SEP and token.subtype == Token.ARG and self.frames:
            self.frames[-1][1] += 1
            return True
        return False

    @property
    def function(self) -> str | None:
        """The innermost call's function (None at the top level or in parentheses)."""
        return self.frames[-1][0] or None if self.frames else None

    def expects_one_value(self) -> bool:
        """Whether Excel reads a range here as the one cell in the formula's row or column."""
        return all(
            name == "" or name in SCALAR_FUNCTIONS or argument in SCALAR_ARGUMENTS.get(name, ())
            for name, argument in self.frames
        )

    def reads_one_value_in_aggregate(self) -> bool:
        """Whether an expression here is read as one value inside a function that takes
        references (VALUE_AGGREGATES), with no function taking arrays around it: a range joined
        to an operator here is intersected (outside an array formula)."""
        inside = False
        for name, argument in self.frames:
            if name in VALUE_AGGREGATES and (VALUE_AGGREGATES[name] is None or argument in VALUE_AGGREGATES[name]):
                inside = True
            elif not (name == "" or name in SCALAR_FUNCTIONS or argument in SCALAR_ARGUMENTS.get(name, ())):
                return False
        return inside

