"""The query analytics store on the session's real PostgreSQL server: the tests of
tests.store.test_searches that take a ``backend`` (there on SQLite) run here on PostgreSQL."""

import pytest

from tests.store.test_searches import (  # noqa: F401 - the tests of a ``backend``, run here with this module's
    test_a_purge_of_more_than_one_chunk_deletes_them_all_a_chunk_a_transaction,
    test_completions_are_frequent_queries_that_found_something_with_the_prefix_taken_literally,
    test_purge_deletes_searches_and_clicks_older_than_the_retention,
    test_the_reports_agree_with_an_oracle,
)


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def test_a_search_with_nul_is_logged_and_a_row_postgresql_refuses_loses_only_itself(postgres_url: str) -> None:
    """PostgreSQL refuses NUL in text: a query holding one (q=harbour%00) is logged with a space
    for it, and a row that still holds one (written by a caller that did not clean it) is lost
    alone, not with the other searches of its batch."""
    from sqlalchemy import select

    from searchcrawl.store import Database
    from searchcrawl.store.models import search_clicks, searches
    from searchcrawl.store.searches import Searches
    from searchcrawl.web.analytics import Analytics

    database = Database(postgres_url)
    with database.engine.begin() as connection:
        connection.execute(search_clicks.delete())
        connection.execute(searches.delete())
    log = Analytics(lambda: Searches(database), days=30)
    first = log.record("harbour\x00", [("type", "text\x00/html")], hits=2)
    queued = [log._queue.get_nowait() for _ in range(1)]
    raw = dict(queued[0][1], id="f" * 32, query="raw\x00", normalized="raw")
    batch = [*queued, ("search", raw), *(("search", dict(queued[0][1], id=f"{n:032x}")) for n in range(10))]
    log.write(batch)
    with database.engine.connect() as connection:
        written = {row.id: row.query for row in connection.execute(select(searches.c.id, searches.c.query))}
    assert written[first] == "harbour " and "f" * 32 not in written and len(written) == 11
    assert (log.written, log.dropped) == (11, 1)
    database.close()
