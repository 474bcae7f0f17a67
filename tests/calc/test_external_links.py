"""Links to other workbooks: no engine ever opens the file or URL a workbook names.

A workbook's formula `[1]S!B1` reads the first external-link part, whose relationship names
the other workbook (a path, `../..`, `file://`, `http://`) and whose `<sheetDataSet>` holds the
values Excel saved for it. Excel, when links are not updated, calculates with those saved
values; so does every engine here, and the upload names every cell that reads another workbook.

Each hostile workbook links to a real workbook the test writes, holding SECRET, and to a local
HTTP server that records whether it was contacted. The file is watched with inotify (Linux), so
an open by any code (Python or the engines' native code) is seen, not just the values it gave.
"""

import ctypes
import http.server
import io
import os
import struct
import sys
import threading
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.workbook.defined_name import DefinedName

from shared.calc import get_engine
from shared.calc.corrections.external import _Rendering
from shared.calc.fidelity.choice import choose_engine
from shared.calc.xlsx.external_links import (
    external_books,
    external_cells,
    external_link_warnings,
    parse_reference,
    saved_values,
)
from tests.corpus import corpus_file
from tests.packages import edit_parts

ENGINES = ("ironcalc", "formulas")
SECRET = 7_340_113.25  # only in the other workbook: never in any output
SAVED_B1 = 125  # what the link part saved for [1]S!B1
FROM_SAVED = "it is calculated from the values saved in this file, never from the other file"
NOT_SAVED = ("this file does not save every value it reads from it: those read #REF! (the other "
             "file is never opened)")
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"

# The values the link part saves (as Excel writes them: text in the cell, t="str").
SAVED = (
    '<row r="1"><cell r="A1" t="str"><v>EUR</v></cell><cell r="B1"><v>125</v></cell>'
    '<cell r="D1" t="e"><v>#N/A</v></cell></row>'
    '<row r="2"><cell r="B2"><v>2</v></cell></row>'
    '<row r="3"><cell r="B3"><v>3</v></cell></row>'
)


def other_workbook(path: Path) -> Path:
    """The workbook a link names: SECRET where the link part saved 125."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["B1"], ws["B2"], ws["B3"] = "SECRET TEXT", SECRET, SECRET, SECRET
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path


def linking_workbook(target: str, formulas: dict[str, str] | None = None, saved: str | None = SAVED,
                     names: str = "", link: str | None = None) -> bytes:
    """A workbook whose Sheet1 reads [1] = `target`: A1 (input `amount`) = 5, B2 (output
    `linked`) = `[1]S!B1*A1`, plus `formulas` ({cell: formula}, each cell an output named
    after it); the link part saves `saved` for sheet S (None: nothing saved)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws["A1"] = 5
    cells = {"B2": "[1]S!B1*A1", **(formulas or {})}
    for cell, formula in cells.items():
        ws[cell] = "=" + formula
    wb.defined_names["amount"] = DefinedName("amount", attr_text="Sheet1!$A$1")
    wb.defined_names["linked"] = DefinedName("linked", attr_text="Sheet1!$B$2")
    for cell in formulas or {}:
        wb.defined_names[f"out_{cell}"] = DefinedName(f"out_{cell}", attr_text=f"Sheet1!${cell[0]}${cell[1:]}")
    wb.defined_names["Rate"] = DefinedName("Rate", attr_text="[1]S!$B$1")
    buffer = io.BytesIO()
    wb.save(buffer)
    data_set = "" if saved is None else f'<sheetDataSet><sheetData sheetId="0">{saved}</sheetData></sheetDataSet>'
    part = link or (
        f'<externalLink xmlns="{_MAIN}" xmlns:r="{_RELS}"><externalBook r:id="rId1">'
        f'<sheetNames><sheetName val="S"/></sheetNames>{names}{data_set}</externalBook></externalLink>'
    )
    return _with_link(buffer.getvalue(), part, target)


