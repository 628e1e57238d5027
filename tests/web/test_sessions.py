"""Administrator sessions: credentials, expiry, bound, CSRF tokens, flashes."""

from __future__ import annotations

from types import SimpleNamespace

from searchcrawl.web.sign_on import sessions
from searchcrawl.web.sign_on.sessions import (
    FREE_FAILURES,
    GLOBAL_FAILURES_PER_MINUTE,
    MAX_CLIENTS,
    MAX_DELAY,
    LoginThrottle,
    Sessions,
)


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
    now = [1000.0]  # the sessions' clock, moved by the test (no fixed sleep)
    monkeypatch.setattr(sessions, "time", SimpleNamespace(monotonic=lambda: now[0]))
    store = Sessions(("admin", "s3cret-pass"), lifetime=0.05)
    token = store.login("admin")
    now[0] += 0.04
    assert store.get(token) is not None
    now[0] += 0.02
    assert store.get(token) is None
    monkeypatch.setattr(sessions, "MAX_SESSIONS", 3)
    store = Sessions(("admin", "s3cret-pass"))
    tokens = [store.login("admin") for _ in range(5)]
    assert [store.get(token) is not None for token in tokens] == [False, False, True, True, True]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_clients_failed_logins_double_its_wait_and_a_success_ends_it() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(FREE_FAILURES):
        assert throttle.wait("10.0.0.1") == 0
        throttle.failed("10.0.0.1")
    waits = []
    for _ in range(4):
        waits.append(throttle.wait("10.0.0.1"))
        clock.now += waits[-1]
        throttle.failed("10.0.0.1")
    assert waits == [1.0, 2.0, 4.0, 8.0]
    assert throttle.wait("10.0.0.2") == 0  # another client is not slowed down
    for _ in range(40):
        throttle.failed("10.0.0.1")
    assert throttle.wait("10.0.0.1") == MAX_DELAY
    throttle.succeeded("10.0.0.1")
    assert throttle.wait("10.0.0.1") == 0


def test_many_clients_failing_together_slow_every_login_for_the_minute() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock)
    for number in range(GLOBAL_FAILURES_PER_MINUTE):
        throttle.failed(f"10.0.{number // 256}.{number % 256}")
    assert throttle.wait("192.0.2.1") == 60
    clock.now += 30
    assert throttle.wait("192.0.2.1") == 30
    clock.now += 30
    assert throttle.wait("192.0.2.1") == 0


def test_the_clients_remembered_are_bounded() -> None:
    throttle = LoginThrottle(Clock())
    for number in range(MAX_CLIENTS + 10):
        throttle.failed(str(number))
    assert len(throttle) == MAX_CLIENTS
