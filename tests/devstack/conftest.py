"""What the dev stack's tests share: a local AWS (moto server) of their own, per module."""

import pytest

from shared.devstack.local_aws import LocalAws, start_local_aws


@pytest.fixture(scope="module")
def aws() -> LocalAws:
    """A moto server for S3 and SQS of this module's own, stopped after it."""
    stack = start_local_aws()
    yield stack
    stack.stop()
