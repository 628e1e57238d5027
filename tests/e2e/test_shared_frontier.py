"""FrontierScheduler built alone (as in tests.crawl.test_frontier_scheduler), two nodes of a shared
crawl on one real PostgreSQL database: one run, leases, a starved node woken, a node leaving. The
tests are tests.crawl.test_frontier_scheduler's, there on a SQLite file, here with this module's
``shared_database``."""

from __future__ import annotations

import pytest

from tests.crawl.test_frontier_scheduler import (  # noqa: F401 - the fixtures and the tests of two nodes
    crawler_of,
    test_a_node_leaving_a_shared_run_leaves_its_urls_and_the_runs_end_to_the_others,
    test_a_waiting_node_looks_with_reads_and_leases_only_when_something_is_queued,
    test_nodes_join_one_run_and_a_starved_node_is_woken_by_the_others_links_and_the_runs_end,
    test_renewal_keeps_a_nodes_leases_and_takes_back_a_dead_nodes,
    two_nodes,
)


@pytest.fixture
def shared_database(postgres_url: str) -> str:
    """The session's PostgreSQL database (each test's source has a name of its own)."""
    return postgres_url
