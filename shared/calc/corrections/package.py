"""What the correction layer reads from and writes into xlsx packages: a quick survey of the
upload (does any sheet mention a lookup, which cells hold array formulas) and the exported
workbook's formulas put back as the user wrote them."""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from xml.sax.saxutils import escape, unescape

from openpyxl.formula.tokenizer import Token, Tokenizer, TokenizerError

from shared.calc.corrections.lookups import MENTION
from shared.calc.corrections.model import Rewrite
from shared.calc.refs import column_number
from shared.calc.xlsx.package import open_package, workbook_parts
from shared.calc.xlsx.prefixes import prefixed as excel_prefixed

log = logging.getLogger(__name__)
_CELL = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_R_ATTR = re.compile(rb'\br="([A-Z]+)(\d+)"')
_F_TEXT = re.compile(rb"(<f\b[^>]*>)(.*?)(</f>)", re.DOTALL)


_SI_ATTR = re.compile(rb'\bsi="(\d+)"')
_REF_ATTR = re.compile(rb'\bref="([^"]*)"')
_SHARED_CHILD = re.compile(rb'<f\b[^>]*\bsi="(\d+)"[^>]*/>')


def _cell_at(xml: bytes, position: int, index: int) -> tuple[int, int, int] | None:
    """The (sheet index, row, col) of the cell element enclosing `position`."""
    start = xml.rfind(b"<c ", 0, position)
    r = _R_ATTR.search(xml, start, xml.find(b">", start) + 1) if start >= 0 else None
    return (index, int(r.group(2)), column_number(r.group(1).decode())) if r else None


_F_ELEMENT = re.compile(rb"<f\b([^>]*?)(?:/>|>(.*?)</f>)", re.DOTALL)


@dataclass
class _Formulas:
    """A sheet's formula elements: the XML, where each element with a text starts, its text's
    bounds, and those texts upper-cased, each in a bare `<F>...</F>` as the mention patterns
    expect them, joined, with where each begins in the joined text."""

    xml: bytes
    starts: list[int]
    texts: list[tuple[int, int]]
    joined: bytes
    offsets: list[int]


@lru_cache(maxsize=1)
def _sheet_formulas(data: bytes) -> tuple[_Formulas, ...]:
    """Every sheet's formulas (_Formulas), read once per workbook: the surveys of one upload
    share them. Only the formulas are searched: a sheet of data costs its decompression and
    one pass, where searching the whole XML and then back from each mention for the formula
    holding it took time growing with the square of the sheet (10,000 rows of data under three
    formulas: 29 s)."""
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    sheets = []
    for _, path in parts:
        xml = package.read(path)
        starts, texts, pieces, offsets, length = [], [], [], [], 0
        for element in _F_ELEMENT.finditer(xml):
            if element.group(2) is None:
                continue  # a shared formula's other cells: found through their group
            starts.append(element.start())
            texts.append(element.span(2))
            offsets.append(length)
            pieces.append(b"<f>" + element.group(2) + b"</f>")
            length += len(pieces[-1])
        sheets.append(_Formulas(xml, starts, texts, b"".join(pieces).upper(), offsets))
    return tuple(sheets)


def forget_formulas() -> None:
    """Let the last workbook's sheets and names go (_sheet_formulas and _names_survey keep them
    for the surveys of one upload)."""
    _sheet_formulas.cache_clear()
    _names_survey.cache_clear()


@lru_cache(maxsize=32)
def _on_upper_case(pattern: re.Pattern) -> re.Pattern:
    """A mention pattern (upper-case literals) to run over upper-cased XML without IGNORECASE,
    which made it 7-10 times slower (60-160 ms per MB of sheet XML)."""
    return re.compile(pattern.pattern.replace(b"(?i)", b""), pattern.flags & ~re.IGNORECASE)


