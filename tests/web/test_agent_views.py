"""The agent endpoint's logging (web/views/agent_views.py): a tool call is one line at INFO, the endpoint's
own; the protocol SDK's lines of every request are written at DEBUG (issue 91: each tool call logged
two more lines at INFO, "Processing request of type CallToolRequest" and "Terminating session: None")."""

from __future__ import annotations

import logging

import pytest

from searchcrawl.web.views.agent_views import SDK_REQUEST_LOGGERS, sdk_lines_at_debug


def test_the_sdks_lines_of_every_request_are_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    sdk_lines_at_debug()
    sdk_lines_at_debug()  # once a process, however many applications are made
    assert all(len(logging.getLogger(name).filters) == 1 for name in SDK_REQUEST_LOGGERS)
    caplog.set_level(logging.INFO)
    logging.getLogger(SDK_REQUEST_LOGGERS[0]).info("Processing request of type %s", "CallToolRequest")
    logging.getLogger(SDK_REQUEST_LOGGERS[1]).info("Terminating session: None")  # an f-string there
    for name in SDK_REQUEST_LOGGERS:
        logging.getLogger(name).warning("Something the operator must see")
    logging.getLogger("searchcrawl.web.views.agent_views").info("Agent search by token %r (%s): %d hits", "t", "public", 1)
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ("WARNING", "Something the operator must see"),
        ("WARNING", "Something the operator must see"),
        ("INFO", "Agent search by token 't' (public): 1 hits"),
    ]
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    logging.getLogger(SDK_REQUEST_LOGGERS[1]).info("Terminating session: %s", None)
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [("DEBUG", "Terminating session: None")]


def test_the_sdks_other_lines_keep_their_level(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 91 (review of point 21): only the two lines of every request move to DEBUG, as
    docs/answers.md says; the SDK's other INFO lines (a warning a handler raised, a cancelled
    request) are not every request's, and stay at INFO."""
    sdk_lines_at_debug()
    caplog.set_level(logging.INFO)
    lowlevel, transport = (logging.getLogger(name) for name in SDK_REQUEST_LOGGERS)
    lowlevel.info("Warning: %s: %s", "DeprecationWarning", "a handler's warning")
    lowlevel.info("Request %s cancelled - duplicate response suppressed", 7)
    lowlevel.info("Processing request of type %s", "CallToolRequest")
    transport.info("Terminating session: None")
    transport.info("Session %s closed by the client", "abc")
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ("INFO", "Warning: DeprecationWarning: a handler's warning"),
        ("INFO", "Request 7 cancelled - duplicate response suppressed"),
        ("INFO", "Session abc closed by the client"),
    ]
