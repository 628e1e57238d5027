"""The query analytics store on the session's real PostgreSQL server: the tests of
tests.store.test_searches that take a ``backend`` (there on SQLite) run here on PostgreSQL."""

import pytest

from tests.store.test_searches import (  # noqa: F401 - the tests of a ``backend``, run here with this module's
    test_completions_are_frequent_queries_that_found_something_with_the_prefix_taken_literally,
    test_purge_deletes_searches_and_clicks_older_than_the_retention,
    test_the_reports_agree_with_an_oracle,
)


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param
