"""Iterative calculation: circular references in a workbook saved with Excel's "Enable
iterative calculation" (`<calcPr iterate="1" iterateCount=".." iterateDelta=".."/>`).

IronCalc answers #CIRC! for every cell of a circular reference and every cell it feeds. Excel,
with iteration enabled, recalculates the cells of the cycle from their current values again and
again, and stops after Maximum Iterations rounds (`iterateCount`, 100 by default) or once no
value changes by more than Maximum Change (`iterateDelta`, 0.001). So here, after IronCalc's
evaluation:

1. The cells showing #CIRC! are found, and on the graph of the references their formulas write,
   one cell of each cycle is chosen to hold a value through a round (`_feedback_cells`): the
   members. The other cells of the cycles keep their formulas, so IronCalc carries a value
   from one cycle to the next (a balance down a schedule) within a round. Each member's formula
   is copied, its references qualified with its own sheet, to the same address of a scratch
   sheet, so relative references, ROW() and COLUMN() mean what they meant.
2. Each round writes the members' current values into them as constants (which breaks every
   cycle), lets IronCalc evaluate the workbook, and reads the members' new values off the
   scratch sheet. The first round starts from the values the upload saved: where Excel would
   have started.
3. The rounds stop, as Excel's do, once no value changes by Maximum Change or more, or after
   Maximum Iterations rounds. A member still changing by Maximum Change or more then has not
   converged (a counter such as `=A1+1` never does): it gets its formula back and keeps showing
   #CIRC!, so an output reading it is refused rather than answered with a number that only
   Excel's history of recalculations made. The values that did converge are within Maximum
   Change of Excel's, which depend as much on where Excel's last iteration started and on the
   order it calculated the cells in.
4. The converged values stay in the member cells; the scratch sheets are removed and the
   workbook evaluated once more, so every cell fed by the cycle is calculated from them. The
   exported workbook gets the members' formulas and the `calcPr` settings back.

A cycle through INDIRECT, CELL, INFO, SHEET or SHEETS (which read where a formula is), through a
name scoped to a sheet, or through a cell the correction layer calculates itself is not
iterated: it keeps #CIRC!, as a workbook without iteration enabled does.
"""

from __future__ import annotations

import bisect
import io
import math
import re
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache

from openpyxl.formula.tokenizer import Token

from shared.calc.corrections.formula_tokens import function_name, tokenize

CIRCULAR = "#CIRC!"
DEFAULT_COUNT, DEFAULT_DELTA = 100, 0.001  # Excel's defaults (File > Options > Formulas)
_CALC_PR = re.compile(rb"<(?:\w+:)?calcPr\b[^>]*>")
_ATTRIBUTE = re.compile(rb'\b(\w+)="([^"]*)"')
_SCRATCH = "_sheetcalc_iteration_{}"
_MEMO_KEPT = 32  # sets of circular cells whose choice a loaded workbook remembers (Known)
# functions whose answer depends on the sheet a formula is on (or reads a reference from text)
_WHERE_IT_IS = frozenset({"INDIRECT", "CELL", "INFO", "SHEET", "SHEETS"})
_REFERENCE = re.compile(
    r"\$?[A-Za-z]{1,3}\$?\d{1,7}(?::\$?[A-Za-z]{1,3}\$?\d{1,7})?"
    r"|\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}|\$?\d{1,7}:\$?\d{1,7}"
)


@dataclass(frozen=True)
class Settings:
    """The workbook's iteration settings (Excel's Maximum Iterations and Maximum Change)."""

    count: int = DEFAULT_COUNT
    delta: float = DEFAULT_DELTA

    def settled(self, change: float) -> bool:
        """Whether a value that moved by `change` in a round has converged: Excel goes on while
        a change is Maximum Change or more."""
        return change < self.delta or change == 0

    def to_header(self) -> dict:
        return {"count": self.count, "delta": self.delta}

    @classmethod
    def from_header(cls, header: dict | None) -> Settings | None:
        return None if not header else cls(int(header["count"]), float(header["delta"]))


def settings(xlsx: bytes) -> Settings | None:
    """The package's iteration settings, or None when iterative calculation is off."""
    try:
        with zipfile.ZipFile(io.BytesIO(xlsx)) as package:
            match = _CALC_PR.search(package.read("xl/workbook.xml"))
    except (KeyError, zipfile.BadZipFile):
        return None
    if match is None:
        return None
    attributes = {k.decode(): v.decode() for k, v in _ATTRIBUTE.findall(match.group(0))}
    if attributes.get("iterate", "0").lower() not in ("1", "true"):
        return None
    try:
        count = int(attributes.get("iterateCount", DEFAULT_COUNT))
        delta = float(attributes.get("iterateDelta", DEFAULT_DELTA))
    except ValueError:
        count, delta = DEFAULT_COUNT, DEFAULT_DELTA
    if count < 1 or not math.isfinite(delta) or delta < 0:
        count, delta = DEFAULT_COUNT, DEFAULT_DELTA
    return Settings(count, delta)


def with_settings(xlsx: bytes, the_settings: Settings | None) -> bytes:
    """An exported package with the upload's iteration settings put back into its calcPr."""
    if the_settings is None:
        return xlsx
    src = zipfile.ZipFile(io.BytesIO(xlsx))
    out = io.BytesIO()
    attributes = (
        f'iterate="1" iterateCount="{the_settings.count}" iterateDelta="{the_settings.delta!r}"'
    ).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "xl/workbook.xml":
                match = _CALC_PR.search(data)
                if match is not None and match.group(0).endswith(b"/>"):  # IronCalc writes one
                    kept = b"".join(
                        b" " + k + b'="' + v + b'"'
                        for k, v in _ATTRIBUTE.findall(match.group(0))
                        if not k.startswith(b"iterate")
                    )
                    data = data[: match.start()] + b"<calcPr" + kept + b" " + attributes + b"/>" + data[match.end():]
            dst.writestr(info, data)
    return out.getvalue()


@dataclass
class Member:
    """A cell of a circular reference: where it is, its formula as IronCalc renders it."""

    sheet: int
    row: int
    col: int
    formula: str

    @property
    def key(self) -> tuple[int, int, int]:
        return self.sheet, self.row, self.col


@dataclass
class Outcome:
    """What one calculation's iteration did: the members that converged, with their values
    (they hold them as constants), and those that did not (they show #CIRC!)."""

    converged: list[tuple[Member, tuple]] = field(default_factory=list)
    unconverged: list[Member] = field(default_factory=list)
    refused: str | None = None  # why the cycle was not iterated at all


def formula_cells(model) -> list[tuple[int, int, int]]:
    """The model's formula cells, in sheet, row, column order: the only cells that can show
    #CIRC!, so a job looks at these and not at a sheet of data."""
    return sorted(key for key in model.get_all_cells() if model.get_cell_formula(*key))


def circular_cells(model, cells: list[tuple[int, int, int]] | None = None) -> list[tuple[int, int, int]]:
    """The formula cells of an evaluated model that show #CIRC!, in sheet, row, column order;
    `cells`: its formula cells, when they are known."""
    from shared.calc.ironcalc.cells import read_cell

    if cells is None:
        cells = formula_cells(model)
    return [key for key in cells if read_cell(model, *key) == ("e", CIRCULAR)]


def iterate(model, the_settings: Settings, known: Known, excluded=frozenset()) -> Outcome | None:
    """Iterate the circular references of an evaluated model as Excel does with iteration
    enabled (see the module's docstring); None when it has none. `known`: what the loaded
    workbook has learnt of its cycles; `excluded`: cells whose formulas are not IronCalc's to
    calculate (the correction layer's)."""
    from shared.calc.ironcalc.model import workbook_names

    keys = circular_cells(model, known.cells())
    if not keys:
        return None
    sheets = [p["name"] for p in model.get_worksheets_properties()]
    formulas = {key: model.get_cell_formula(*key) for key in keys}
    # (the formulas are the same in every job: a loaded workbook remembers the choice)
    found = frozenset(keys)
    if found not in known.choices:
        if len(known.choices) >= _MEMO_KEPT:
            known.choices.clear()
        known.choices[found] = _feedback_cells(_reads(formulas, sheets, workbook_names(model))) or set(keys)
    values = _hold(model, set(known.choices[found]), formulas, known, excluded)
    if isinstance(values, Outcome):
        return values
    local_names = _sheet_scoped_names(model)
    members = []
    for key in sorted(values):
        qualified = _qualified(formulas[key], sheets[key[0]], frozenset(local_names.get(key[0], ())))
        if qualified is None:
            return _refused(
                model, formulas, values, "a circular reference through INDIRECT, CELL, INFO, SHEET, SHEETS or a sheet's own name"
            )
        members.append((Member(*key, formulas[key]), qualified))
    values, changes = _rounds(model, members, values, the_settings, len(sheets))
    outcome = Outcome()
    for member, _ in members:
        if the_settings.settled(changes[member.key]):
            outcome.converged.append((member, values[member.key]))
        else:
            outcome.unconverged.append(member)
    _restore(model, {member.key: member.formula for member in outcome.unconverged})
    model.evaluate()
    return outcome


def _hold(model, chosen: set, formulas: dict, known: Known, excluded) -> dict | Outcome:
    """The chosen cells given the values the upload saved, as constants, and any cell still
    showing #CIRC! then (a cycle through OFFSET shows only now) likewise, until none does: their
    values by cell (`formulas` gains their formulas), or the Outcome that refuses the cycle."""
    from shared.calc.ironcalc.cells import write_cell

    values: dict[tuple[int, int, int], tuple] = {}
    while chosen:
        if chosen & excluded:
            return _refused(model, formulas, values, "a circular reference through a cell the correction layer calculates")
        for key in chosen:
            formulas.setdefault(key, model.get_cell_formula(*key))
        ordered = sorted(chosen)
        values.update(zip(ordered, known.start(ordered)))
        for key in ordered:
            write_cell(model, *key, _constant(values[key]))
        model.evaluate()
        chosen = set(circular_cells(model, known.cells())) - set(values)
    return values


def _rounds(model, members: list, values: dict, the_settings: Settings, sheet_count: int) -> tuple[dict, dict]:
    """Excel's rounds over the members (Member, qualified formula): each writes their values,
    evaluates, and reads their formulas' new values off a scratch sheet per sheet they are on,
    until every change is below Maximum Change or Maximum Iterations rounds have run. The
    members' last values (held in them as constants) and last changes."""
    from shared.calc.ironcalc.cells import read_cell, write_cell

    keys = [member.key for member, _ in members]
    scratch: dict[int, int] = {}
    for sheet in sorted({member.sheet for member, _ in members}):
        model.add_sheet(_SCRATCH.format(sheet))
        scratch[sheet] = sheet_count + len(scratch)
    for member, qualified in members:
        model.set_user_input(scratch[member.sheet], member.row, member.col, qualified)
    changes = {key: math.inf for key in keys}
    try:
        for _ in range(the_settings.count):
            for key in keys:
                write_cell(model, *key, _constant(values[key]))
            model.evaluate()
            new = {key: read_cell(model, scratch[key[0]], key[1], key[2]) for key in keys}
            changes = {key: _change(values[key], new[key]) for key in keys}
            values = new
            if all(the_settings.settled(change) for change in changes.values()):
                break
    finally:
        for index in sorted(scratch.values(), reverse=True):
            model.delete_sheet(index)
    for key in keys:
        write_cell(model, *key, _constant(values[key]))
    return values, changes


def _refused(model, formulas: dict, written: dict, reason: str) -> Outcome:
    """The model as IronCalc evaluated it (every member showing #CIRC!), and why."""
    _restore(model, {key: formulas[key] for key in written})
    model.evaluate()
    return Outcome(refused=reason)


def _restore(model, formulas: dict[tuple[int, int, int], str]) -> None:
    """Members given their formulas back (they show #CIRC! again once evaluated)."""
    for key, formula in formulas.items():
        model.set_user_input(*key, formula)


