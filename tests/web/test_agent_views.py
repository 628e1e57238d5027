"""The agent endpoint's logging (web/agent_views.py): a tool call is one line at INFO, the endpoint's
own; the protocol SDK's lines of every request are written at DEBUG (issue 91: each tool call logged
two more lines at INFO, "Processing request of type CallToolRequest" and "Terminating session: None")."""

from __future__ import annotations

import logging

import pytest

from searchcrawl.web.agent_views import SDK_REQUEST_LOGGERS, sdk_lines_at_debug


def test_the_sdks_lines_of_every_request_are_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    sdk_lines_at_debug()
    sdk_lines_at_debug()  # once a process, however many applications are made
    assert all(len(logging.getLogger(name).filters) == 1 for name in SDK_REQUEST_LOGGERS)
    caplog.set_level(logging.INFO)
    for name in SDK_REQUEST_LOGGERS:
        logging.getLogger(name).info("Processing request of type %s", "CallToolRequest")
        logging.getLogger(name).warning("Something the operator must see")
    logging.getLogger("searchcrawl.web.agent_views").info("Agent search by token %r (%s): %d hits", "t", "public", 1)
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ("WARNING", "Something the operator must see"),
        ("WARNING", "Something the operator must see"),
        ("INFO", "Agent search by token 't' (public): 1 hits"),
    ]
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    logging.getLogger(SDK_REQUEST_LOGGERS[1]).info("Terminating session: %s", None)
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [("DEBUG", "Terminating session: None")]
