"""The HTTP edge: FastAPI routers over the services, errors mapped once."""
