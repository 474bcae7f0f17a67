"""Generate examples/loan-quote.xlsx: the sample loan quote workbook.

Run `python examples/make_loan_quote.py`. The output is byte-for-byte deterministic: fixed
document properties and fixed zip timestamps, so regenerating it leaves git clean.
"""

import datetime
import io
import sys
import zipfile
from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.workbook.defined_name import DefinedName

OUT = Path(__file__).with_name("loan-quote.xlsx")
FIXED_TIME = datetime.datetime(2026, 1, 1)
SCHEDULE_MONTHS = 12


def build() -> Workbook:
    """Lay out the quote: inputs, headline outputs and a 12-month amortization block."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Quote"
    bold = Font(bold=True)
    ws["A1"] = "Loan quote"
    ws["A1"].font = Font(bold=True, size=14)

    inputs = [
        ("principal", "Principal", 250000, "#,##0.00"),
        ("annual_rate", "Annual interest rate", 0.045, "0.00%"),
        ("years", "Term (years)", 30, "0"),
        ("start_date", "First payment date", datetime.date(2026, 1, 1), "yyyy-mm-dd"),
    ]
    outputs = [
        ("monthly_payment", "Monthly payment", "=PMT(annual_rate/12,years*12,-principal)", "#,##0.00"),
        ("total_paid", "Total paid", "=monthly_payment*years*12", "#,##0.00"),
        ("total_interest", "Total interest", "=total_paid-principal", "#,##0.00"),
        ("end_date", "Loan end date", "=EDATE(start_date,years*12)", "yyyy-mm-dd"),
    ]
    ws["A2"] = "Inputs"
    ws["A2"].font = bold
    for row, (name, label, value, fmt) in enumerate(inputs, start=3):
        _labelled(wb, ws, row, name, label, value, fmt)
    ws["A8"] = "Results"
    ws["A8"].font = bold
    for row, (name, label, formula, fmt) in enumerate(outputs, start=9):
        _labelled(wb, ws, row, name, label, formula, fmt)

    header = 14
    for col, title in enumerate(["Month", "Payment", "Interest", "Principal", "Balance"], start=1):
        ws.cell(header, col, title).font = bold
    first, last = header + 1, header + SCHEDULE_MONTHS
    for row in range(first, last + 1):
        # Balance (column E) is a helper kept outside the named block: the opening balance of
        # each month is the previous row's closing balance.
        opening = "principal" if row == first else f"E{row - 1}"
        ws[f"A{row}"] = 1 if row == first else f"=A{row - 1}+1"
        ws[f"B{row}"] = "=monthly_payment"
        ws[f"C{row}"] = f"={opening}*annual_rate/12"
        ws[f"D{row}"] = f"=B{row}-C{row}"
        ws[f"E{row}"] = f"={opening}-D{row}"
        for col in "BCDE":
            ws[f"{col}{row}"].number_format = "#,##0.00"
    wb.defined_names["schedule"] = DefinedName("schedule", attr_text=f"Quote!$A${first}:$D${last}")

    ws.column_dimensions["A"].width = 24
    for col in "BCDE":
        ws.column_dimensions[col].width = 14
    wb.properties.creator = "sheetcalc"
    wb.properties.created = FIXED_TIME
    return wb


def _labelled(wb: Workbook, ws, row: int, name: str, label: str, value, fmt: str) -> None:
    ws.cell(row, 1, label)
    cell = ws.cell(row, 2, value)
    cell.number_format = fmt
    wb.defined_names[name] = DefinedName(name, attr_text=f"Quote!$B${row}")


def deterministic_bytes(wb: Workbook) -> bytes:
    """Save, then rewrite the package with fixed timestamps (openpyxl stamps "now")."""
    raw = io.BytesIO()
    wb.save(raw)
    stamp = FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                data = _fix_modified(data, stamp)
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(fixed, data)
    return out.getvalue()


def _fix_modified(core_xml: bytes, stamp: str) -> bytes:
    text = core_xml.decode("utf-8")
    start = text.find("<dcterms:modified")
    if start != -1:
        open_end = text.index(">", start) + 1
        close = text.index("</dcterms:modified>", open_end)
        text = text[:open_end] + stamp + text[close:]
    return text.encode("utf-8")


def main() -> int:
    OUT.write_bytes(deterministic_bytes(build()))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
