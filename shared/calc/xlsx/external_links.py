"""Links to other workbooks: the external-link parts of a package, the values Excel saved in
them, and the formula cells that read them. Nothing here (nor in any engine) ever opens the
file or URL a link names: it is only shown.

Excel's rules (ECMA-376 Part 1, 18.14 "Supplementary Workbook Data"; Microsoft support,
"Control when external references (links) are updated"): a formula refers to another workbook
as `[1]Sheet1!B2` (`[1]!Name` for one of its names), `1` being the position of an
`<externalReference>` in workbook.xml. That part (xl/externalLinks/externalLinkN.xml) names the
other workbook through its relationship (`externalLinkPath`, TargetMode="External") and keeps
`<sheetDataSet>`: the values of the cells the formulas read, as Excel last saw them. When the
links are not updated (Excel asks, or is told not to), Excel calculates with those saved values:
a cell of a saved sheet that the part leaves out is blank; a sheet, book or name the part saves
nothing for is #REF! (a sheet whose last update failed, `refreshError="1"`, keeps the values it
saved, and is #REF! when it saved none: measured on formulas' test.xlsx, saved by Excel); a
name listed without what it refers to is #NAME?. The service always behaves as Excel without
updating: the engines calculate from the saved values (shared.calc.formulas.books,
shared.calc.corrections.external) and the upload warns about every cell that depends on another
workbook (`external_link_warnings`).
"""

from __future__ import annotations

import math
import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from xml.etree import ElementTree

from openpyxl.formula.tokenizer import Token, Tokenizer

from shared.calc.refs import CELL_RE, MAX_COLS, MAX_ROWS, column_number
from shared.calc.values import EMPTY, CellValue
from shared.calc.xlsx.package import (
    local_name,
    open_package,
    unescape_ooxml,
    workbook_parts,
)
from shared.errors import WorkbookError

_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
# The saved values read from all external-link parts of one workbook; past this the rest counts
# as not saved (#REF!), so a hostile part cannot make the service hold millions of cells.
MAX_SAVED_CELLS = 200_000
# A reference to more cells than this becomes #REF! unless its saved cells fit (whole columns).
MAX_RANGE_CELLS = 10_000
ERRORS = frozenset({"#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A", "#GETTING_DATA"})
_WHERE = re.compile(r"(?P<path>.*)\[(?P<book>[^\[\]]*)\](?P<sheet>[^\[\]]*)", re.DOTALL)
_HINT = re.compile(rb"<f\b[^>]*>[^<]*\][^<]*!")
_LABEL_LIMIT = 160
# What a damaged package raises as a part is read (bad zip data, bad XML).
_DAMAGED = (ElementTree.ParseError, zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError)


@dataclass
class ExternalBook:
    """One external-link part: the n of `[n]`, what it links to (never opened) and the values
    Excel saved for it, per sheet position."""

    index: int
    part: str
    kind: str  # "book", "dde" (a DDE link), "ole" (an OLE link) or "unknown"
    target: str | None
    sheets: list[str] = field(default_factory=list)
    saved: dict[int, dict[tuple[int, int], CellValue]] = field(default_factory=dict)
    names: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # lower name -> (refersTo, sheetId)
    _extents: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        """`[1] C:\\Prices\\rates.xlsx`, shortened: how warnings name the link."""
        target = self.target or "no target"
        if len(target) > _LABEL_LIMIT:
            target = "..." + target[-_LABEL_LIMIT:]
        return f"[{self.index}] {target}"

    def sheet_position(self, sheet: str) -> int | None:
        lowered = sheet.lower()
        return next((i for i, name in enumerate(self.sheets) if name.lower() == lowered), None)

    def extent(self, position: int) -> tuple[int, int]:
        """(last row, last column) holding a saved cell on a sheet, (1, 1) when none."""
        if position not in self._extents:
            cells = self.saved.get(position) or {(1, 1): EMPTY}
            self._extents[position] = (max(r for r, _ in cells), max(c for _, c in cells))
        return self._extents[position]


@dataclass(frozen=True)
class ExternalReference:
    """An operand of a formula that names another workbook: `[1]Sheet1!$B$2:$C$3` is book "1",
    sheet "Sheet1", ref "$B$2:$C$3"; `[1]!Rate` has no sheet and ref "Rate"."""

    text: str
    book: str  # between the brackets: "1" for a link part, a file name when written out
    path: str  # anything before the brackets (a folder), normally empty
    sheet: str | None
    ref: str

    @property
    def index(self) -> int | None:
        return int(self.book) if self.book.isdigit() and not self.path else None


@dataclass
class ExternalCell:
    """A formula cell reading another workbook, and whether the file holds what it reads."""

    sheet: str
    cell: str
    formula: str
    books: list[str]  # labels of the books it reads
    saved: bool  # every value it reads from them is saved in this file


