"""Secrets: Solr and scrapyd credentials, database passwords, the directory's service account.

They come from the environment, either as the value (``SEARCHCRAWL_SOLR_PASSWORD``) or as a
file holding it (``SEARCHCRAWL_SOLR_PASSWORD_FILE``, e.g. a Docker or systemd credential), never
from source files (which may be committed to a repository) nor from Scrapy settings (which
Scrapy logs and scrapyd shows in its process list). Every secret read here, and the password
of any ``scheme://user:password@host`` URL, is replaced by ``***`` in every log record. So is the
value of any setting whose name says it is a secret (``HTTPAUTH_PASS``, ``MY_API_TOKEN``, see
``is_secret_name``): next to its name in a printed dict (Scrapy's "Overridden settings:" line),
and anywhere once ``remember_settings`` has read it (the SecretSettings extension does, for
every crawl).
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

SOLR_USERNAME, SOLR_PASSWORD = "SEARCHCRAWL_SOLR_USERNAME", "SEARCHCRAWL_SOLR_PASSWORD"
DB_PASSWORD = "SEARCHCRAWL_DB_PASSWORD"
SCRAPYD_USERNAME, SCRAPYD_PASSWORD = "SEARCHCRAWL_SCRAPYD_USERNAME", "SEARCHCRAWL_SCRAPYD_PASSWORD"
# the login of the web application's administration pages (`scrapy web`)
WEB_USERNAME, WEB_PASSWORD = "SEARCHCRAWL_WEB_USERNAME", "SEARCHCRAWL_WEB_PASSWORD"
# the password of the service account that looks up searchers' principals (access/directory.py)
LDAP_BIND_PASSWORD = "SEARCHCRAWL_LDAP_BIND_PASSWORD"
# issue 60: the notifications' SMTP password, webhook URLs (they may hold a token) and signing secret
NOTIFY_SECRETS = ("SEARCHCRAWL_SMTP_PASSWORD", "SEARCHCRAWL_NOTIFY_WEBHOOK_URL", "SEARCHCRAWL_NOTIFY_WEBHOOK_SECRET")
# issue 79: single sign-on's client secret (web/sign_on/oidc.py)
OIDC_CLIENT_SECRET = "SEARCHCRAWL_OIDC_CLIENT_SECRET"
SECRET_NAMES = (
    SOLR_PASSWORD,
    DB_PASSWORD,
    SCRAPYD_PASSWORD,
    WEB_PASSWORD,
    LDAP_BIND_PASSWORD,
    *NOTIFY_SECRETS,
    OIDC_CLIENT_SECRET,
)
MASK = "***"
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?=@)", re.IGNORECASE)
# A name that says its value is a secret. User names (HTTPAUTH_USER, FTP_USER) are not secrets,
# nor are HTTPPROXY_AUTH_ENCODING (an encoding's name) and FTP_PASSIVE_MODE (a switch).
_SECRET_WORDS = r"PASS(?!IVE)|TOKEN|SECRET|KEY|CREDENTIAL"
SECRET_NAME = re.compile(_SECRET_WORDS, re.IGNORECASE)
# 'NAME': in a printed dict (pprint, repr, JSON) when NAME is secret-ish; its value follows
QUOTED_SECRET_NAME = re.compile(rf"""(['"])[^'"\n]*?(?:{_SECRET_WORDS})[^'"\n]*\1\s*:[ \t]*""", re.IGNORECASE)
# Values not remembered as secrets: masking every "on" or "1" of every line would ruin the log
# and, by where the masks fall, show the value anyway; a secret so short is no secret.
MIN_SECRET_LENGTH = 4
NOT_SECRETS = frozenset({"true", "false", "none", "null"})  # switches, however named

_known: set[str] = set()
_longest_first: tuple[str, ...] = ()  # _known, so that a secret holding another is masked whole


class SecretError(Exception):
    """A secret's file cannot be read; the message names the variable, never the value."""


def secret(name: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The secret ``name`` from the environment or from the file ``<name>_FILE`` names."""
    value = environ.get(name)
    if value is None and environ.get(f"{name}_FILE"):
        path = environ[f"{name}_FILE"]
        try:
            with open(path, encoding="utf-8") as handle:
                value = handle.read().rstrip("\r\n")
        except OSError as exc:
            raise SecretError(f"{name}_FILE: cannot read {path}: {exc.strerror}") from None
    if value:
        remember(value)
        return value
    return None


def remember(value: str) -> None:
    """Mask ``value`` in every later log line (unless it is too short to be a secret)."""
    global _longest_first
    if len(value) < MIN_SECRET_LENGTH or value.lower() in NOT_SECRETS or value in _known:
        return
    _known.add(value)
    _longest_first = tuple(sorted(_known, key=len, reverse=True))


def is_secret_name(name: str) -> bool:
    """Whether a setting (or dict key) named ``name`` holds a secret: PASS(WORD), TOKEN, SECRET,
    KEY or CREDENTIAL in any case anywhere in it."""
    return SECRET_NAME.search(name) is not None


VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def checked_secret_name(value: str | None) -> str | None:
    """A source's ``..._secret`` key: the NAME of the environment variable holding the secret,
    never the secret itself; ValueError saying so."""
    if value is not None and not VARIABLE_NAME.fullmatch(value):
        raise ValueError("expected the NAME of an environment variable holding the password (letters, digits, '_')")
    return value


def required_secret(name: str, needed_by: str) -> str:
    """The secret ``name``, which ``needed_by`` (a source's table, for the message) cannot do
    without: SecretError, naming it (never a value), when it cannot be read or is not set."""
    value = secret(name)
    if not value:
        raise SecretError(f"the secret {name} (or {name}_FILE) of {needed_by} is not set")
    return value


def secret_values(settings: Mapping[str, object]) -> Iterator[str]:
    """The strings held under secret-ish names in ``settings`` (a Scrapy BaseSettings or any
    mapping), at any depth: ``{"SERVICES": {"api_token": "..."}}`` too."""
    for name, value in settings.items():
        if isinstance(name, str) and is_secret_name(name):
            yield from _strings(value)
        elif isinstance(value, Mapping):
            yield from secret_values(value)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item)


def secret_files(*places: Mapping[str, object]) -> dict[str, str]:
    """The files secrets are read from, by the variable or setting naming each: a secret's
    ``<name>_FILE`` (``SEARCHCRAWL_DB_PASSWORD_FILE``, a source's ``password_secret``'s when its
    name says it is a secret) and any setting of a secret-ish name that names a file
    (``SEARCHCRAWL_METRICS_KEYFILE``), in ``places`` (the environment, the settings)."""
    found: dict[str, str] = {}
    for place in places:
        for name, value in place.items():
            if not (isinstance(name, str) and name.endswith("FILE") and isinstance(value, str) and value):
                continue
            if is_secret_name(name) or name.removesuffix("_FILE") in SECRET_NAMES:
                found[name] = value
    return found


def remember_settings(settings: Mapping[str, object]) -> None:
    """Mask the values of ``settings``' secret-ish settings in every later log line."""
    for value in secret_values(settings):
        remember(value)


def credentials(username_var: str, password_var: str, environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """(user, password) for HTTP basic auth, or None when no user name is configured."""
    username = environ.get(username_var)
    if not username:
        return None
    return username, secret(password_var, environ) or ""


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``http://user:pw@host/x`` -> (``http://host/x``, (user, pw)): credentials never travel
    (or get logged) as part of a URL."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    password = parts.password or ""
    if password:
        remember(password)
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=host)), (parts.username, password)


def redact(text: str) -> str:
    """``text`` with every known secret, every URL password and the value of every secret-ish
    ``'NAME': value`` pair masked."""
    text = URL_PASSWORD.sub(lambda match: match["head"] + MASK, text)
    if ":" in text:
        text = _mask_secret_pairs(text)
    for value in _longest_first:
        if value in text:
            text = text.replace(value, MASK)
    return text


def _mask_secret_pairs(text: str) -> str:
    """``{'HTTPAUTH_PASS': 'x', 'API_KEYS': ['y', ...]}`` -> ``{'HTTPAUTH_PASS': ***, 'API_KEYS': ***}``:
    the value whole, even when pprint splits a long string over lines or it is a container."""
    parts: list[str] = []
    done = 0
    for match in QUOTED_SECRET_NAME.finditer(text):
        if match.start() < done:
            continue  # inside a value masked already
        end = _value_end(text, match.end())
        if end > match.end():
            parts += [text[done : match.end()], MASK]
            done = end
    return "".join(parts) + text[done:] if parts else text


_CLOSING = {"(": ")", "[": "]", "{": "}"}
_NEXT_STRING_PART = re.compile(r"""\s*[bBrRuU]{0,2}(?=['"])""")


def _value_end(text: str, start: int) -> int:
    """Where the Python or JSON literal starting at ``start`` ends: after its closing bracket or
    its last string (pprint splits a long string into several on as many lines), else at the
    ``,``, closing bracket or line end that follows a bare word."""
    position, depth = start, 0
    while position < len(text):
        char = text[position]
        if char in "'\"":
            position = _string_end(text, position)
            if depth == 0:
                following = _NEXT_STRING_PART.match(text, position)
                if following is None:
                    return position
                position = following.end()  # the next part of the same string
            continue
        if char in _CLOSING:
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return position
            depth -= 1
            if depth == 0:
                return position + 1
        elif depth == 0 and char in ",\n":
            return position
        position += 1
    return position


def _string_end(text: str, start: int) -> int:
    quote, position = text[start], start + 1
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
        elif char == quote:
            return position + 1
        else:
            position += 1
    return position


class RedactingLogRecord(logging.LogRecord):
    """A log record whose message is masked when a handler formats it. Most records (DEBUG ones
    under LOG_LEVEL=INFO, such as Scrapy's "Scraped from" with the whole item) are never
    formatted, so they cost no masking."""

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        return redact(super().getMessage())


def install_log_redaction() -> None:
    """Mask secrets in every log record, whichever handler (console, file, scrapyd's log) writes
    it. Idempotent. Reads the configured secrets first, so they are masked from the first line."""
    for name in SECRET_NAMES:
        try:
            secret(name)
        except SecretError:
            pass  # reported where the secret is used
    previous = logging.getLogRecordFactory()
    if getattr(previous, "searchcrawl_redacts", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if type(record) is logging.LogRecord:
            record.__class__ = RedactingLogRecord  # same layout; masks at format time
        else:  # another factory's record class: mask now
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a broken format string is logging's business
                return record
            clean = redact(message)
            if clean != message:
                record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
        return record

    factory.searchcrawl_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