def survey(
    data: bytes, mention: re.Pattern = MENTION, keywords: tuple[bytes, ...] = (b"LOOKUP(", b"MATCH("),
    written: dict[tuple[int, int, int], str] | None = None, spread: set[tuple[int, int, int]] | None = None,
) -> tuple[set[tuple[int, int, int]], set[tuple[int, int, int]]]:
    """(the (sheet index, row, col) of every formula cell that mentions LOOKUP(/MATCH( (or
    `mention`), shared formulas included; those of them holding an array formula). Costs one
    decompression of the sheets and one pass over them per workbook (_sheet_formulas), then a
    plain search for `keywords` (upper case, one of which every mention contains) in their
    formulas: the pattern (written with upper-case literals, for a formula as the XML writes it
    in `<f>...</f>`) only runs over the upper-cased formulas of sheets that have one, no XML
    parse. `written`, when given, receives the formula text as the file writes it of each cell
    found (not of a shared formula's others); `spread`, the array formulas among them that fill
    more than their own cell."""
    candidates, arrays = set(), set()
    pattern = _on_upper_case(mention)
    for index, sheet in enumerate(_sheet_formulas(data)):
        if not any(k in sheet.joined for k in keywords):
            continue
        xml, groups, seen = sheet.xml, set(), set()
        for found in pattern.finditer(sheet.joined):
            at = bisect.bisect_right(sheet.offsets, found.start()) - 1
            if at < 0 or at in seen:
                continue
            seen.add(at)
            f_start = sheet.starts[at]
            where = _cell_at(xml, f_start, index)
            if where is None:
                continue
            candidates.add(where)
            attrs = xml[f_start:sheet.texts[at][0] - 1]
            if written is not None:
                text_start, text_end = sheet.texts[at]
                written[where] = unescape(xml[text_start:text_end].decode("utf-8", "replace"))
            if b't="array"' in attrs:
                arrays.add(where)
                ref = _REF_ATTR.search(attrs)
                if spread is not None and ref and b":" in ref.group(1) and len(set(ref.group(1).split(b":"))) > 1:
                    spread.add(where)
            si = _SI_ATTR.search(attrs)
            if si:
                groups.add(si.group(1))
        if groups:
            for child in _SHARED_CHILD.finditer(xml):
                if child.group(1) in groups:
                    where = _cell_at(xml, child.start(), index)
                    if where is not None:
                        candidates.add(where)
    return candidates, arrays


_ARRAY_F = re.compile(rb'<f\b[^>]*\bt="array"')


def rewrite_formulas(model, data: bytes, mention: re.Pattern, keywords: tuple[bytes, ...], fix) -> list[Rewrite]:
    """Every cell `survey` finds (array formulas left alone) whose formula `fix` changes (it
    answers None otherwise) is given the fixed formula; each Rewrite keeps the formula as
    written, for the exported workbook. Costs one scan of the sheet XML when no cell mentions one."""
    candidates, arrays = survey(data, mention, keywords)
    rewrites = []
    for sheet, row, col in sorted(candidates - arrays):
        formula = model.get_cell_formula(sheet, row, col)
        if not formula or formula.startswith("{"):
            continue
        fixed = fix(formula)
        if fixed is None:
            continue
        rewrites.append(Rewrite(sheet, row, col, formula.lstrip("=")))
        model.set_user_input(sheet, row, col, fixed)
    return rewrites

def names_survey(data: bytes) -> tuple[dict, set[tuple[int, int, int]]] | None:
    """None when workbook.xml defines no name the names rewrite could change (names.py), else
    (the defined names as written, the (sheet index, row, col) of every array-formula cell,
    which the rewrite leaves alone). Read once per upload (_names_survey); each caller gets its
    own copies."""
    found = _names_survey(data)
    return None if found is None else (dict(found[0]), set(found[1]))


@lru_cache(maxsize=1)
def _names_survey(data: bytes) -> tuple[dict, set[tuple[int, int, int]]] | None:
    """names_survey's reading: workbook.xml, and every sheet for its array formulas."""
    from shared.calc.corrections.names import defined_names, may_need_names

    package = open_package(data)
    try:
        workbook_xml = package.read("xl/workbook.xml")
    except KeyError:
        return None
    if b"<definedName" not in workbook_xml or not may_need_names(workbook_xml):
        return None
    return defined_names(workbook_xml), array_cells(data)


