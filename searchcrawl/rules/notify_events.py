"""What a run's end tells the person on call (issue 60): its events, and their messages.

Plain functions, no I/O: ``detect_events`` reads a run's facts (``EndedRun``: what the project
records of it, its state and reason, its counters, its delta report, the status of every URL it
fetched, the deletions the mass-deletion guard held, the documents it could not get into Solr)
and names the events in it; ``build_message`` writes one event as a plain-text mail and a JSON
document. The notifier (searchcrawl/ops/notifier.py) sends them.

The events (``EventKind``), each at most once per run and channel:

- ``run_ended``: the run ended (finished, stopped or failed); off unless asked for;
- ``run_failed``: the run failed, or its crawl did (a start error, a crash: a close reason no
  crawl is asked to end with), whatever the run's state (it may be left to resume);
- ``deletions_held``: the mass-deletion guard held the run's deletions (confirm with ``-a delete=force``);
- ``login_refused``: sites refused the source's credentials (status 936);
- ``tls_failed``: TLS handshakes failed (status 937) or the proxy did (938);
- ``solr_unreachable``: Solr could not be reached or refused a push: documents stay pending;
- ``tika_unreachable``: the document converter could not be reached (status 926);
- ``documents_dropped``: the source's documents in the index fell by more than ``drop_share``.

Never a secret in a message: URLs lose their user name, password, query and fragment
(``safe_url``); the run's reason and every text pass through the log's redaction (the known
secrets, URL passwords); source files hold no secrets (config/source.py refuses them in seeds).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator

from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.tables import RuleTable
from searchcrawl.system.secrets import redact
from searchcrawl.system.translations import N_, gettext


class EventKind(StrEnum):
    RUN_ENDED = "run_ended"
    RUN_FAILED = "run_failed"
    DELETIONS_HELD = "deletions_held"
    LOGIN_REFUSED = "login_refused"
    TLS_FAILED = "tls_failed"
    SOLR_UNREACHABLE = "solr_unreachable"
    TIKA_UNREACHABLE = "tika_unreachable"
    DOCUMENTS_DROPPED = "documents_dropped"
    RUN_STALLED = "run_stalled"  # told by `scrapy summary --check` (ops/stalls.py), not by a run's end


# the events as the pages name them (worded where shown: ``event_label``); the settings, the
# webhook's X-Searchcrawl-Event header and the logs keep the names themselves
EVENT_LABELS: dict[str, str] = {
    EventKind.RUN_ENDED: N_("run ended"),
    EventKind.RUN_FAILED: N_("run failed"),
    EventKind.DELETIONS_HELD: N_("deletions held"),
    EventKind.LOGIN_REFUSED: N_("login refused"),
    EventKind.TLS_FAILED: N_("TLS failed"),
    EventKind.SOLR_UNREACHABLE: N_("Solr unreachable"),
    EventKind.TIKA_UNREACHABLE: N_("Tika unreachable"),
    EventKind.DOCUMENTS_DROPPED: N_("documents dropped"),
    EventKind.RUN_STALLED: N_("run stalled"),
}


def event_label(event: str) -> str:
    """A notification's event as a page shows it, in the current language; an unknown one as it is."""
    return gettext(EVENT_LABELS[event]) if event in EVENT_LABELS else event


