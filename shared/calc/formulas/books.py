"""formulas' books kept to the upload: no other file is ever opened.

formulas 1.3.4 follows a reference to another workbook by opening it: `ExcelModel.add_book`
maps `[1]` through the link part's target (an absolute path, `../..`, anything ending in
.xlsx) to a file next to the upload and reads it with openpyxl, and a formula may even name a
file outright (`'/tmp/[other.xlsx]S'!A1`). Here the model's table of books (`ExcelModel.books`,
keyed by upper-case file name) is filled before loading with the upload itself and, for each
link, a workbook held in memory with the values Excel saved in the link part
(shared.calc.xlsx.external_links), then closed: a book it does not hold is refused before
formulas could read it, and formulas turns the reference into #REF! (as Excel does for a link
whose values the file does not save).
"""

from __future__ import annotations

import logging

import openpyxl
from formulas.excel import BOOK, ExcelModel
from openpyxl.workbook.defined_name import DefinedName

from shared.calc.xlsx.external_links import ExternalBook

log = logging.getLogger(__name__)


class BookRefused(LookupError):
    """formulas asked for a book the upload does not hold (another file)."""


class ClosedBooks(dict):
    """formulas' table of books, closed to new entries: formulas reads a file from disk only
    for a book it has to add to this table (add_book), so it never can."""

    def __setitem__(self, key, value):
        if key not in self:
            raise BookRefused("only the uploaded workbook and its saved link values are read")
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        if key not in self:
            raise BookRefused("only the uploaded workbook and its saved link values are read")
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        raise BookRefused("only the uploaded workbook and its saved link values are read")


def saved_book_name(index: int) -> str:
    """The in-memory book holding link [index]'s saved values, as formulas names it."""
    return f"saved-link-{index}.xlsx"


def saved_workbook(book: ExternalBook) -> openpyxl.Workbook:
    """A workbook of the values Excel saved for link `book`: only the sheets the part saves
    (others are #REF!), cells as plain values (text that looks like a formula stays text)."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for position, name in enumerate(book.sheets):
        cells = book.saved.get(position)
        if cells is None or name in workbook.sheetnames:
            continue
        try:
            sheet = workbook.create_sheet(name)
        except ValueError:  # a name openpyxl refuses: what reads it stays #REF!
            continue
        if sheet.title != name:
            workbook.remove(sheet)
            continue
        for (row, col), (kind, value) in cells.items():
            if kind == "empty":
                continue
            cell = sheet.cell(row, col)
            cell._value = value  # set as is: the value setter reads "=..." as a formula
            cell.data_type = kind
    for name, (refers_to, sheet_id) in book.names.items():
        if sheet_id is None:
            try:  # a name saved without what it refers to is #NAME? in Excel
                workbook.defined_names[name] = DefinedName(name, attr_text=refers_to or "#NAME?")
            except ValueError:
                continue
    return workbook


class ContainedModel(ExcelModel):
    """An ExcelModel that can read the upload (`main`, its file name) and the values saved in
    its link parts (`links`), and nothing else."""

    def __init__(self, main: str, links: list[ExternalBook]):
        super().__init__()
        books = {b.index: b for b in links if b.kind == "book"}
        table = {
            main.upper(): {
                "external_links": {str(index): ("", saved_book_name(index)) for index in books},
            },
        }
        for index, book in books.items():
            table[saved_book_name(index).upper()] = {BOOK: saved_workbook(book), "external_links": {}}
        self.books = ClosedBooks(table)
        self._saved = [saved_book_name(index) for index in books]

    def load(self, filename):
        """ExcelModel.load, with the saved books' defined names known before the upload's cells
        are read (formulas finds `[1]!Name` only among the names of books already added)."""
        book, context = self.add_book(filename)
        for name in self._saved:
            self.add_book(name)
        self.pushes(*book.worksheets, context=context)
        return self
