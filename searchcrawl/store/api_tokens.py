"""The JSON API's access tokens (issue 59), made, listed and revoked on the administration pages.

A token is 256 random bits (``sct_`` and 43 URL-safe characters), shown once when it is made;
the table keeps its SHA-256 only, so a copy of the database opens nothing. A request's token is
checked by looking its hash up (the index on ``token_hash``): no comparison of secrets character by
character, so nothing to time. Revoking keeps the row (its name and dates stay on the page);
``last_used`` is written at most once a minute per token, so the API's searches do not become
database writes.
"""

from __future__ import annotations

import builtins
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from secrets import token_urlsafe
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, update

from searchcrawl.store.database import Database, as_utc, now
from searchcrawl.store.models import api_tokens

PREFIX = "sct_"  # searchcrawl token: recognisable in a leaked file, by secret scanners too
MAX_TOKEN_CHARS = 200  # longer than any token made here: not hashed, not looked up
MAX_NAME_CHARS = 200
LAST_USED_EVERY = timedelta(minutes=1)
EXPORTED_COLUMNS = ("name", "token_hash", "on_behalf", "created_at", "expires_at", "last_used", "revoked_at")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True)
class TokenCheck:
    """A token's verdict: ``valid``; else ``reason`` is "unknown", "revoked" or "expired"."""

    reason: str
    name: str = ""
    on_behalf: bool = False
    token_id: int | None = None

    @property
    def valid(self) -> bool:
        return self.reason == "valid"


def token_status(row: dict[str, Any], moment: datetime) -> str:
    """ "valid", "revoked" or "expired" of a token's row at ``moment``."""
    if row["revoked_at"] is not None:
        return "revoked"
    expires = as_utc(row["expires_at"])
    if expires is not None and expires <= moment:
        return "expired"
    return "valid"


class ApiTokens:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.engine = database.engine

    def create(self, name: str, on_behalf: bool = False, expires_at: datetime | None = None) -> tuple[int, str]:
        """A new token: its id and the token itself (to show once; only its hash is kept)."""
        name = name.strip()[:MAX_NAME_CHARS]
        if not name:
            raise ValueError("a token needs a name")
        token = PREFIX + token_urlsafe(32)
        with self.engine.begin() as connection:
            result = connection.execute(
                api_tokens.insert().values(
                    name=name,
                    token_hash=token_hash(token),
                    on_behalf=bool(on_behalf),
                    created_at=now(),
                    expires_at=as_utc(expires_at),
                )
            )
            key = result.inserted_primary_key
            assert key is not None  # an insert of one row
            token_id = int(key[0])
        return token_id, token

    def list(self) -> list[dict[str, Any]]:
        """Every token's row but its hash, newest first, with its ``status`` now."""
        columns = [column for column in api_tokens.c if column.name != "token_hash"]
        with self.engine.connect() as connection:
            rows = connection.execute(select(*columns).order_by(api_tokens.c.id.desc())).mappings().all()
        moment = now()
        listed = []
        for row in rows:
            item = {key: as_utc(value) if isinstance(value, datetime) else value for key, value in row.items()}
            item["status"] = token_status(item, moment)
            listed.append(item)
        return listed

    def exported(self) -> builtins.list[dict[str, Any]]:
        """Every token's row as a backup holds it (ops/configuration_backup.py): its hash, never a token (none is
        kept), name, scope and dates, oldest first."""
        columns = [column for column in api_tokens.c if column.name != "id"]
        with self.engine.connect() as connection:
            rows = connection.execute(select(*columns).order_by(api_tokens.c.id)).mappings().all()
        return [{key: as_utc(value) if isinstance(value, datetime) else value for key, value in row.items()} for row in rows]

    def count(self, connection: Connection | None = None) -> int:
        statement = select(func.count()).select_from(api_tokens)
        if connection is not None:
            return int(connection.execute(statement).scalar_one())
        with self.engine.connect() as own:
            return int(own.execute(statement).scalar_one())

    @staticmethod
    def restore(connection: Connection, rows: builtins.list[dict[str, Any]]) -> None:
        """Insert ``rows`` (``exported``'s, checked by the caller) in the caller's transaction: the
        same hashes, so the restored installation accepts the same tokens."""
        for row in rows:
            connection.execute(api_tokens.insert().values(**{key: row.get(key) for key in EXPORTED_COLUMNS}))

    def revoke(self, token_id: int) -> bool:
        """Revoke a token (kept on the list as revoked); False when there is no such valid token."""
        with self.engine.begin() as connection:
            result = connection.execute(
                update(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.revoked_at.is_(None)).values(revoked_at=now())
            )
        return bool(result.rowcount)

    def check(self, token: str) -> TokenCheck:
        """The verdict on a token a request sent, noting its use (at most every LAST_USED_EVERY)."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return TokenCheck("unknown")
        statement = self.database.statement(
            ("api_tokens", "check"),
            lambda: select(
                api_tokens.c.id,
                api_tokens.c.name,
                api_tokens.c.on_behalf,
                api_tokens.c.expires_at,
                api_tokens.c.revoked_at,
                api_tokens.c.last_used,
            ).where(api_tokens.c.token_hash == bindparam("hash")),
        )
        with self.engine.connect() as connection:
            row = connection.execute(statement, {"hash": token_hash(token)}).mappings().first()
        if row is None:
            return TokenCheck("unknown")
        moment = now()
        reason = token_status(dict(row), moment)
        if reason == "valid":
            last = as_utc(row["last_used"])
            if last is None or moment - last >= LAST_USED_EVERY:
                with self.engine.begin() as connection:
                    connection.execute(update(api_tokens).where(api_tokens.c.id == row["id"]).values(last_used=moment))
        return TokenCheck(reason, str(row["name"]), bool(row["on_behalf"]), int(row["id"]))
