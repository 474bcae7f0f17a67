"""What the CLI prints: JSON, tables, progress bars (rich when installed, plain text otherwise)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Callable

try:  # the [cli] extra
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table
except ImportError:  # pragma: no cover - exercised without the extra
    Console = None  # type: ignore[assignment,misc]


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Rows of dicts as a table, columns in first-seen order."""
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[cell(row.get(column, "")) for column in columns] for row in rows]
    if Console is not None:
        table = Table(*columns)
        for line in cells:
            table.add_row(*line)
        Console().print(table)
        return
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for line in cells:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths)))


@contextmanager
def progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (when it is a terminal and rich is installed); yields ``update(done)``."""
    if Console is None or not sys.stderr.isatty():
        yield lambda done: None
        return
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)
