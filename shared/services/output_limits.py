"""What one job may return: the cells its version's output ranges hold, and its outputs' bytes.

A job returns the named ranges its version's output schema lists (any kind, matched without
regard to case), or every ``output`` range when the schema lists none (CONTRACT.md; the engines'
``calculate``). Each returned cell is stored with the job, shown by its GET, sent in its webhook
and its batch's results, so a 20-byte request could otherwise make megabytes. Two rules:

- ``max_output_cells``: the cells a version's jobs return, over all their ranges. Checked where
  the selection is made, at upload (no schema yet: every output range) and when an output schema
  is saved; the refusal names the range, its cells and the limit.
- ``max_output_bytes``: one job's outputs as compact UTF-8 JSON, checked by the worker after the
  calculation (a cell may hold 32,767 characters, so cells alone do not bound bytes), for versions
  stored before the cell rule too. The job fails with a message naming the limit.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from shared.calc.base import NamedRange
from shared.config import Settings, get_settings
from shared.errors import Invalid, OutputsTooLarge, WorkbookRefused

log = logging.getLogger(__name__)

LARGEST_NAMED = 3  # ranges a refusal over the total lists, largest first


def _fields(rng: NamedRange | Mapping[str, Any]) -> tuple[str, str, str, str, int]:
    if isinstance(rng, NamedRange):
        return rng.name, rng.sheet, rng.ref, rng.kind, rng.rows * rng.cols
    return rng["name"], rng["sheet"], rng["ref"], rng["kind"], int(rng["rows"]) * int(rng["cols"])


def selected_outputs(
    named_ranges: Iterable[NamedRange | Mapping[str, Any]], output_schema: Mapping[str, Any] | None
) -> list[tuple[str, str, str, int]]:
    """(name, sheet, ref, cells) of each range a job of this version returns, as the engines choose
    them: the output schema's properties when it lists any, else every ``output`` range."""
    ranges = [_fields(r) for r in named_ranges]
    props = (output_schema or {}).get("properties")
    if isinstance(props, dict) and props:
        by_name = {name.lower(): (name, sheet, ref, cells) for name, sheet, ref, _, cells in ranges}
        wanted = dict.fromkeys(str(p).lower() for p in props)  # "Total" and "total" are one range
        return [by_name[p] for p in wanted if p in by_name]
    return [(name, sheet, ref, cells) for name, sheet, ref, kind, cells in ranges if kind == "output"]


def _problem(selected: list[tuple[str, str, str, int]], limit: int) -> str | None:
    """Why these ranges return too many cells, naming the range(s); None when they fit."""
    total = sum(cells for *_, cells in selected)
    if total <= limit:
        return None
    largest = sorted(selected, key=lambda r: -r[3])
    name, sheet, ref, cells = largest[0]
    if cells > limit:
        return f"named range '{name}' ({sheet}!{ref}) returns {cells:,} cells, over the limit of {limit:,} output cells per job"
    listed = ", ".join(f"'{n}' ({s}!{r}, {c:,} cells)" for n, s, r, c in largest[:LARGEST_NAMED])
    return f"the output ranges return {total:,} cells together, over the limit of {limit:,} output cells per job; the largest: {listed}"


def check_version_outputs(
    named_ranges: Iterable[NamedRange | Mapping[str, Any]],
    output_schema: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
) -> None:
    """Refuse an upload whose jobs would return more than ``max_output_cells`` cells (WorkbookRefused, 400)."""
    limit = (settings or get_settings()).max_output_cells
    problem = _problem(selected_outputs(named_ranges, output_schema), limit)
    if problem:
        raise WorkbookRefused(
            f"The workbook's outputs are too large: {problem}. Narrow the range, or remove its name "
            "from the workbook if it is not an output (each formula range with a name is returned)"
        )


def check_output_schema(
    named_ranges: Iterable[NamedRange | Mapping[str, Any]],
    output_schema: Mapping[str, Any] | None,
    settings: Settings | None = None,
) -> None:
    """Refuse an output schema (None: every output range) selecting more than ``max_output_cells`` cells (Invalid, 422)."""
    limit = (settings or get_settings()).max_output_cells
    problem = _problem(selected_outputs(named_ranges, output_schema), limit)
    if problem:
        raise Invalid(f"The version's outputs are too large: {problem}. List fewer or smaller ranges in output_schema's properties")


def outputs_size(outputs: Mapping[str, Any]) -> int:
    """The outputs' size as compact UTF-8 JSON (as they are returned)."""
    text = json.dumps(outputs, ensure_ascii=False, separators=(",", ":"))
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


def _size_text(size: int) -> str:
    mb = size / (1024 * 1024)
    return f"{mb:g} MB" if size % (1024 * 1024) == 0 else f"{size:,} bytes"


def check_job_outputs(outputs: Mapping[str, Any], settings: Settings | None = None) -> None:
    """Refuse one job's outputs over ``max_output_bytes`` as JSON (OutputsTooLarge: the job fails with its message)."""
    limit = (settings or get_settings()).max_output_bytes
    size = outputs_size(outputs)
    if size > limit:
        log.warning("job outputs of %d bytes over SHEETCALC_MAX_OUTPUT_BYTES (%d)", size, limit)
        raise OutputsTooLarge(
            f"The job's outputs are {size:,} bytes as JSON, over the limit of {_size_text(limit)} for one job's "
            "outputs; the engine's owner can return fewer or smaller ranges (its output schema selects them)"
        )