# a source file's names of them (the TOML's strings: the tables are strict)
EventName = Literal[
    "run_ended",
    "run_failed",
    "deletions_held",
    "login_refused",
    "tls_failed",
    "solr_unreachable",
    "tika_unreachable",
    "documents_dropped",
    "run_stalled",
]
DEFAULT_EVENTS = tuple(kind.value for kind in EventKind if kind != EventKind.RUN_ENDED)
CHANNELS = ("mail", "webhook")
TERMINAL_STATES = ("finished", "stopped", "failed")  # a suspended run goes on later: not its end
LOGIN_STATUSES = (int(Status.AUTH_REFUSED),)
TLS_STATUSES = (int(Status.TLS_FAILED), int(Status.PROXY_FAILED))
TIKA_STATUSES = (int(Status.CONVERTER_UNAVAILABLE),)
EXAMPLES = 5  # URLs named per event, at most
TITLES = {
    EventKind.RUN_ENDED: "run ended",
    EventKind.RUN_FAILED: "run failed",
    EventKind.DELETIONS_HELD: "deletions held by the mass-deletion guard",
    EventKind.LOGIN_REFUSED: "logins refused",
    EventKind.TLS_FAILED: "TLS or proxy failures",
    EventKind.SOLR_UNREACHABLE: "Solr out of reach",
    EventKind.TIKA_UNREACHABLE: "Tika out of reach",
    EventKind.DOCUMENTS_DROPPED: "documents dropped",
    EventKind.RUN_STALLED: "run stalled",
}


assert set(get_args(EventName)) == {kind.value for kind in EventKind}


class NotifyTable(RuleTable):
    """A source file's ``[notify]`` table (docs/notifications.md): which events of this source are
    sent (default: SEARCHCRAWL_NOTIFY_EVENTS), on which channels (default: every configured one),
    to which more mail addresses, and the share of documents whose loss is an event."""

    events: list[EventName] | None = None
    channels: list[str] | None = None
    mail_to: list[str] = Field(default_factory=list)
    drop_share: float | None = Field(default=None, gt=0, le=1)

    @field_validator("channels")
    @classmethod
    def _known_channels(cls, channels: list[str] | None) -> list[str] | None:
        for channel in channels or ():
            if channel not in CHANNELS:
                raise ValueError(f"unknown channel {channel!r} (known: {', '.join(CHANNELS)})")
        return channels

    @field_validator("mail_to")
    @classmethod
    def _addresses(cls, addresses: list[str]) -> list[str]:
        for address in addresses:
            check_address(address)
        return addresses


def check_address(address: str) -> str:
    """A plain mail address (``ops@example.org``): no name, no list, no header injection."""
    if address.count("@") != 1 or any(char in address for char in '\r\n,;<>" \t') or len(address) > 254:
        raise ValueError(f"expected a mail address such as 'ops@example.org', got {address!r}")
    return address


@dataclass(frozen=True)
class EndedRun:
    """What the project records of a run, at its end."""

    source: str
    run_id: int
    state: str
    reason: str
    mode: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    counters: Mapping[str, Any] = field(default_factory=dict)
    delta: Mapping[str, int] = field(default_factory=dict)
    statuses: Mapping[int, int] = field(default_factory=dict)  # the run's URLs by status
    examples: Mapping[int, Sequence[str]] = field(default_factory=dict)  # a few URLs per status
    held: int = 0  # deletions the mass-deletion guard held
    not_indexed: int = 0  # documents left pending: Solr failed
    solr_failures: int = 0  # pushes that failed during the crawl
    in_index: int = 0  # the source's documents in the index after the run
    test_mode: bool = False
    # the crawl failed whatever the run's state (a start error leaves its run to resume): its
    # close reason is none a crawl is asked to end with (`scrapy crawl` exits 1 for it)
    crawl_failed: bool = False
    error: str = ""  # the first ERROR line the crawl logged (ErrorLines), masked; "" when none
    errors: int = 0  # how many ERROR lines it logged


@dataclass(frozen=True)
class RunEvent:
    kind: EventKind
    summary: str  # one sentence, no secret
    count: int = 0
    statuses: tuple[int, ...] = ()  # the statuses it is about (examples)


def _count(statuses: Mapping[int, int], codes: Sequence[int]) -> int:
    return sum(statuses.get(code, 0) for code in codes)


def dropped_share(facts: EndedRun) -> float:
    """The share of the source's documents the run took out of the index, net of what entered:
    (before - after) / before, where before = after + deleted - new."""
    new, deleted = facts.delta.get("new", 0), facts.delta.get("deleted", 0)
    before = facts.in_index + deleted - new
    return (before - facts.in_index) / before if before > 0 else 0.0


