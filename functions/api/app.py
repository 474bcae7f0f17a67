"""API Lambda: API Gateway (HTTP API) events into the FastAPI app."""

from mangum import Mangum

from shared.api.app import create_app
from shared.observability import instrument
from shared.secrets import load_secrets_into_env

load_secrets_into_env()
handler = instrument(Mangum(create_app(), lifespan="off"))
