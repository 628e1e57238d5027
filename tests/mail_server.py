"""The tests' IMAP server: searchcrawl/dev/servers/dovecot.py's Dovecot (what tests may rely on is
said there), one a test worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from searchcrawl.dev.servers.dovecot import CRAWLER, USERS, MailServer, dovecot_config

__all__ = ["CRAWLER", "USERS", "MailServer", "dovecot_config", "mail_server"]


@pytest.fixture(scope="session")
def mail_server() -> Iterator[MailServer]:
    """This worker's Dovecot (deploy/bootstrap.sh installs dovecot-imapd)."""
    server = MailServer().start()
    try:
        yield server
    finally:
        server.stop()
