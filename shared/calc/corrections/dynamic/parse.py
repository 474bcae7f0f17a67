"""Formula text (as IronCalc renders it: no `_xlfn.` prefixes, `@` for implicit intersection,
`A1#` for a spill) to a small syntax tree for the dynamic-array evaluator.

Nodes are tuples: ("num", float), ("str", text), ("bool", bool), ("err", code), ("ref", text),
("rc", R1C1 text), ("name", text), ("call", NAME, [args]), ("invoke", node, [args]), ("array", [[node]]),
("neg"/"pos"/"at"/"percent"/"spill", node), ("op", operator, left, right), ("missing",).
"""

from __future__ import annotations

import re

from shared.calc.corrections.functions.text_format import Unsupported

_SHEET = r"(?:'(?:[^']|'')+'|[A-Za-z_][A-Za-z0-9_.]*)!"
_CELL = r"\$?[A-Za-z]{1,3}\$?\d{1,7}"
_RC = r"R(?:\[-?\d+\]|\d+)C(?:\[-?\d+\]|\d+)"
_TOKEN = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<str>\"(?:[^\"]|\"\")*\")"
    r"|(?P<err>#(?:NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A|GETTING_DATA|SPILL!|CALC!))"
    # IronCalc 0.9.1 renders some formulas' references relative, R1C1 style (R[0]C[-15])
    rf"|(?P<rc>(?:{_SHEET})?{_RC}(?::{_RC})?(?![A-Za-z0-9_.(!]))"
    rf"|(?P<ref>(?:{_SHEET})?(?:{_CELL}(?::{_CELL})?#?|\$?[A-Za-z]{{1,3}}:\$?[A-Za-z]{{1,3}}|\$?\d{{1,7}}:\$?\d{{1,7}})(?![A-Za-z0-9_.(!]))"
    r"|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<func>[A-Za-z_\\][A-Za-z0-9_.]*(?=\())"
    r"|(?P<name>(?:" + _SHEET + r")?[A-Za-z_\\][A-Za-z0-9_.?]*)"
    r"|(?P<op><=|>=|<>|[-+*/^&=<>%:@(){},;])",
)
_INFIX = {"=": 1, "<>": 1, "<": 1, ">": 1, "<=": 1, ">=": 1, "&": 2, "+": 3, "-": 3, "*": 4,
          "/": 4, "^": 5}
_PREFIXES = re.compile(r"^(?:_xlfn\.|_xlws\.|_xlpm\.|_xleta\.)+", re.IGNORECASE)


def bare(name: str) -> str:
    """A name without Excel's file prefixes, upper case."""
    return _PREFIXES.sub("", name).upper()


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, at = [], 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise Unsupported(f"formula text not read at {text[at:at + 12]!r}")
        kind = match.lastgroup
        if kind != "ws":
            tokens.append((kind, match.group(0)))
        at = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.at = 0

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None)

    def take(self, value=None):
        token = self.peek()
        if value is not None and token[1] != value:
            raise Unsupported(f"formula text not read (expected {value!r})")
        self.at += 1
        return token

    def expression(self, floor: int = 0):
        left = self.prefix()
        while True:
            kind, value = self.peek()
            if kind == "op" and value == "%":
                self.take()
                left = ("percent", left)
                continue
            if kind == "op" and value in _INFIX and _INFIX[value] > floor:
                self.take()  # every operator is left-associative in Excel, ^ too
                left = ("op", value, left, self.expression(_INFIX[value]))
                continue
            return left

    def prefix(self):
        kind, value = self.peek()
        if kind == "op" and value in ("-", "+"):
            self.take()
            operand = self.prefix_operand()
            return ("neg" if value == "-" else "pos", operand)
        return self.postfix(self.primary())

    def prefix_operand(self):
        # negation binds tighter than ^ and %: -2^2 is 4
        kind, value = self.peek()
        if kind == "op" and value in ("-", "+"):
            self.take()
            return ("neg" if value == "-" else "pos", self.prefix_operand())
        node = self.postfix(self.primary())
        while self.peek() == ("op", "%"):
            self.take()
            node = ("percent", node)
        return node

    def postfix(self, node):
        while self.peek() == ("op", "("):  # LAMBDA(x, x+1)(2)
            node = ("invoke", node, self.arguments())
        return node

    def arguments(self):
        self.take("(")
        args = []
        if self.peek() == ("op", ")"):
            self.take()
            return args
        while True:
            if self.peek()[1] in (",", ")"):
                args.append(("missing",))
            else:
                args.append(self.expression())
            kind, value = self.take()
            if value == ")":
                return args
            if value != ",":
                raise Unsupported("formula text not read (an argument list)")

    def primary(self):
        kind, value = self.take()
        if kind == "num":
            return ("num", float(value))
        if kind == "str":
            return ("str", value[1:-1].replace('""', '"'))
        if kind == "err":
            return ("err", value.upper())
        if kind == "rc":
            if "[" not in value:
                raise Unsupported(f"reference {value} in R1C1 notation")
            return ("rc", value)
        if kind == "ref":
            if value.endswith("#"):
                return ("spill", ("ref", value[:-1]))
            node = ("ref", value)
            if self.peek() == ("op", ":"):
                raise Unsupported("a range built with ':' from a calculation")
            return node
        if kind == "func":
            return ("call", bare(value), self.arguments())
        if kind == "name":
            if value.upper() in ("TRUE", "FALSE"):
                return ("bool", value.upper() == "TRUE")
            return ("name", value)
        if kind == "op" and value == "(":
            node = self.expression()
            self.take(")")
            return node
        if kind == "op" and value == "@":
            return ("at", self.prefix_operand())
        if kind == "op" and value == "{":
            return self.array()
        raise Unsupported(f"formula text not read at {value!r}")

    def array(self):
        rows, row = [], []
        while True:
            row.append(self.expression())
            kind, value = self.take()
            if value == ",":
                continue
            rows.append(row)
            row = []
            if value == ";":
                continue
            if value == "}":
                break
            raise Unsupported("formula text not read (an array constant)")
        if len({len(r) for r in rows}) != 1:
            raise Unsupported("an array constant with rows of different lengths")
        return ("array", rows)


def parse(formula: str):
    """The tree of a formula (with or without "=")."""
    text = formula.removeprefix("=")
    parser = _Parser(tokenize(text))
    node = parser.expression()
    if parser.at != len(parser.tokens):
        raise Unsupported("formula text not read (trailing text; an intersection or union)")
    return node