def _with_link(data: bytes, part: str, target: str) -> bytes:
    """The package with external-link part 1 (`part`) pointing at `target`."""
    link_rels = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="{_PKG_RELS}">'
        f'<Relationship Id="rId1" Type="{_RELS}/externalLinkPath" Target="{target}" '
        'TargetMode="External"/></Relationships>'
    )
    return edit_parts(data, {
        "xl/workbook.xml": lambda content: content.replace(
            b"</sheets>", b'</sheets><externalReferences><externalReference r:id="rIdLink1"/></externalReferences>',
        ),
        "xl/_rels/workbook.xml.rels": lambda content: content.replace(b"</Relationships>", (
            f'<Relationship Id="rIdLink1" Type="{_RELS}/externalLink" '
            'Target="externalLinks/externalLink1.xml"/></Relationships>'
        ).encode()),
        "[Content_Types].xml": lambda content: content.replace(b"</Types>", (
            b'<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType='
            b'"application/vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/></Types>'
        )),
    }, add={
        "xl/externalLinks/externalLink1.xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' + part,
        "xl/externalLinks/_rels/externalLink1.xml.rels": link_rels,
    })


class FileWatch:
    """Whether anything opened or read a file since the watch began (inotify: any process,
    any language)."""

    _IN_ACCESS, _IN_OPEN = 0x001, 0x020

    def __init__(self, path: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._fd < 0 or libc.inotify_add_watch(self._fd, str(path).encode(), self._IN_ACCESS | self._IN_OPEN) < 0:
            raise OSError(ctypes.get_errno(), "inotify is not available")

    def touched(self) -> bool:
        try:
            events = os.read(self._fd, 4096)
        except BlockingIOError:
            return False
        return len(events) >= struct.calcsize("iIII")

    def close(self) -> None:
        os.close(self._fd)


class RecordingServer:
    """A local HTTP server serving the other workbook (`body()`), recording every request."""

    def __init__(self, body):
        self.requests: list[str] = []
        requests = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body())

            do_HEAD = do_GET

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/x.xlsx"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def other(tmp_path) -> Path:
    return other_workbook(tmp_path / "elsewhere" / "secret.xlsx")


@pytest.fixture
def watch(other):
    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    watching = FileWatch(other)
    yield watching
    watching.close()


@pytest.fixture
def server(other):
    serving = RecordingServer(other.read_bytes)  # read only if asked: that would fail the test
    yield serving
    serving.close()


def _targets(other: Path, server: RecordingServer) -> dict[str, str]:
    return {
        "absolute path": str(other),
        "relative path": "../" * 40 + str(other).lstrip("/"),  # up to / from wherever it is read
        "file URL": other.as_uri(),
        "http URL": server.url,
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["absolute path", "relative path", "file URL", "http URL"])
def test_a_linked_workbook_is_never_opened_and_its_saved_values_are_used(engine, kind, other, watch, server):
    # GIVEN a workbook whose formula reads another workbook the worker could open or fetch
    data = linking_workbook(_targets(other, server)[kind])
    # WHEN it is uploaded, checked, stored and calculated with the engine, and exported
    loaded = get_engine(engine).load_xlsx(data)
    first = loaded.calculate({"amount": 2})
    stored = get_engine(engine).load_serialized(loaded.serialize())
    again = stored.calculate({})
    exported = stored.to_xlsx()
    checked, _ = get_engine(engine).recalculate_cells(data, [("Sheet1", 2, 2)], set())
    # THEN every value comes from the link part's saved 125, never from the other file
    assert first == {"linked": SAVED_B1 * 2}
    assert again == {"linked": SAVED_B1 * 5}
    assert checked == [("n", SAVED_B1 * 5.0)]
    with zipfile.ZipFile(io.BytesIO(exported)) as package:
        parts = b"".join(package.read(name) for name in package.namelist())
    assert not any(str(int(SECRET * k)).encode() in parts for k in (1, 2, 5))
    # AND the other file was never opened, nor the URL fetched
    assert not watch.touched()
    assert server.requests == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_formula_naming_a_file_outright_reads_ref_error(engine, other, watch, server):
    # GIVEN formulas that name the other workbook by path or URL, not through a link part
    data = linking_workbook(str(other), {
        "B3": f"'{other.parent}/[secret.xlsx]S'!B1",
        "B4": f"'{'../' * 40}{str(other.parent).lstrip('/')}/[secret.xlsx]S'!B1",
        "B5": f"'{server.url.rsplit('/', 1)[0]}/[x.xlsx]S'!B1",
        "B6": "[2]S!B1",  # a link the package does not have
    })
    # WHEN the engine calculates them
    values = get_engine(engine).load_xlsx(data).calculate({})
    # THEN each is #REF! (Excel's answer for a book the file saves nothing for), nothing was opened
    assert values == {"linked": SAVED_B1 * 5, "out_B3": "#REF!", "out_B4": "#REF!", "out_B5": "#REF!",
                      "out_B6": "#REF!"}
    assert not watch.touched()
    assert server.requests == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_link_without_saved_values_reads_ref_error(engine, other, watch):
    # GIVEN a link part that saves no values for the sheet the formula reads
    data = linking_workbook(str(other), saved=None)
    # WHEN calculated
    values = get_engine(engine).load_xlsx(data).calculate({})
    # THEN the cell is #REF! (as Excel shows it without updating), and the file was not opened
    assert values == {"linked": "#REF!"}
    assert not watch.touched()


