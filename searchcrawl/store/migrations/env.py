"""Alembic environment: runs migrations on the connection that DocumentTable hands over."""

from alembic import context

from searchcrawl.store.models import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