def workbook_names(data: bytes) -> dict[tuple[str, int | None], str]:
    """Every defined name as written (names.defined_names), {} for a package without them."""
    from shared.calc.corrections.names import defined_names

    try:
        workbook_xml = open_package(data).read("xl/workbook.xml")
    except KeyError:
        return {}
    return defined_names(workbook_xml) if b"<definedName" in workbook_xml else {}


def array_cells(data: bytes) -> set[tuple[int, int, int]]:
    """The (sheet index, row, col) of every array-formula cell."""
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    arrays = set()
    for index, (_, path) in enumerate(parts):
        xml = package.read(path)
        for match in _ARRAY_F.finditer(xml):
            where = _cell_at(xml, match.start(), index)
            if where is not None:
                arrays.add(where)
    return arrays


# a function token's text: what the tokenizer joins before the name (`B2:`), the name, `(`
_CALLED = re.compile(r"^(?P<lead>.*?)(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\($")


def _as_exported(original: str, exported: str) -> str:
    """The original formula with the function prefixes (_xlfn., _xlws.) IronCalc's export gave
    the same functions in the rewritten one, or Excel's own (prefixes.py) for a function the
    rewrite replaced (an XLOOKUP ending a range becomes INDEX and XMATCH), and without
    IronCalc's `@` marks of implicit intersection."""
    prefixed = {
        re.sub(r"^(?:_xlfn\.|_xlws\.)+", "", t.value, flags=re.IGNORECASE).upper(): t.value
        for t in Tokenizer("=" + exported).items if t.type == Token.FUNC and t.subtype == Token.OPEN
    }
    try:
        tokens = Tokenizer("=" + original).items
    except TokenizerError:
        if any(key != value.upper() for key, value in prefixed.items()) or "@" in original:
            raise
        return original  # openpyxl cannot read it (`#REF!:#REF!`), and there is nothing to carry over
    for token in tokens:
        # IronCalc shows the implicit intersection of a formula as `@` (`@IF(...)`, `@A1:A9`);
        # its export writes such formulas without it, as Excel's files have them
        if (token.type == Token.FUNC and token.subtype == Token.OPEN) or \
                (token.type == Token.OPERAND and token.subtype == Token.RANGE):
            token.value = token.value[1:] if token.value.startswith("@") else token.value
        if token.type == Token.FUNC and token.subtype == Token.OPEN:
            token.value = prefixed.get(token.value.upper()) or _CALLED.sub(
                lambda m: m["lead"] + excel_prefixed(m["name"]) + "(", token.value)
    return "".join(t.value for t in tokens)


def restore_formulas(xlsx: bytes, restore: dict[tuple[int, int, int], str]) -> bytes:
    """The exported package with each rewritten cell's formula put back as the upload had it
    (`restore`: (sheet index, row, col) -> IronCalc's text of the original formula)."""
    import io
    import zipfile

    package = open_package(xlsx)
    _, parts, _ = workbook_parts(package)
    by_path: dict[str, dict[tuple[int, int], str]] = {}
    for (sheet, row, col), original in restore.items():
        if sheet < len(parts):
            by_path.setdefault(parts[sheet][1], {})[(row, col)] = original

    def fix_cell(match: re.Match, cells: dict) -> bytes:
        r = _R_ATTR.search(match.group(1))
        if r is None or match.group(2) is None:
            return match.group(0)
        original = cells.get((int(r.group(2)), column_number(r.group(1).decode())))
        if original is None:
            return match.group(0)

        def fix_formula(f: re.Match) -> bytes:
            try:
                text = _as_exported(original, unescape(f.group(2).decode("utf-8")))
            except Exception:  # noqa: BLE001 - the corrected formula stays; its value is right
                log.warning("could not put back the formula of an exported cell")
                return f.group(0)
            return f.group(1) + escape(text).encode("utf-8") + f.group(3)

        return match.group(0)[: match.start(2) - match.start(0)] + _F_TEXT.sub(fix_formula, match.group(2), count=1) + match.group(0)[match.end(2) - match.start(0):]

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in package.infolist():
            part = package.read(info.filename)
            cells = by_path.get(info.filename)
            if cells:
                part = _CELL.sub(lambda m: fix_cell(m, cells), part)
            dst.writestr(info, part)
    return out.getvalue()