@pytest.mark.parametrize("engine", ENGINES)
def test_saved_values_of_every_kind_are_read_as_excel_reads_them(engine, other, watch):
    # GIVEN formulas reading saved text, an error, a range, a whole column, a blank, a sheet
    # the part does not save, and names standing for references into the other workbook
    data = linking_workbook(str(other), {
        "B3": "SUM([1]S!B1:B3)",
        "B4": '[1]S!A1&"/"&A1',
        "B5": 'IFERROR([1]S!D1,"none")',
        "B6": "SUM([1]S!B:B)",
        "B7": "[1]S!C9+1",
        "B8": "[1]Other!A1",
        "B9": "Rate*2",
        "C2": "[1]!Fee+1",
        "C3": "VLOOKUP(2,[1]S!B1:B3,1,FALSE)",
        "D3": "[1]!Blank",
    }, names=(
        '<definedNames><definedName name="Fee" refersTo="=S!$B$2"/><definedName name="Blank"/>'
        '</definedNames>'
    ))
    # WHEN calculated
    values = get_engine(engine).load_xlsx(data).calculate({})
    # THEN each reads the saved value (a blank cell is 0; an unsaved sheet #REF!; a name saved
    # without its reference #NAME?)
    assert values == {
        "linked": 625, "out_B3": 130, "out_B4": "EUR/5", "out_B5": "none", "out_B6": 130,
        "out_B7": 1, "out_B8": "#REF!", "out_B9": 250, "out_C2": 3, "out_C3": 2, "out_D3": "#NAME?",
    }
    assert not watch.touched()


