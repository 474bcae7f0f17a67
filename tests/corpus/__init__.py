"""The Excel-saved corpus (README.md here: sources and licences): where it is, and one of its
workbooks by its path. It is part of the repository, so a missing workbook fails the test that
needs it rather than skipping it."""

from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent
# Every workbook of the corpus: 252 saved by Excel and 9 by other programs (README.md).
WORKBOOKS = 261


def corpus_file(relative: str) -> Path:
    """The corpus workbook at ``relative`` (e.g. ``pycel/tests/fixtures/lookup.xlsx``); the test
    fails, naming it, if it is not there."""
    path = CORPUS / relative
    if not path.is_file():
        pytest.fail(
            f"tests/corpus/{relative} is missing: the Excel-saved corpus is part of the repository "
            "(tests/corpus/README.md); restore it from git",
            pytrace=False,
        )
    return path
