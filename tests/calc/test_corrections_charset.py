"""CHAR and CODE as the Excel that saved the workbook answers them.

CHAR's and CODE's pages (support.microsoft.com): the character set of the computer, the
Macintosh character set on a Mac. formulas' test.xlsx, saved by Excel for Mac, holds CHAR(154)
"ö", CHAR(160) "†", ... for every code from 128 to 255 (CORE!B159:B286), Mac Roman as Python's
mac_roman codec has it; IronCalc 0.9.1 answers Windows-1252 ("š", a no-break space), which is
what Excel for Windows answers.
"""

import io
import re
import zipfile

import openpyxl

from shared.calc.corrections.charset import MAC_ROMAN, rewrite_formula, saved_on_mac

from .conftest import add_name, to_bytes, uploaded_and_stored
from .test_fidelity import excel_saved

MAC = "Microsoft Macintosh Excel"


def saved_by(data: bytes, application: str) -> bytes:
    """The package with docProps/app.xml naming `application` as the program that saved it."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            body = source.read(item.filename)
            if item.filename == "docProps/app.xml":
                body = re.sub(rb"<Application>[^<]*</Application>", f"<Application>{application}</Application>".encode(), body)
            target.writestr(item, body)
    return out.getvalue()


def characters_book() -> openpyxl.Workbook:
    """A code in A1 (an input) and a text in A2 (an input); CHAR of the code, CODE of the text,
    UNICODE of the character, and CHAR of an ASCII code."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 154, "ö"
    ws["B1"] = "=CHAR(A1)"
    ws["B2"] = "=CODE(A2)"
    ws["B3"] = "=_xlfn.UNICODE(B1)"
    ws["B4"] = "=CHAR(65)&CODE(\"A\")"
    add_name(wb, "code", "Sheet!$A$1")
    add_name(wb, "text", "Sheet!$A$2")
    add_name(wb, "out", "Sheet!$B$1:$B$4")
    return wb


def test_a_workbook_saved_on_a_mac_reads_codes_128_to_255_as_mac_roman():
    data = saved_by(to_bytes(characters_book()), MAC)
    for workbook in uploaded_and_stored(data):
        # THEN CHAR(154) is "ö", CODE("ö") 154, and the character's Unicode value 246
        assert workbook.calculate({}, ["out"])["out"] == ["ö", 154, 246, "A65"]
        # AND every code of the upper half is Mac Roman's character, a fraction cut
        assert workbook.calculate({"code": 160.7}, ["out"])["out"][0] == "†"
        assert workbook.calculate({"code": 128}, ["out"])["out"][0] == "Ä"
        assert workbook.calculate({"text": "†"}, ["out"])["out"][1] == 160


def test_a_workbook_saved_on_windows_keeps_windows_1252():
    data = to_bytes(characters_book())
    for workbook in uploaded_and_stored(saved_by(data, "Microsoft Excel")):
        assert workbook.calculate({}, ["out"])["out"][0] == "š"  # Windows-1252 0x9A


def test_the_upload_check_of_a_mac_workbook_matches_its_saved_characters():
    wb = openpyxl.Workbook()
    ws = wb.active
    for row, code in enumerate([128, 154, 160, 219, 240, 255], start=1):
        ws.cell(row, 1, code)
        ws.cell(row, 2, f"=CHAR(A{row})")
    # the values Excel for Mac saved for these codes in formulas' test.xlsx (CORE!B159:B286),
    # which are mac_roman's characters for all 128 codes
    data = excel_saved(wb, {f"Sheet!B{row}": bytes([code]).decode("mac_roman")
                            for row, code in enumerate([128, 154, 160, 219, 240, 255], start=1)})
    from shared.calc.fidelity.check import check

    assert saved_on_mac(saved_by(data, MAC)) and not saved_on_mac(data)
    assert check(saved_by(data, MAC), "ironcalc").cells_matching == 6


def test_the_rewrite():
    assert len(MAC_ROMAN) == 128 and MAC_ROMAN[154 - 128] == "ö"
    assert rewrite_formula("=CHAR(A1)").startswith("LET(sheetcalc_code,A1,")
    assert rewrite_formula("=LEN(A1)") is None
