"""Shaping what the services return (rows, small dataclasses) into response bodies, one module
per resource as in ``shared.api.schemas``. Routers call a service, then a presenter; nothing else
builds a body."""