def test_ironcalc_intersects_a_linked_range_where_one_value_is_expected(other):
    # GIVEN a formula (not an array formula) using a linked column as one value, in row 2
    # (formulas 1.3.4 takes a range's first cell there, linked or not: its own behaviour)
    data = linking_workbook(str(other), {"D2": "[1]S!$B$1:$B$3*10", "D5": "[1]S!$B$1:$B$3*10"})
    # WHEN IronCalc calculates it
    values = get_engine("ironcalc").load_xlsx(data).calculate({})
    # THEN it reads the range's cell in its own row, as Excel does, and #VALUE! outside it
    assert values == {"linked": 625, "out_D2": 20, "out_D5": "#VALUE!"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sheet_excel_could_not_update_keeps_what_it_saved(engine, other, watch):
    # GIVEN a link whose last update failed (refreshError) on both its sheets, one of which
    # saved values before
    data = linking_workbook(str(other), {"B3": "[1]T!A1"}, link=(
        f'<externalLink xmlns="{_MAIN}" xmlns:r="{_RELS}"><externalBook r:id="rId1"><sheetNames>'
        '<sheetName val="S"/><sheetName val="T"/></sheetNames><sheetDataSet>'
        '<sheetData sheetId="0" refreshError="1"><row r="1"><cell r="B1"><v>125</v></cell></row></sheetData>'
        '<sheetData sheetId="1" refreshError="1"/></sheetDataSet></externalBook></externalLink>'
    ))
    # WHEN calculated
    values = get_engine(engine).load_xlsx(data).calculate({})
    # THEN the saved value stands, and the sheet with none is #REF! (as Excel shows them)
    assert values == {"linked": 625, "out_B3": "#REF!"}
    assert not watch.touched()


@pytest.mark.parametrize("engine", ENGINES)
def test_saved_text_that_looks_like_a_formula_stays_text(engine, other, watch):
    # GIVEN a saved value written like a formula reading yet another file
    data = linking_workbook(str(other), {"B3": "[1]S!A1"}, saved=(
        f'<row r="1"><cell r="A1" t="str"><v>=\'{other.parent}/[secret.xlsx]S\'!B1</v></cell>'
        '<cell r="B1"><v>125</v></cell></row>'
    ))
    # WHEN calculated
    values = get_engine(engine).load_xlsx(data).calculate({})
    # THEN it is the text itself
    assert values == {"linked": 625, "out_B3": f"='{other.parent}/[secret.xlsx]S'!B1"}
    assert not watch.touched()


@pytest.mark.parametrize("engine", ENGINES)
def test_functions_that_fetch_urls_fetch_nothing(engine, server):
    # GIVEN formulas of Excel's functions that fetch from the web
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = f'=WEBSERVICE("{server.url}")'
    ws["A2"] = f'=IMAGE("{server.url}")'
    ws["A3"] = f'=FILTERXML(WEBSERVICE("{server.url}"),"//a")'
    for cell in ("A1", "A2", "A3"):
        wb.defined_names[f"out_{cell}"] = DefinedName(f"out_{cell}", attr_text=f"Sheet!${cell[0]}${cell[1:]}")
    buffer = io.BytesIO()
    wb.save(buffer)
    # WHEN calculated
    values = get_engine(engine).load_xlsx(buffer.getvalue()).calculate({})
    # THEN they are errors, and the server was never contacted
    assert all(str(v).startswith("#") for v in values.values()), values
    assert server.requests == []


def test_the_detector_lists_the_links_and_names_each_cell_reading_them(other):
    # GIVEN a workbook reading another one through a link part, partly unsaved
    data = linking_workbook(str(other), {"B3": "SUM([1]S!B1:B3)", "B8": "[1]Other!A1", "B9": "Rate*2",
                                         "C5": "A1*2"})
    # WHEN the upload asks
    books, cells = external_cells(data)
    warnings = external_link_warnings(data)
    # THEN the link is listed with its target (shown, never opened) and saved values
    assert [(b.index, b.kind, b.target, b.sheets) for b in books] == [(1, "book", str(other), ["S"])]
    assert books[0].saved[0][(1, 2)] == ("n", 125.0)
    # AND every cell reading it is named, those the file saves nothing for as #REF!
    assert [(c.cell, c.saved) for c in cells] == [("B2", True), ("B3", True), ("B8", False), ("B9", True)]
    assert warnings == [
        f"Sheet1!B2 refers to another workbook ([1] {other}); {FROM_SAVED}",
        f"Sheet1!B3 refers to another workbook ([1] {other}); {FROM_SAVED}",
        f"Sheet1!B8 refers to another workbook ([1] {other}) and {NOT_SAVED}",
        f"Sheet1!B9 refers to another workbook ([1] {other}); {FROM_SAVED}",
    ]


def test_the_detector_counts_cells_past_its_limit_and_names_dde_links(other):
    # GIVEN many cells reading another workbook, and a DDE link
    many = {f"C{row}": f"[1]S!B1+{row}" for row in range(1, 13)}
    data = linking_workbook(str(other), many)
    dde = linking_workbook("ignored", link=(
        f'<externalLink xmlns="{_MAIN}"><ddeLink ddeService="Excel" ddeTopic="C:\\x.xls"/></externalLink>'
    ))
    # WHEN the upload asks
    warnings = external_link_warnings(data, limit=3)
    # THEN three cells are named and the rest counted
    assert len(warnings) == 4
    assert warnings[3].startswith("... and 10 more formula cells refer to other workbooks")
    assert "The workbook has a DDE link ([1] Excel|C:\\x.xls); it is never followed" in external_link_warnings(dde)


def test_a_workbook_without_links_costs_no_parse_and_has_no_warning():
    wb = openpyxl.Workbook()
    wb.active["A1"] = "=SUM(B1:B3)"
    buffer = io.BytesIO()
    wb.save(buffer)
    assert external_books(buffer.getvalue()) == []
    assert external_link_warnings(buffer.getvalue()) == []


def test_the_upload_warnings_name_the_cells_reading_another_workbook(other, watch):
    # GIVEN a workbook reading another one
    data = linking_workbook(str(other))
    # WHEN the upload chooses its engine
    choice = choose_engine(data, engines=("ironcalc",))
    # THEN its warnings name the cell, and the other file was not opened
    assert f"Sheet1!B2 refers to another workbook ([1] {other}); {FROM_SAVED}" in choice.warnings
    assert not watch.touched()


def test_ranges_too_big_to_write_out_and_constants_past_the_budget_are_ref_errors(other):
    # GIVEN a whole-column reference over a column saved a million rows down, and a small one
    data = linking_workbook(str(other), saved='<row r="1"><cell r="B1"><v>125</v></cell></row>'
                            '<row r="1000000"><cell r="B1000000"><v>1</v></cell></row>')
    books = {b.index: b for b in external_books(data)}
    column, cell = parse_reference("[1]S!B:B"), parse_reference("[1]S!B1")
    # WHEN their saved values are asked for
    # THEN the column is too big even cut to the saved cells (#REF!), the cell is there
    assert saved_values(column, books) is None
    assert saved_values(cell, books) == [[("n", 125.0)]]
    # AND the IronCalc rewrite stops writing constants once its budget is spent
    rendering = _Rendering(books, chars=4)
    assert rendering.constant(cell, 2, 2, True) == "125"
    assert rendering.constant(cell, 3, 2, True) == "#REF!"


# The formulas project's test workbook, saved by Excel with two links: one whose last update
# failed but which saved values, one that saved nothing. Excel's values of the cells reading them.
EXCEL_SAVED = "formulas/test/test_files/test.xlsx"


def test_cells_reading_other_workbooks_get_the_values_excel_saved():
    from shared.calc.fidelity.compare import values_match
    from shared.calc.refs import parse_cell
    from shared.calc.xlsx.cells import read_excel_cells

    # GIVEN a workbook Excel saved, reading two other workbooks that are not here
    data = corpus_file(EXCEL_SAVED).read_bytes()
    excel = {(c.sheet, c.address): c.expected for c in read_excel_cells(data).cells}
    assert sorted(c.cell for c in external_cells(data)[1]) == sorted(["O13", "P16", "B17", "P17", "B18", "P18"])
    # WHEN IronCalc recalculates them (formulas matches all six, but takes a minute and more
    # over the whole workbook; P16 is a dynamic array formula, left as it is, and P18 a range
    # operator across books, which IronCalc answers #REF!, Excel #VALUE!)
    cells = ["O13", "B17", "P17", "B18"]
    values, _ = get_engine("ironcalc").recalculate_cells(data, [("CORE", *parse_cell(c)) for c in cells], set())
    # THEN each is what Excel showed
    for cell, value in zip(cells, values):
        assert values_match(excel[("CORE", cell)], value), (cell, excel[("CORE", cell)], value)
