"""Which SQS calls were answered on the direct path to the local endpoint (shared.adapters.sqs_json)."""

from __future__ import annotations

from shared.adapters.sqs_json import SqsCalls


def record_direct_answers(monkeypatch, answered: list[str]) -> list[str]:
    """From now on (until the test ends), append to ``answered`` the action of every call any
    ``SqsCalls`` answers itself, not through botocore; returns ``answered``."""
    post = SqsCalls._post

    def counted(self, action, params):
        answer = post(self, action, params)
        if answer is not None:
            answered.append(action)
        return answer

    monkeypatch.setattr(SqsCalls, "_post", counted)
    return answered
