"""REGEXTEST, REGEXEXTRACT and REGEXREPLACE, as Microsoft's pages for them describe them and as
formulas' test.xlsx (saved by Excel 365) shows them, with the patterns read by regex.py.

- REGEXTEST(text, pattern, [case_sensitivity]): whether any part of the text matches.
- REGEXEXTRACT(text, pattern, [return_mode], [case_sensitivity]): 0 (the default) the first
  match; 1 every match, as a row (test.xlsx EXTRA!I2 spills a phone number a column to the
  right for each); 2 the first match's capturing groups, as a row, #N/A for a group that took no
  part (EXTRA!M3:O3), #VALUE! for a pattern without groups (EXTRA!K3). No match: #N/A.
- REGEXREPLACE(text, pattern, replacement, [occurrence], [case_sensitivity]): occurrence 0 (the
  default) replaces every match, n the n-th, -n the n-th from the end; no such match leaves the
  text as it is. In the replacement `$n` and `${n}` are the n-th group (`$0` the match) and `$$`
  a dollar sign (PCRE2's substitution syntax).

case_sensitivity is 0 (case-sensitive, the default) or 1; return_mode 0, 1 or 2; both are
truncated first (test.xlsx TEXT!U33: 1.9 is 1) and anything else is #VALUE! (TEXT!T33: 2).
A number is matched as the text Excel writes of it (TEXT!R31: 0 is "0"), a logical value as
TRUE or FALSE, an empty cell as ""; an error in an argument is the answer. Given arrays (a
range of texts) each element is answered, an element's own array by its first value (EXTRA!J3:
J4, modes 1 and 2 over two cells).

IronCalc 0.9.1 answers #ERROR! for every call with the optional arguments and the whole match
for return_mode 2, and its regular expressions are not PCRE2's: every call is evaluated here
(dynamic.FAMILY). A pattern PCRE2 would read otherwise than Python is refused (regex.py), and the
cell flagged.
"""

from __future__ import annotations

import re

from shared.calc.corrections.dynamic import values as v
from shared.calc.corrections.dynamic.functions import _arity, _int, _opt, function
from shared.calc.corrections.dynamic.regex import compile_pattern
from shared.calc.corrections.dynamic.values import Err, Grid, Ref
from shared.calc.corrections.functions.text_format import Unsupported

_GROUP = re.compile(r"\$(?:\$|(\d+)|\{(\d+)\})")


def _choice(ev, value, allowed: tuple[int, ...]):
    """A mode argument: truncated, one of `allowed`, else #VALUE!."""
    n = _int(ev, value)
    return n if isinstance(n, Err) or n in allowed else v.VALUE


def _subject(ev, text, pattern, case):
    """(the text, the compiled pattern for it), or the Err the arguments make, the text's first."""
    text = v.to_text(text)
    if isinstance(text, Err):
        return text
    pattern = v.to_text(pattern)
    if isinstance(pattern, Err):
        return pattern
    case = _choice(ev, case, (0, 1))
    if isinstance(case, Err):
        return case
    return text, compile_pattern(pattern, case_sensitive=case == 0).checked(text)


def _elementwise(ev, f, args):
    """f over the arguments' elements where any is an array of several values (an element's
    own array answered by its first value), else f of the values."""
    lifted = any(isinstance(a, (Ref, Grid)) and ev.grid(a).shape != (1, 1) for a in args)

    def one(*values):
        result = f(*values)
        return result.rows[0][0] if lifted and isinstance(result, Grid) else result
    return ev.lift(one, *args)


@function("REGEXTEST")
def _regextest(ev, args):
    _arity(args, 2, 3)

    def one(text, pattern, case=0.0):
        subject = _subject(ev, text, pattern, case)
        return subject if isinstance(subject, Err) else subject[1].search(subject[0]) is not None
    return _elementwise(ev, one, args)


@function("REGEXEXTRACT")
def _regexextract(ev, args):
    _arity(args, 2, 4)

    def one(text, pattern, mode=0.0, case=0.0):
        subject = _subject(ev, text, pattern, case)
        if isinstance(subject, Err):
            return subject
        text, regex = subject
        mode = _choice(ev, mode, (0, 1, 2))
        if isinstance(mode, Err):
            return mode
        if mode == 2 and not regex.groups:
            return v.VALUE
        if mode == 1:
            found = [m.group(0) for m in regex.finditer(text)]
            return Grid([found]) if found else v.NA
        match = regex.search(text)
        if match is None:
            return v.NA
        if mode == 0:
            return match.group(0)
        return Grid([[v.NA if g is None else g for g in match.groups()]])
    return _elementwise(ev, one, [args[0], args[1], _opt(args, 2, 0.0), _opt(args, 3, 0.0)])


def _substitute(replacement: str, match: re.Match) -> str:
    def group(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        n = int(m.group(1) or m.group(2))
        if n > (match.re.groups or 0):
            raise Unsupported("a replacement naming a group the pattern does not have")
        return match.group(n) or ""
    return _GROUP.sub(group, replacement)


@function("REGEXREPLACE")
def _regexreplace(ev, args):
    _arity(args, 3, 5)

    def one(text, pattern, replacement, occurrence=0.0, case=0.0):
        subject = _subject(ev, text, pattern, case)
        if isinstance(subject, Err):
            return subject
        text, regex = subject
        replacement = v.to_text(replacement)
        if isinstance(replacement, Err):
            return replacement
        nth = _int(ev, occurrence)
        if isinstance(nth, Err):
            return nth
        if nth == 0:
            return regex.sub(lambda m: _substitute(replacement, m), text)
        matches = list(regex.finditer(text))
        if not matches or abs(nth) > len(matches):
            return text
        m = matches[nth - 1] if nth > 0 else matches[nth]
        return text[:m.start()] + _substitute(replacement, m) + text[m.end():]
    return _elementwise(ev, one, [args[0], args[1], args[2], _opt(args, 3, 0.0), _opt(args, 4, 0.0)])
