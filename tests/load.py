"""How busy this machine is, for the few tests whose verdict is a latency (/health while a burst
or a hostile upload is served): their bound is multiplied by ``load_factor()``, so the verdict
tells "waited behind the work" from "answered beside it" on a busy machine as on a quiet one."""

from __future__ import annotations

import os


def load_factor() -> float:
    """How many times over its cores this machine is busy (1-minute load average per core), at
    least 1: a quiet machine keeps the bound as written, one at load 12 on 2 cores multiplies it by 6."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
