"""Secrets: Solr and scrapyd credentials and database passwords.

They come from the environment, either as the value (``SEARCHCRAWL_SOLR_PASSWORD``) or as a
file holding it (``SEARCHCRAWL_SOLR_PASSWORD_FILE``, e.g. a Docker or systemd credential), never
from source files (which may be committed to a repository) nor from Scrapy settings (which
Scrapy logs and scrapyd shows in its process list). Every secret read here, and the password
of any ``scheme://user:password@host`` URL, is replaced by ``***`` in every log record.
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

SOLR_USERNAME, SOLR_PASSWORD = "SEARCHCRAWL_SOLR_USERNAME", "SEARCHCRAWL_SOLR_PASSWORD"
DB_PASSWORD = "SEARCHCRAWL_DB_PASSWORD"
SCRAPYD_USERNAME, SCRAPYD_PASSWORD = "SEARCHCRAWL_SCRAPYD_USERNAME", "SEARCHCRAWL_SCRAPYD_PASSWORD"
SECRET_NAMES = (SOLR_PASSWORD, DB_PASSWORD, SCRAPYD_PASSWORD)
MASK = "***"
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+(?=@)", re.IGNORECASE)

_known: set[str] = set()


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
        _known.add(value)
        return value
    return None


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
        _known.add(password)
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=host)), (parts.username, password)


def redact(text: str) -> str:
    """``text`` with every known secret and every URL password masked."""
    text = URL_PASSWORD.sub(lambda match: match["head"] + MASK, text)
    for value in _known:
        if value in text:
            text = text.replace(value, MASK)
    return text


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