def _constant(value: tuple) -> tuple:
    """A member's value as content to write: an empty result is Excel's 0 for the cycle."""
    return ("n", 0.0) if value[0] == "empty" else value


def _change(old: tuple, new: tuple) -> float:
    """How much a member's value moved in a round: 0 when it did not move at all (numbers to the
    last bit), the absolute difference of numbers, infinite when its kind or text changed."""
    old, new = _constant(old), _constant(new)
    if old == new:
        return 0.0
    if old[0] == new[0] == "n":
        return abs(new[1] - old[1])
    return math.inf


def _reads(formulas: dict[tuple[int, int, int], str], sheets: list[str], names: dict[str, str]) -> dict:
    """Which of the cells of `formulas` each one's formula reads, by the references it writes
    (names followed)."""
    from shared.calc.fidelity.references import _references

    by_sheet: dict[str, list[tuple[int, int, int]]] = {}
    for key in sorted(formulas):
        by_sheet.setdefault(sheets[key[0]].lower(), []).append(key)
    reads = {}
    for key, formula in formulas.items():
        found = set()
        for box in _references(formula.lstrip("="), sheets[key[0]], names):
            if box == "external" or box[0] not in by_sheet:
                continue
            where, top, left, bottom, right = box
            on_sheet = by_sheet[where]
            first = bisect.bisect_left(on_sheet, (on_sheet[0][0], top, 0))
            last = bisect.bisect_right(on_sheet, (on_sheet[0][0], bottom, math.inf))
            found.update(k for k in on_sheet[first:last] if left <= k[2] <= right)
        reads[key] = found
    return reads


def _feedback_cells(reads: dict) -> set:
    """Cells whose values, held for a round, break every cycle of `reads`. In each cycle left
    the one chosen is read by the fewest cells outside it that carry a value into another cycle,
    so what flows from cycle to cycle (a balance carried down a schedule) stays a formula and crosses the whole chain in one
    evaluation; then the one with the most links inside it; a cell reading itself first."""
    graph = {key: set(found) for key, found in reads.items()}
    readers: dict = {key: set() for key in graph}
    for key, found in graph.items():
        for other in found:
            readers[other].add(key)
    chosen: set = set()
    components = _cyclic_components(graph)
    # the cells a cycle reads, directly or through others: a cell read by one of them carries
    # a value into a cycle
    feeding = set().union(*components) if components else set()
    pending = list(feeding)
    while pending:
        for other in graph[pending.pop()]:
            if other not in feeding:
                feeding.add(other)
                pending.append(other)
    while components:
        for component in components:
            def score(key, component=component):
                inside = readers[key] & component
                return (key in graph[key], -len((readers[key] - component) & feeding),
                        len(graph[key] & component) * len(inside))

            best = max(sorted(component), key=score)
            chosen.add(best)
            for reader in readers.pop(best):
                if reader != best:
                    graph[reader].discard(best)
            for other in graph.pop(best):
                if other != best:
                    readers[other].discard(best)
        components = _cyclic_components(graph)
    return chosen


