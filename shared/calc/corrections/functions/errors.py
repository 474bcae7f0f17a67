"""The one exception the layer's functions raise for an Excel error value."""

from __future__ import annotations


class ExcelError(Exception):
    """An Excel error value as a function's answer: code is its text ("#NUM!", "#VALUE!", ...)."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = code
