"""Excel's regular expressions (PCRE2, Microsoft's REGEXTEST page: "All regular expressions for
this function, as well as REGEXEXTRACT and REGEXREPLACE use the PCRE2 'flavor' of regex")
evaluated with Python's `re`, for the patterns both read the same way.

A pattern with syntax only PCRE2 has, or that `re` reads differently, raises Unsupported (the
cell is flagged) rather than being guessed at: POSIX classes (`[[:alpha:]]`, a set to `re`),
`\\Q...\\E`, `\\K`, `\\R`, `\\h`, `\\v`, `\\X`, `\\N`, `\\p{..}`, `\\x{..}`, `\\g`, `\\k`, `\\Z`/`\\z`
(end of subject: they differ), verbs `(*...)`, recursion and branch reset `(?R)`, `(?1)`, `(?|`,
`(?<name>`, inline flags other than i, m, s, x, and `{,n}` (a literal in PCRE2, a quantifier
in `re`). `\\d`, `\\w`, `\\s`, `\\b` are ASCII in PCRE2 without its Unicode option, Unicode in
`re`: with them, a subject that is not ASCII is refused (`ascii_only`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from shared.calc.corrections.functions.text_format import Unsupported

_SAME_ESCAPES = set("dDwWsSbBAtnrfa0123456789x")  # mean the same in both (x: \xhh)
_CLASS_ESCAPES = set("dDwWsSbB")
_GROUP_STARTS = (":", "=", "!", "<=", "<!", "P<", "P=", ">", "#")
_FLAGS = re.compile(r"\(\?[imsx]*(?:-[imsx]+)?[:)]")


@dataclass(frozen=True)
class Pattern:
    compiled: re.Pattern
    ascii_only: bool  # it uses \d, \w, \s or \b: refused over text that is not ASCII

    def checked(self, text: str) -> re.Pattern:
        """The compiled pattern, for a subject `re` reads as PCRE2 does."""
        if self.ascii_only and not text.isascii():
            raise Unsupported("\\d, \\w, \\s or \\b over text that is not ASCII (PCRE2 reads them as ASCII)")
        return self.compiled

    def search(self, text: str) -> bool:
        return self.checked(text).search(text) is not None


def compile_pattern(pattern: str, case_sensitive: bool = True) -> Pattern:
    """The pattern for `re`, or Unsupported where PCRE2 would read it otherwise."""
    ascii_only = False
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= len(pattern):
                raise Unsupported("a regular expression ending in a backslash")
            nxt = pattern[i + 1]
            if nxt.isalnum() and nxt not in _SAME_ESCAPES:
                raise Unsupported(f"the PCRE2 escape \\{nxt} in a regular expression")
            if nxt == "x" and pattern[i + 2 : i + 3] == "{":
                raise Unsupported("the PCRE2 escape \\x{...} in a regular expression")
            ascii_only |= nxt in _CLASS_ESCAPES
            i += 2
            continue
        if in_class:
            if ch == "[" and pattern[i + 1 : i + 2] in (":", ".", "="):
                raise Unsupported("a POSIX class in a regular expression")
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            # a "]" first in a set is a literal in both
            if pattern[i + 1 : i + 2] == "]":
                i += 1
            elif pattern[i + 1 : i + 3] == "^]":
                i += 2
        elif ch == "(" and pattern[i + 1 : i + 2] in ("?", "*"):
            rest = pattern[i + 2 :]
            if pattern[i + 1] == "*" or not (rest.startswith(_GROUP_STARTS) or _FLAGS.match(pattern, i)):
                raise Unsupported("PCRE2-only group syntax in a regular expression")
        elif ch == "{" and pattern[i + 1 : i + 2] == ",":
            raise Unsupported("{,n} in a regular expression (a literal in PCRE2)")
        i += 1
    try:
        compiled = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
    except re.error as exc:  # PCRE2 may read what `re` cannot: not Excel's #VALUE! for sure
        raise Unsupported(f"a regular expression Python cannot read ({exc})") from None
    return Pattern(compiled, ascii_only)


@functools.lru_cache(maxsize=1024)
def wildcard(pattern: str) -> re.Pattern:
    """Excel's wildcards (SEARCH, MATCH, VLOOKUP, COUNTIF...): ? any character, * any run, ~
    before either (or ~) the character itself; case-insensitive."""
    text = "".join(
        re.escape(part[1]) if part.startswith("~") and len(part) == 2 else
        "." if part == "?" else ".*" if part == "*" else re.escape(part)
        for part in re.findall(r"~[?*~]|[?*]|[^?*~]+|~", pattern)
    )
    return re.compile(text, re.IGNORECASE | re.DOTALL)