def _cyclic_components(graph: dict) -> list[set]:
    """The strongly connected components of `graph` that hold a cycle (Tarjan's algorithm,
    without recursion: a schedule fed row by row is a long path)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: list[set] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, pending = work[-1]
            other = next(pending, None)
            if other is not None:
                if other not in graph:
                    continue
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append((other, iter(sorted(graph[other]))))
                elif other in on_stack:
                    low[node] = min(low[node], index[other])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(component)
    return found


def _sheet_scoped_names(model) -> dict[int, set[str]]:
    names: dict[int, set[str]] = {}
    for entry in model.get_defined_name_list():
        if entry["scope"] is not None:
            names.setdefault(entry["scope"], set()).add(entry["name"].upper())
    return names


@lru_cache(maxsize=8192)  # the same formulas in every job of a loaded workbook
def _qualified(formula: str, sheet: str, local_names: frozenset[str]) -> str | None:
    """The formula with each reference that names no sheet qualified with `sheet`, or None when
    it cannot be moved to another sheet and mean the same (see the module's docstring)."""
    tokens = tokenize(formula)
    if tokens is None:
        return None
    prefix = "'" + sheet.replace("'", "''") + "'!"
    parts = []
    for token in tokens:
        value = token.value
        if token.type == Token.FUNC and token.subtype == Token.OPEN and function_name(token) in _WHERE_IT_IS:
            return None
        if token.type == Token.OPERAND and token.subtype == Token.RANGE and "!" not in value:
            if _REFERENCE.fullmatch(value):
                value = prefix + value
            elif value.upper() in local_names:
                return None
        parts.append(value)
    return "=" + "".join(parts)


class Known:
    """What a loaded workbook learns of its cycles once and every calculation reuses, all read
    from the upload's model (`pristine`, IronCalc's bytes before any calculation): its formula
    cells (the only cells that can show #CIRC!), the cells chosen to hold values for each set of
    circular cells met, and the values the upload saved for the cells that hold them."""

    def __init__(self, pristine: bytes):
        self._pristine = pristine
        self._cells: list[tuple[int, int, int]] | None = None
        self._saved: dict[tuple[int, int, int], tuple] = {}
        self.choices: dict[frozenset, set] = {}

    def _model(self):
        from shared.calc.ironcalc.model import fresh_model

        return fresh_model(self._pristine)

    def cells(self) -> list[tuple[int, int, int]]:
        if self._cells is None:
            self._cells = formula_cells(self._model())
        return self._cells

    def start(self, keys: list[tuple[int, int, int]]) -> list[tuple]:
        """The values the upload saved for these cells (Excel's last iteration)."""
        from shared.calc.ironcalc.cells import read_cell

        missing = [key for key in keys if key not in self._saved]
        if missing:
            model = self._model()
            self._saved.update((key, read_cell(model, *key)) for key in missing)
        return [self._saved[key] for key in keys]


class Cycles:
    """One calculation's iterative evaluation: `evaluate(model)` stands for `model.evaluate()`
    and iterates the circular references found; a later call (a data table's substitution)
    first gives the members of the last iteration their formulas back."""

    def __init__(self, the_settings: Settings, known: Known, function_plan=None):
        self.settings = the_settings
        self.known = known
        # the cells the correction layer calculates (functions.Plan): not IronCalc's to iterate
        self.excluded = frozenset((t.sheet, t.row, t.col) for t in function_plan.targets) if function_plan else frozenset()
        self.outcome: Outcome | None = None

    def evaluate(self, model) -> None:
        if self.outcome is not None:
            _restore(model, {member.key: member.formula for member, _ in self.outcome.converged})
        model.evaluate()
        self.iterate_evaluated(model)

    def iterate_evaluated(self, model) -> None:
        """Iterate the circular references of a model IronCalc has just evaluated."""
        self.outcome = iterate(model, self.settings, self.known, self.excluded)

    def restore_formulas(self, xlsx: bytes) -> bytes:
        """An exported package with the converged members' formulas beside their values and
        the iteration settings back in its calcPr."""
        if self.outcome is not None and self.outcome.converged:
            from shared.calc.corrections.functions import layer

            written = [
                (layer.Target(m.sheet, m.row, m.col, m.formula, None, []), value)
                for m, value in self.outcome.converged
            ]
            xlsx = layer.restore_formulas(xlsx, layer.Outcome(written=written))
        return with_settings(xlsx, self.settings)

    def unsupported(self, sheets: list[str]) -> list[str]:
        """What the upload's check names: the cycle not iterated, or each member that did not
        converge (it shows #CIRC!)."""
        if self.outcome is None:
            return []
        if self.outcome.refused:
            return [f"Iterative calculation ({self.outcome.refused})"]
        from shared.calc.refs import cell_name

        return [
            f"Iterative calculation at {sheets[m.sheet]}!{cell_name(m.row, m.col)} "
            f"(still changing by {self.settings.delta:g} or more after {self.settings.count} iterations)"
            for m in self.outcome.unconverged
        ]


def evaluate(model, cycles: Cycles | None) -> None:
    """`model.evaluate()`, iterating circular references where the workbook enables it."""
    if cycles is None:
        model.evaluate()
    else:
        cycles.evaluate(model)
