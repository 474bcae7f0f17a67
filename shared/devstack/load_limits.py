"""The brakes on one consumer, raised for a dev stack that is driven hard on purpose.

The brakes on one key and one tenant are on by default with production values (shared/config.py:
a request rate per key, unfinished jobs per tenant, waiters per key and tenant, job calls in
flight per API process and per tenant, jobs processing per tenant). A load test or a throughput
bench drives one key of one tenant with many clients at once: it measures capacity, not the
brakes, so it starts its dev stack with these in its environment. The brakes themselves are
measured with the defaults (bench/burst.py, tests/e2e/test_abuse_brakes.py).
"""

RAISED_LIMITS: dict[str, str] = {
    "SHEETCALC_CONSUMER_RATE_LIMIT": "10000000",
    "SHEETCALC_TENANT_MAX_UNFINISHED_JOBS": "1000000",
    "SHEETCALC_TENANT_MAX_UNFINISHED_BATCH_JOBS": "1000000",
    "SHEETCALC_CONSUMER_MAX_WAITERS": "1000",
    "SHEETCALC_TENANT_MAX_WAITERS": "1000",
    "SHEETCALC_API_MAX_JOB_CALLS": "1000",
    "SHEETCALC_API_MAX_JOB_CALLS_PER_TENANT": "1000",
    # one tenant's many jobs at once are the load, not a neighbour to be held back
    "SHEETCALC_TENANT_MAX_CONCURRENT_JOBS": "0",
}
