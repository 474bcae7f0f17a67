"""Workbooks that cost what a test needs: built here with openpyxl, never saved by our engine."""

from __future__ import annotations

import io

import openpyxl
from openpyxl.workbook.defined_name import DefinedName


def heavy_when_switched_on(rows: int = 20_000, formulas: int = 2_000) -> bytes:
    """Input ``switch`` (S!C1, 0 as uploaded) and output ``total``: with the switch at 0 a job is
    one cell; at 1, ``formulas`` SUMPRODUCTs over ``rows`` rows each (seconds on any machine:
    40 million multiplications with the defaults)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["C1"] = 0
    for r in range(1, rows + 1):
        ws.cell(r, 1, r)
        ws.cell(r, 2, f"=A{r}*2")
    for i in range(1, formulas + 1):
        ws.cell(i, 4, f"=IF($C$1>0,SUMPRODUCT($A$1:$A${rows},$B$1:$B${rows})+{i},{i})")
    ws["E1"] = f"=SUM(D1:D{formulas})"
    wb.defined_names["switch"] = DefinedName("switch", attr_text="S!$C$1")
    wb.defined_names["total"] = DefinedName("total", attr_text="S!$E$1")
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def always_heavy(rows: int = 20_000, formulas: int = 2_000) -> bytes:
    """The same workbook with the switch saved at 1: every calculation, the upload's too, is heavy."""
    wb = openpyxl.load_workbook(io.BytesIO(heavy_when_switched_on(rows, formulas)))
    wb["S"]["C1"] = 1
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()
