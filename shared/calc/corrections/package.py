"""What the correction layer reads from and writes into xlsx packages: a quick survey of the
upload (does any sheet mention a lookup, which cells hold array formulas) and the exported
workbook's formulas put back as the user wrote them."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape, unescape

from openpyxl.formula.tokenizer import Token, Tokenizer

from shared.calc.corrections.lookups import MENTION
from shared.calc.refs import column_number
from shared.calc.xlsx.package import open_package, workbook_parts

_CELL = re.compile(rb"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.DOTALL)
_R_ATTR = re.compile(rb'\br="([A-Z]+)(\d+)"')
_ARRAY_F = re.compile(rb"<f\b[^>]*\bt=\"array\"")
_F_TEXT = re.compile(rb"(<f\b[^>]*>)(.*?)(</f>)", re.DOTALL)


def survey(data: bytes) -> tuple[bool, set[tuple[int, int, int]]]:
    """(whether any worksheet mentions LOOKUP(/MATCH(, the (sheet index, row, col) of every cell
    holding an array formula). Costs one decompression of the sheets, no XML parse."""
    package = open_package(data)
    _, parts, _ = workbook_parts(package)
    mentions, arrays = False, set()
    for index, (_, path) in enumerate(parts):
        xml = package.read(path)
        if not MENTION.search(xml):
            continue
        mentions = True
        if b't="array"' not in xml:
            continue
        for match in _CELL.finditer(xml):
            body = match.group(2) or b""
            if _ARRAY_F.search(body):
                r = _R_ATTR.search(match.group(1))
                if r:
                    arrays.add((index, int(r.group(2)), column_number(r.group(1).decode())))
    return mentions, arrays


def restore_formulas(xlsx: bytes, restore: dict[tuple[int, int, int], list[tuple[int, str]]]) -> bytes:
    """The exported package with each rewritten cell's range operands put back as written.

    Only the range operands the rewrite replaced change, found by their position among the
    formula's range operands, so what IronCalc's export adds elsewhere (_xlfn. prefixes) stays.
    """
    import io
    import zipfile

    package = open_package(xlsx)
    _, parts, _ = workbook_parts(package)
    by_path: dict[str, dict[tuple[int, int], list[tuple[int, str]]]] = {}
    for (sheet, row, col), items in restore.items():
        if sheet < len(parts):
            by_path.setdefault(parts[sheet][1], {})[(row, col)] = items

    def fix_cell(match: re.Match, cells: dict) -> bytes:
        r = _R_ATTR.search(match.group(1))
        if r is None or match.group(2) is None:
            return match.group(0)
        items = cells.get((int(r.group(2)), column_number(r.group(1).decode())))
        if items is None:
            return match.group(0)

        def fix_formula(f: re.Match) -> bytes:
            text = unescape(f.group(2).decode("utf-8"))
            tokens = Tokenizer("=" + text).items
            ranges = [t for t in tokens if t.type == Token.OPERAND and t.subtype == Token.RANGE]
            for position, original in items:
                if position < len(ranges):
                    ranges[position].value = original
            return f.group(1) + escape("".join(t.value for t in tokens)).encode("utf-8") + f.group(3)

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
