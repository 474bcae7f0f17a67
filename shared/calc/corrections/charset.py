"""CHAR and CODE in a workbook saved by Excel for Mac, rewritten at model load.

CHAR's and CODE's pages: "the character set used by your computer", "Macintosh character set"
on a Mac, ANSI (Windows-1252) on Windows. A workbook saved by Excel for Mac (docProps/app.xml:
"Microsoft Macintosh Excel") holds the values its user's Excel answers: formulas' test.xlsx,
saved on a Mac, has CHAR(154) "ö" and CHAR(160) "†" (CORE!B159:B286, every code from 128 to 255
as Python's mac_roman codec has it), where IronCalc 0.9.1 answers Windows-1252's "š" and " ".
So in such a workbook, and only there, codes 128-255 read Mac Roman:

- `CHAR(x)`: `LET(c,x,IF(AND(ISNUMBER(c),c>=128,c<256),MID("<Mac Roman 128-255>",INT(c)-127,1),CHAR(c)))`;
  a code below 128 (ASCII, the same in both) or given as text stays IronCalc's.
- `CODE(t)`: a first character outside ASCII that Mac Roman holds is its Mac Roman code, any
  other IronCalc's CODE.

Array formulas are left alone, as by every rewrite of the layer.
"""

from __future__ import annotations

import re

from shared.calc.corrections.formula_tokens import replace_call, rewrite_calls
from shared.calc.corrections.model import Rewrite, rewrite_cells
from shared.calc.xlsx.package import application, open_package

MENTION = re.compile(rb"(?i)(?<![A-Z0-9_.])(?:CHAR|CODE)\(")
KEYWORDS = (b"CHAR(", b"CODE(")
MAC_ROMAN = bytes(range(128, 256)).decode("mac_roman")
_TABLE = '"' + MAC_ROMAN.replace('"', '""') + '"'


def saved_on_mac(data: bytes) -> bool:
    """Whether Excel for Mac saved the workbook (docProps/app.xml: "Microsoft Macintosh Excel")."""
    return "Macintosh" in (application(open_package(data)) or "")


def _mac_roman(tokens, values, name, opened, closed, args) -> bool:
    if name not in ("CHAR", "CODE") or len(args) != 1 or not args[0]:
        return False
    x = "".join(values[i] for i in args[0]).strip()
    if name == "CHAR":
        text = (f"LET(sheetcalc_code,{x},IF(AND(ISNUMBER(sheetcalc_code),sheetcalc_code>=128,sheetcalc_code<256),"
                f"MID({_TABLE},INT(sheetcalc_code)-127,1),CHAR(sheetcalc_code)))")
    else:
        text = (f"LET(sheetcalc_text,{x},sheetcalc_first,LEFT(sheetcalc_text,1),"
                f"IF(IFERROR(UNICODE(sheetcalc_first),0)>=128,"
                f"IFERROR(127+FIND(sheetcalc_first,{_TABLE}),CODE(sheetcalc_text)),CODE(sheetcalc_text)))")
    replace_call(values, opened, closed, text)
    return True


def rewrite_formula(formula: str) -> str | None:
    """The formula with Mac Roman's CHAR and CODE (module docstring), or None."""
    return rewrite_calls(formula, _mac_roman)


def correct_charset(model, cells: list[tuple[int, int, int]]) -> list[Rewrite]:
    """Rewrite, in `model`, the CHAR and CODE calls of `cells` (sheet index, row, col; array
    formulas left out by the caller). Returns what changed."""
    return rewrite_cells(model, cells, lambda formula, *_: rewrite_formula(formula))