def external_books(data: bytes) -> list[ExternalBook]:
    """The external-link parts of a package, in the order formulas number them ([1] first)."""
    package = open_package(data)
    return _books(package)


def _books(package: zipfile.ZipFile) -> list[ExternalBook]:
    names = set(package.namelist())
    if not any(n.startswith("xl/externalLinks/") for n in names):
        return []
    try:
        workbook = ElementTree.fromstring(package.read("xl/workbook.xml"))
        rels = _relationships(package, "xl/_rels/workbook.xml.rels")
    except (KeyError, *_DAMAGED):
        return []
    books, budget = [], [MAX_SAVED_CELLS]
    references = [e for e in workbook.iter() if local_name(e.tag) == "externalReference"]
    for index, element in enumerate(references, start=1):
        target = rels.get(element.get(_R_ID) or "", "")
        part = _resolve("xl/workbook.xml", target)
        book = ExternalBook(index, part, "unknown", None)
        if part in names:
            try:
                _read_part(package, book, budget)
            except _DAMAGED:  # a damaged part saves nothing: what reads it is #REF!
                book.kind, book.saved = "unknown", {}
        books.append(book)
    return books


def _relationships(package: zipfile.ZipFile, path: str) -> dict[str, str]:
    if path not in package.namelist():
        return {}
    root = ElementTree.fromstring(package.read(path))
    return {r.get("Id", ""): r.get("Target", "") for r in root if local_name(r.tag) == "Relationship"}


def _resolve(source: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(source), target))


def _rels_path(part: str) -> str:
    return posixpath.join(posixpath.dirname(part), "_rels", posixpath.basename(part) + ".rels")


def _read_part(package: zipfile.ZipFile, book: ExternalBook, budget: list[int]) -> None:
    """Fill `book` from its part: the link's kind and target, sheet names, defined names and
    the saved cells (at most budget[0] of them, which it decrements)."""
    link_rels: dict[str, str] | None = None
    sheet, failed = None, False
    for event, element in ElementTree.iterparse(package.open(book.part), events=("start", "end")):
        tag = local_name(element.tag)
        if event == "start":
            if tag in ("externalBook", "ddeLink", "oleLink"):
                book.kind = {"externalBook": "book", "ddeLink": "dde", "oleLink": "ole"}[tag]
                if tag == "ddeLink":
                    book.target = f"{element.get('ddeService', '')}|{element.get('ddeTopic', '')}"
                else:
                    if link_rels is None:
                        link_rels = _relationships(package, _rels_path(book.part))
                    book.target = link_rels.get(element.get(_R_ID) or "") or None
            elif tag == "sheetData" and book.kind == "book":
                sheet_id = element.get("sheetId", "")
                sheet = int(sheet_id) if sheet_id.isdigit() else None
                if sheet is not None:
                    book.saved.setdefault(sheet, {})
                    failed = element.get("refreshError") in ("1", "true")
            continue
        if tag == "sheetName":
            book.sheets.append(element.get("val", ""))
        elif tag == "definedName" and book.kind == "book":
            sheet_id = element.get("sheetId")
            book.names[element.get("name", "").lower()] = (
                (element.get("refersTo") or "").lstrip("="),
                int(sheet_id) if sheet_id and sheet_id.isdigit() else None,
            )
        elif tag == "cell" and sheet is not None and budget[0] > 0:
            where = CELL_RE.fullmatch(element.get("r") or "")
            if where is not None and 1 <= int(where.group(2)) <= MAX_ROWS \
                    and 1 <= column_number(where.group(1)) <= MAX_COLS:
                value = next((c.text for c in element if local_name(c.tag) == "v"), None)
                book.saved[sheet][(int(where.group(2)), column_number(where.group(1)))] = \
                    _saved_value(element.get("t"), value)
                budget[0] -= 1
            element.clear()
        elif tag == "sheetData":
            # refreshError: Excel's last update of the sheet failed; what it saved still stands,
            # and a sheet it saved nothing for reads #REF! (as Excel shows it)
            if sheet is not None and failed and not book.saved[sheet]:
                del book.saved[sheet]
            sheet = None
            element.clear()


def _saved_value(kind: str | None, raw: str | None) -> CellValue:
    """A saved cell's value: in an external-link part text is written in the cell (t="str")."""
    if raw is None:
        return ("s", "") if kind in ("str", "s", "inlineStr") else EMPTY
    if kind in ("str", "s", "inlineStr"):
        return ("s", unescape_ooxml(raw))
    if kind == "b":
        return ("b", raw.strip() in ("1", "true", "TRUE"))
    if kind == "e":
        text = raw.strip().upper()
        return ("e", text if text in ERRORS else "#N/A")
    try:
        number = float(raw)
    except ValueError:
        return ("s", raw)
    return ("n", number) if math.isfinite(number) else ("e", "#NUM!")


