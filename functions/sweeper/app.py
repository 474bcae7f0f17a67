"""Sweeper Lambda: on a schedule (template.yaml, EventBridge), queue again the jobs, webhooks and
version checks whose messages were lost after their rows were committed (``shared.services.sweeper``).

The scheduled event carries nothing the sweep needs; the answer is the count of each kind queued
again, which also goes to the log.
"""

from shared.observability import instrument
from shared.services import sweeper


@instrument
def handler(event: dict, context) -> dict:
    return sweeper.sweep().as_dict()
