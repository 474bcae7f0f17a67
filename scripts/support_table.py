#!/usr/bin/env python3
"""Generate the function support table: shared/calc/fidelity/support.json and its rendering in
docs/functions.md (between the support-table markers).

    .venv/bin/python scripts/support_table.py          # write both
    .venv/bin/python scripts/support_table.py --check  # exit 1 when either is out of date

It probes IronCalc once per function name, reads formulas' function table and the correction
layer's registry, and runs the conformance cases (tests/conformance/cases/*.yaml) with both
engines and the service's path (about half a minute for a hundred cases).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "functions.md"
START, END = "<!-- support-table:start -->", "<!-- support-table:end -->"


def generate() -> dict:
    from shared.calc.fidelity import support
    from tests.conformance import harness

    cases = harness.load_cases()
    return support.build(harness.per_function(harness.run_all(cases)))


def with_table(doc: str, rendered: str) -> str:
    """The page with the table between the markers (appended with them when missing)."""
    block = f"{START}\n\n{rendered}\n{END}"
    if START in doc and END in doc:
        before, _, rest = doc.partition(START)
        _, _, after = rest.partition(END)
        return before + block + after
    return doc.rstrip("\n") + "\n\n## The table\n\n" + block + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed files are out of date")
    args = parser.parse_args(argv)
    from shared.calc.fidelity import support

    table = generate()
    text = support.to_json(table)
    doc = with_table(DOC.read_text(encoding="utf-8"), support.markdown(table))
    if args.check:
        stale = [p for p, content in ((support.SUPPORT_FILE, text), (DOC, doc)) if p.read_text(encoding="utf-8") != content]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run scripts/support_table.py")
        return 1 if stale else 0
    support.SUPPORT_FILE.write_text(text, encoding="utf-8")
    DOC.write_text(doc, encoding="utf-8")
    counts: dict[str, int] = {}
    for row in table["functions"]:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"{len(table['functions'])} functions: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