# -- references in formulas


def parse_reference(operand: str) -> ExternalReference | None:
    """The external reference an operand token is (`[1]S!A1`, `'[1]My sheet'!A1:B2`,
    `[1]!Name`, `'C:\\x\\[b.xlsx]S'!A1`), or None for any other operand (a structured
    reference to a table, `Table1[Col]` or `[@Col]`, has no `!` outside its brackets)."""
    text = operand.lstrip("@")
    if "[" not in text or "!" not in text:
        return None
    if text.startswith("'"):
        end = 1
        while True:
            end = text.find("'", end)
            if end < 0:
                return None
            if text[end + 1:end + 2] == "'":
                end += 2
                continue
            break
        if text[end + 1:end + 2] != "!":
            return None
        where, ref = text[1:end].replace("''", "'"), text[end + 2:]
    else:
        where, _, ref = text.partition("!")
    match = _WHERE.fullmatch(where)
    if match is None or not ref or "[" in ref or (match.group("book") == "0" and not match.group("path")):
        return None  # [0] is the workbook itself
    sheet = match.group("sheet") or None
    return ExternalReference(operand, match.group("book"), match.group("path"), sheet, ref)


def _operands(formula: str) -> list[str]:
    try:
        tokens = Tokenizer("=" + formula.lstrip("=")).items
    except Exception:  # noqa: BLE001 - an unparsable formula has no references we can read
        return []
    return [t.value for t in tokens if t.type == Token.OPERAND and t.subtype == Token.RANGE]


def references_in(formula: str, names: dict[str, str] | None = None) -> list[ExternalReference]:
    """The external references of a formula, and those of the workbook's defined names it uses
    (`names`: upper-case name -> formula text), one level deep."""
    found = []
    for operand in _operands(formula):
        reference = parse_reference(operand)
        if reference is not None:
            found.append(reference)
        elif names and "!" not in operand:
            definition = names.get(operand.lstrip("@").upper())
            if definition and "[" in definition:
                found.extend(r for r in (parse_reference(o) for o in _operands(definition)) if r)
    return found


# -- saved values


def reference_box(ref: str) -> tuple[int, int, int, int] | None:
    """(top, left, bottom, right) of A1, A1:B2, A:B or 1:2 ($ allowed), else None."""
    first, _, last = ref.replace("$", "").partition(":")
    last = last or first
    a, b = CELL_RE.fullmatch(first), CELL_RE.fullmatch(last)
    if a and b:
        r1, c1, r2, c2 = int(a.group(2)), column_number(a.group(1)), int(b.group(2)), column_number(b.group(1))
    elif first.isalpha() and last.isalpha() and ":" in ref and len(first) <= 3 and len(last) <= 3:
        r1, r2, c1, c2 = 1, MAX_ROWS, column_number(first), column_number(last)
    elif first.isdigit() and last.isdigit() and ":" in ref:
        r1, r2, c1, c2 = int(first), int(last), 1, MAX_COLS
    else:
        return None
    top, bottom, left, right = min(r1, r2), max(r1, r2), min(c1, c2), max(c1, c2)
    if not (1 <= top and bottom <= MAX_ROWS and 1 <= left and right <= MAX_COLS):
        return None
    return top, left, bottom, right


@dataclass(frozen=True)
class SavedArea:
    """Where the values saved for a reference are: a sheet's saved cells and a box on it."""

    cells: dict[tuple[int, int], CellValue]
    top: int
    left: int
    bottom: int
    right: int

    @property
    def size(self) -> int:
        return (self.bottom - self.top + 1) * (self.right - self.left + 1)

    def values(self) -> list[list[CellValue]]:
        """Rows of cells, EMPTY where the sheet saves nothing."""
        return [[self.cells.get((r, c), EMPTY) for c in range(self.left, self.right + 1)]
                for r in range(self.top, self.bottom + 1)]


