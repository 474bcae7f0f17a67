"""What every bench report starts with: when, on how many CPUs, at what load, on which database."""

from __future__ import annotations

import os
from datetime import datetime, timezone


def machine(database_url: str | None) -> dict:
    """The report's first fields (``database``: "sqlite" without a URL, else the URL's scheme)."""
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
        "database": "sqlite" if not database_url else database_url.split(":", 1)[0],
    }


def header(report: dict, *more: str) -> str:
    """The table's first line: the machine fields, then ``more``."""
    return ", ".join([f"{report['date']}, {report['cpus']} CPUs, load average {report['load_avg']}, {report['database']}", *more])