def _run_ended(facts: EndedRun) -> RunEvent | None:
    if facts.state not in TERMINAL_STATES:
        return None
    return RunEvent(EventKind.RUN_ENDED, f"run {facts.run_id} of {facts.source} is {facts.state} ({facts.reason})")


def _run_failed(facts: EndedRun) -> RunEvent | None:
    if facts.state != "failed" and not facts.crawl_failed:
        return None
    why = f": {facts.error}" if facts.error else "; the log says why"
    return RunEvent(
        EventKind.RUN_FAILED,
        f"the crawl of {facts.source} failed ({facts.reason}) in run {facts.run_id}, now {facts.state}{why}",
    )


def _deletions_held(facts: EndedRun) -> RunEvent | None:
    if not facts.held:
        return None
    return RunEvent(
        EventKind.DELETIONS_HELD,
        f"the mass-deletion guard held {facts.held} deletions of {facts.source}: they stay in the index until "
        f"a crawl with -a delete=force confirms them",
        facts.held,
    )


def _status_event(kind: EventKind, codes: tuple[int, ...], summary: str, facts: EndedRun) -> RunEvent | None:
    """The event ``kind`` when URLs of the run ended with one of ``codes``: ``summary`` told with
    their ``{count}`` and the ``{source}``."""
    count = _count(facts.statuses, codes)
    return RunEvent(kind, summary.format(count=count, source=facts.source), count, codes) if count else None


def _solr_unreachable(facts: EndedRun) -> RunEvent | None:
    if not (facts.not_indexed or facts.solr_failures) or facts.test_mode:
        return None
    return RunEvent(
        EventKind.SOLR_UNREACHABLE,
        f"Solr failed during run {facts.run_id} of {facts.source}: {facts.not_indexed} documents stay "
        "cached and pending; the next crawl pushes them first",
        facts.not_indexed,
    )


def _documents_dropped(facts: EndedRun, drop_share: float) -> RunEvent | None:
    share = dropped_share(facts)
    if share > drop_share and not facts.test_mode:  # (a NaN share or limit: no event)
        return RunEvent(
            EventKind.DOCUMENTS_DROPPED,
            f"the documents of {facts.source} in the index fell by {share:.0%} in run {facts.run_id} "
            f"(more than {drop_share:.0%}): {facts.in_index} now",
            facts.delta.get("deleted", 0),
        )
    return None


# one detector a kind of event, in the order the events are told (the documents dropped last: it
# needs the configured share)
DETECTORS: tuple[Callable[[EndedRun], RunEvent | None], ...] = (
    _run_ended,
    _run_failed,
    _deletions_held,
    functools.partial(
        _status_event,
        EventKind.LOGIN_REFUSED,
        LOGIN_STATUSES,
        "sites refused the credentials of {source} for {count} URLs (status 936): their documents stay as indexed",
    ),
    functools.partial(
        _status_event,
        EventKind.TLS_FAILED,
        TLS_STATUSES,
        "{count} URLs of {source} failed in the TLS handshake or at the proxy (status 937, 938)",
    ),
    _solr_unreachable,
    functools.partial(
        _status_event,
        EventKind.TIKA_UNREACHABLE,
        TIKA_STATUSES,
        "the document converter (Tika) could not be reached for {count} documents of {source} (status 926): "
        "tried again in the next crawl",
    ),
)


def detect_events(facts: EndedRun, drop_share: float) -> list[RunEvent]:
    """The events of a run that ended (every kind; the caller keeps those configured)."""
    events = [event for detect in DETECTORS if (event := detect(facts)) is not None]
    if (dropped := _documents_dropped(facts, drop_share)) is not None:
        events.append(dropped)
    return events