def saved_area(
    reference: ExternalReference, books: dict[int, ExternalBook], depth: int = 0
) -> SavedArea | CellValue | None:
    """Where the file saved what `reference` reads; an error value where Excel shows one
    without reading cells (#NAME? for a name listed without its reference); None where Excel
    shows #REF! (a book, sheet or name the file saves nothing for, a range of more than
    MAX_RANGE_CELLS cells even cut to the sheet's saved cells). Costs no scan of the cells."""
    book = books.get(reference.index) if reference.index is not None else None
    if book is None or book.kind != "book":
        return None
    if reference.sheet is None:  # [1]!Name: the name's reference in the other workbook
        named = book.names.get(reference.ref.lower())
        if named is None or depth:
            return None
        if not named[0]:
            return ("e", "#NAME?")
        inner = parse_reference(f"[{book.index}]{named[0]}") if "!" in named[0] else None
        if inner is None and named[0].startswith("'"):
            inner = parse_reference(f"'[{book.index}]{named[0][1:]}")
        return saved_area(inner, books, depth + 1) if inner is not None else None
    position = book.sheet_position(reference.sheet)
    cells = book.saved.get(position) if position is not None else None
    box = reference_box(reference.ref)
    if cells is None or box is None:
        return None
    area = SavedArea(cells, *box)
    if area.size > MAX_RANGE_CELLS:
        # A whole column or a long tail: past the sheet's last saved row and column every cell
        # is blank; the top-left corner stays, so positions (INDEX, MATCH) stay the same.
        last_row, last_col = book.extent(position)
        area = SavedArea(cells, area.top, area.left, max(area.top, min(area.bottom, last_row)),
                         max(area.left, min(area.right, last_col)))
        if area.size > MAX_RANGE_CELLS:
            return None
    return area


def saved_values(reference: ExternalReference, books: dict[int, ExternalBook]) -> list[list[CellValue]] | None:
    """The values this file saved for what `reference` reads, as rows of cells (EMPTY where the
    sheet holds nothing), or None where Excel shows #REF! (see saved_area)."""
    area = saved_area(reference, books)
    if area is None:
        return None
    return area.values() if isinstance(area, SavedArea) else [[area]]


# -- the detector


def external_cells(data: bytes) -> tuple[list[ExternalBook], list[ExternalCell]]:
    """The package's external links and its formula cells reading other workbooks."""
    from shared.calc.xlsx.cells import read_excel_cells

    package = open_package(data)
    books = _books(package)
    if not books and not _mentions_other_books(package):
        return books, []
    by_index = {b.index: b for b in books}
    book = read_excel_cells(data)
    found = []
    readable: dict[str, bool] = {}
    linked_names = {name: text for name, text in book.defined_names.items() if "[" in text}
    for cell in book.cells:
        if cell.array_area:
            continue
        if "[" not in cell.formula:  # the tokenizer only for formulas that may read another book
            upper = cell.formula.upper()
            if not any(name in upper for name in linked_names):
                continue
        references = references_in(cell.formula, linked_names)
        if not references:
            continue
        labels = []
        for reference in references:
            linked = by_index.get(reference.index) if reference.index is not None else None
            label = linked.label if linked else f"[{reference.path}{reference.book}]"
            if label not in labels:
                labels.append(label)
        for reference in references:
            if reference.text not in readable:
                readable[reference.text] = saved_area(reference, by_index) is not None
        saved = all(readable[r.text] for r in references)
        found.append(ExternalCell(cell.sheet, cell.address, cell.formula, labels, saved))
    return books, found


def _mentions_other_books(package: zipfile.ZipFile) -> bool:
    """Whether any formula or defined name may name a workbook without a link part (a cheap
    scan: a `]` followed by a `!` inside a formula)."""
    try:
        workbook_xml, parts, _ = workbook_parts(package)
        if any(local_name(e.tag) == "definedName" and "[" in (e.text or "") for e in workbook_xml.iter()):
            return True
        return any(_HINT.search(package.read(path)) for _, path in parts)
    except (WorkbookError, *_DAMAGED):  # the engines say what is wrong with the package
        return False


def _quoted(sheet: str) -> str:
    return sheet if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet) else "'" + sheet.replace("'", "''") + "'"


def external_link_warnings(data: bytes, limit: int = 10) -> list[str]:
    """Upload warnings naming each formula cell that depends on another workbook (the first
    `limit` of them, then a count) and each link that is not to a workbook."""
    books, cells = external_cells(data)
    warnings = []
    for cell in cells[:limit]:
        where = f"{_quoted(cell.sheet)}!{cell.cell}"
        other = ", ".join(cell.books)
        if cell.saved:
            warnings.append(
                f"{where} refers to another workbook ({other}); it is calculated from the values "
                "saved in this file, never from the other file"
            )
        else:
            warnings.append(
                f"{where} refers to another workbook ({other}) and this file does not save every "
                "value it reads from it: those read #REF! (the other file is never opened)"
            )
    if len(cells) > limit:
        warnings.append(
            f"... and {len(cells) - limit} more formula cells refer to other workbooks; they are "
            "calculated from the values saved in this file, never from the other files"
        )
    for book in books:
        if book.kind in ("dde", "ole"):
            warnings.append(
                f"The workbook has a{'' if book.kind == 'dde' else 'n'} {book.kind.upper()} link "
                f"({book.label}); it is never followed"
            )
    return warnings
