"""Where a py-spy profile's samples went, by part of the stack (docs/profiling.md).

Reads py-spy's raw output (`py-spy record --format raw`: one stack per line, frames root first
separated by `;`, then the sample count) and puts each stack in the first group, in the order
below, that any of its frames belongs to: a stack that serves the local AWS emulation counts as
that even where moto calls botocore or the database is touched under a calculation. Then the
functions most often on top of the stack (own time).

Usage: python bench/profile_summary.py PROFILE.txt [--top 15]
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable

# (group, substrings of a frame "function (file)"), first match wins.
GROUPS = (
    ("local AWS (moto)", ("(moto/", "(werkzeug/", "threaded_moto_server")),
    ("calculation", ("(shared/calc/", "ironcalc")),
    ("database", ("(sqlalchemy/", "(sqlite3/", "(pg8000/", "(shared/repositories/")),
    ("AWS clients (boto3)", ("(botocore/", "(boto3/", "(s3transfer/", "(urllib3/")),
    ("API framework", ("(fastapi/", "(starlette/", "(uvicorn/", "(pydantic", "(anyio/", "(h11/", "(httptools")),
    ("sheetcalc, other", ("(shared/", "(functions/")),
)
OTHER = "other"


def parse(lines: Iterable[str]) -> list[tuple[list[str], int]]:
    """(frames root first, samples) for each line of a raw profile."""
    stacks = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        stacks.append((stack.split(";"), int(count)))
    return stacks


def group_of(frames: list[str]) -> str:
    for name, needles in GROUPS:
        if any(needle in frame for frame in frames for needle in needles):
            return name
    return OTHER


def summarize(lines: Iterable[str], top: int = 15) -> dict:
    """Samples in all, share of each group (%), and the ``top`` leaf functions with their share."""
    stacks = parse(lines)
    total = sum(n for _, n in stacks) or 1
    groups: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    for frames, n in stacks:
        groups[group_of(frames)] += n
        leaves[frames[-1]] += n
    return {
        "samples": sum(n for _, n in stacks),
        "groups": {name: 100 * n / total for name, n in groups.most_common()},
        "leaves": [(frame, 100 * n / total) for frame, n in leaves.most_common(top)],
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    with open(args.profile) as f:
        result = summarize(f, args.top)
    print(f"{result['samples']} samples")
    for name, share in result["groups"].items():
        print(f"  {share:5.1f}%  {name}")
    print("on top of the stack:")
    for frame, share in result["leaves"]:
        print(f"  {share:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