def safe_url(url: str) -> str:
    """``url`` fit for a message: no user name or password, no query string or fragment (where
    session ids, tokens and signatures travel)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    host = parts.netloc.rsplit("@", 1)[-1]
    return redact(urlunsplit((parts.scheme, host, parts.path, "", "")))


def status_text(code: int) -> str:
    try:
        return f"{code} {Status(code).name.lower()}"
    except ValueError:
        return str(code)


def failure_statuses(statuses: Mapping[int, int]) -> dict[int, int]:
    """The statuses that are failures (HTTP 4xx and 5xx, the crawler's 920 and above), by code."""
    return {code: count for code, count in sorted(statuses.items()) if 400 <= code < 900 or code >= 920}


@dataclass(frozen=True)
class Message:
    subject: str
    text: str
    data: dict[str, Any]

    def json(self) -> bytes:
        return json.dumps(self.data, sort_keys=True, default=str).encode()


def admin_link(base_url: str, path: str = "") -> str:
    """The administration page ``/admin<path>``, when a base URL is configured (its credentials
    and query dropped); "" otherwise."""
    return f"{safe_url(base_url).rstrip('/')}/admin{path}" if base_url else ""


def run_link(base_url: str, run_id: int) -> str:
    """The admin page of the run, when a base URL is configured (its credentials and query dropped)."""
    return admin_link(base_url, f"/runs/{run_id}")


def build_message(facts: EndedRun, event: RunEvent, base_url: str = "", installation: str = "searchcrawl") -> Message:
    """One event of a run as a mail's subject and text, and a webhook's JSON."""
    title = TITLES[event.kind]
    reason = redact(facts.reason)
    failures = {status_text(code): count for code, count in failure_statuses(facts.statuses).items()}
    examples = [safe_url(url) for code in event.statuses for url in facts.examples.get(code, ())][:EXAMPLES]
    link = run_link(base_url, facts.run_id)
    counters = {key: value for key, value in facts.counters.items() if isinstance(value, int | float)}
    data: dict[str, Any] = {
        "installation": installation,
        "event": event.kind.value,
        "title": title,
        "summary": redact(event.summary),
        "source": facts.source,
        "run": facts.run_id,
        "state": facts.state,
        "reason": reason,
        "mode": facts.mode,
        "started": facts.started.isoformat() if facts.started else None,
        "ended": facts.ended.isoformat() if facts.ended else None,
        "count": event.count,
        "counters": counters,
        "delta": dict(facts.delta),
        "failures": failures,
        "examples": examples,
        "link": link or None,
        "error": redact(facts.error) or None,
        "errors": facts.errors,
    }
    lines = [
        redact(event.summary)[:1].upper() + redact(event.summary)[1:] + ".",
        "",
        f"Source:   {facts.source}",
        f"Run:      {facts.run_id} ({facts.mode or 'crawl'}), {facts.state}: {reason}",
        *_fact_lines(facts, counters, failures),
    ]
    if examples:
        lines += ["", "For example:", *(f"  {url}" for url in examples)]
    if link:
        lines += ["", f"The run: {link}"]
    lines += ["", f"-- {installation}, `scrapy status {facts.source}` and `scrapy report {facts.source}` say more"]
    subject = f"[{installation}] {facts.source}: {title} (run {facts.run_id})"
    return Message(redact(subject), redact("\n".join(lines)) + "\n", data)


def _fact_lines(facts: EndedRun, counters: dict[str, int | float], failures: dict[str, int]) -> list[str]:
    """The text's lines of what is known of the run: its times, its first error, its counts,
    changes and failures (each only when there is one)."""
    lines = []
    if facts.started:
        lines.append(f"Started:  {facts.started:%Y-%m-%d %H:%M:%S %Z}")
    if facts.ended:
        lines.append(f"Ended:    {facts.ended:%Y-%m-%d %H:%M:%S %Z}")
    if facts.error:
        more = facts.errors - 1
        lines.append(f"Error:    {redact(facts.error)}" + (f" (and {more} more ERROR lines in the log)" if more > 0 else ""))
    if counters:
        lines.append("Counts:   " + ", ".join(f"{key} {value}" for key, value in sorted(counters.items())))
    if facts.delta:
        lines.append("Changes:  " + ", ".join(f"{key} {value}" for key, value in sorted(facts.delta.items())))
    if failures:
        lines.append("Failures: " + ", ".join(f"{key}: {value}" for key, value in failures.items()))
    return lines
