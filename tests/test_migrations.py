"""The Alembic migrations build exactly the schema the models describe, on this run's database."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from shared.db.models import Base
from shared.db.session import get_engine


def test_models_and_migrations_agree(local_aws):
    with get_engine().connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []
