"""Administrator sessions: credentials, expiry, bound, CSRF tokens, flashes."""

from __future__ import annotations

import time

from searchcrawl.web import sessions
from searchcrawl.web.sessions import Sessions


def test_off_without_a_password() -> None:
    assert not Sessions(None).enabled and not Sessions(("admin", "")).enabled
    assert not Sessions(None).check("admin", "")
    assert Sessions(None).get(Sessions(None).login("admin")) is None


def test_login_check_session_and_csrf() -> None:
    store = Sessions(("admin", "s3cret-pass"))
    assert store.check("admin", "s3cret-pass")
    assert not store.check("admin", "s3cret-pas") and not store.check("Admin", "s3cret-pass")
    token = store.login("admin")
    session = store.get(token)
    assert session is not None and session.user == "admin"
    assert Sessions.csrf_ok(session, session.csrf)
    assert not Sessions.csrf_ok(session, None) and not Sessions.csrf_ok(session, session.csrf + "x")
    assert not Sessions.csrf_ok(None, session.csrf)
    assert store.get("forged") is None
    store.flash(token, "done")
    assert store.take_flash(token) == "done" and store.take_flash(token) == ""
    store.logout(token)
    assert store.get(token) is None


def test_sessions_expire_and_are_bounded(monkeypatch) -> None:
    store = Sessions(("admin", "s3cret-pass"), lifetime=0.05)
    token = store.login("admin")
    time.sleep(0.1)
    assert store.get(token) is None
    monkeypatch.setattr(sessions, "MAX_SESSIONS", 3)
    store = Sessions(("admin", "s3cret-pass"))
    tokens = [store.login("admin") for _ in range(5)]
    assert [store.get(token) is not None for token in tokens] == [False, False, True, True, True]
