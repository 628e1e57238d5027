"""The ``database`` source type: one document per row of an SQL query (SQLAlchemy, any database
it has a driver for: PostgreSQL through psycopg, SQLite built in).

A ``[database]`` table names the database (``url``, without a password: the password is a
secret named by ``password_secret``), the ``query`` giving one row per document, the row's
``key`` column (unique: it makes the document's URL, ``sql://<source>/<key>``), the ``title``
and ``content`` columns, and ``attributes``: columns indexed as typed Solr fields (``salary_d``,
``hired_dt``...). ``display_url`` is the link users follow (``https://hr.example/people/{id}``,
each column's value URL-quoted). The query is read through a server-side cursor, ``batch_size``
rows at a time: a table of any size is listed without holding it. Every connection is made
read-only (PostgreSQL's read-only transactions, SQLite's ``query_only``); give the crawler a
database user that may only read anyway. A PostgreSQL connection that takes over 30 seconds
fails (``?connect_timeout=`` in the URL says otherwise).

Changes and deletions: with ``modified_column`` (a timestamp column, naive values taken as UTC;
on SQLite store them as ``YYYY-MM-DD HH:MM:SS``, the form that sorts as text), the source is
incremental: a maintenance crawl lists only the rows modified since the last complete crawl
began, and a document not listed is asked about with ``keys_query`` (by default the keys of
``query``; a cheaper query may list them, under the key column's name): indexed rows that query
no longer returns are deleted. Without ``modified_column``
every crawl lists every row, and a row's token is a hash of its values: unchanged rows are not
processed again, rows no longer returned are deleted.

A row whose key is NULL is skipped; keys must be unique (a second row with the same key is the
same document, and skipped: one row of the key is it). Both are counted: one WARNING a listing
with the counts, and the run's report (``skipped``). The database tells repeated keys (a count
before each listing); only when some repeat is the listing sorted by key, so that the crawler
holds one key, not every key, whatever the table's size. ``title`` is a column or a list of columns joined by spaces, ``content`` a list
of columns joined by blank lines (the document's text). An attribute whose value is not of its
field's type (``abc`` for ``_i``, a number beyond ``_i``'s 32 bits) is left out of the document.

Readers (who may read each row's document): ``access_column`` names a column holding access
tokens (``user:alice``, ``group:cn=sales,ou=groups,dc=example,dc=org``, ``uid:1001``,
``gid:2001``, ``public``) separated by spaces, commas or semicolons (a new token begins only at a
namespace, so a DN's commas and a group name's spaces stay in it: searchcrawl/agents/grants.py),
or a PostgreSQL array of tokens; ``deny_column`` a column of tokens refused whatever the readers.
``access_query`` gives them per key instead: a SELECT returning the key column (under the key's
name), ``token`` (tokens as in a column) and, optionally, ``kind`` (``allow`` or ``deny``; without
the column every token allows). It is asked once per listing batch (``batch_size`` rows), for the
batch's keys (``WHERE key IN (...)``, a thousand keys a statement), on a connection of its own:
the listing holds one batch's tokens, never the whole table's. A row that names no reader (NULL,
empty, no row of the access query) has no access of its own: the source's ``[access]`` table
says who may read it, and without one it is not indexed (status 927); a default may also be
SQL's (``COALESCE(readers, 'group:staff')``). A row with denied tokens and no reader is read by
nobody. Fail closed: a row with a value that is not a token
(``bob``, ``-user:bob``: deny tokens have their own column or kind), a kind neither allow nor deny,
or a batch whose access query fails, gets an access that allows nobody and says why
(``Reference.access_unreadable``: not indexed, status 927); one WARNING a listing counts those rows, one INFO line those without
readers.
A row's token covers its readers: the column's are among its values, the access query's are
hashed into it. An incremental listing (``modified_column``) sees a change of the access query's
tokens only when the row's modified column moves too: make it follow them (``GREATEST``), or
recrawl. With either option the source's agent gives access (``DatabaseOptions.gives_access``):
the source needs no ``[access]`` table.

Example::

    type = "database"

    [database]
    url = "postgresql+psycopg://crawler@db.example:5432/hr"   # no password here
    password_secret = "HR_DB_PASSWORD"   # the environment variable (or HR_DB_PASSWORD_FILE) holding it
    query = "SELECT p.id, p.name, p.bio, p.skills, d.name AS department, p.updated FROM people p JOIN departments d ON d.id = p.department_id WHERE p.public"
    key = "id"
    title = "name"
    content = ["bio", "skills"]
    attributes = { department = "department_s", updated = "profile_updated_dt" }
    modified_column = "updated"
    keys_query = "SELECT id FROM people WHERE public"
    display_url = "https://hr.example/people/{id}"
    batch_size = 500
    access_query = "SELECT person_id AS id, principal AS token, CASE WHEN denied THEN 'deny' ELSE 'allow' END AS kind FROM people_acl"
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import string
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, ClassVar
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import bindparam, create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, RowMapping, make_url
from sqlalchemy.exc import ArgumentError, DataError, NoSuchModuleError, SQLAlchemyError

from searchcrawl.access.tokens import Access, AccessError, Grant
from searchcrawl.agents.base import Agent, AgentError, Content, DocumentTooLarge, Reference
from searchcrawl.agents.grants import grants_of, split_tokens, unreadable, unreadable_reason
from searchcrawl.content.extract import INT_RANGES, TYPE_SUFFIXES, typed_value
from searchcrawl.system.secrets import URL_PASSWORD, SecretError, checked_secret_name, redact, remember, required_secret

logger = logging.getLogger(__name__)

TABLE = "[database]"
CREDENTIALS_IN_URL = (
    "expected a URL without password: credentials do not belong in a source file, which may be "
    "committed to a repository (name the secret holding the password in 'password_secret')"
)
SOLR_FIELD = re.compile(r"[a-z][a-z0-9_]*_(s|ss|t|i|l|d|dt|b)")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A display URL's scheme and host are the template's own: a column's value cannot choose them.
DISPLAY_URL_HEAD = re.compile(r"https?://[^/?#{}\s]+[/?#]")
KINDS = {suffix: kind for kind, suffix in TYPE_SUFFIXES.items()}  # "_dt" -> "date"
CONTENT_TYPE = "text/plain; charset=utf-8"
# PostgreSQL drivers on libpq: how long a connection may take unless the URL says (connect_timeout=)
LIBPQ_DRIVERS = frozenset({"psycopg", "psycopg2"})
CONNECT_TIMEOUT = 30
# ``gone`` and the access query ask about this many keys per query: databases bound a
# statement's parameters.
GONE_CHUNK = 1000
ACCESS_KINDS = ("allow", "deny")


class _UrlWithPassword(str):
    """What validation sees instead of a URL holding a password, so that no error echoes it."""


class DatabaseOptions(BaseModel):
    """The ``[database]`` table of a source file."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    url: str = Field(min_length=1)
    password_secret: str | None = None
    query: str = Field(min_length=1)
    key: str = Field(min_length=1)
    title: str | list[str] | None = None
    content: list[str] = Field(min_length=1)
    attributes: dict[str, str] = Field(default_factory=dict)
    modified_column: str | None = Field(default=None, min_length=1)
    keys_query: str | None = None
    display_url: str | None = None
    batch_size: int = Field(default=500, ge=1, le=100_000)
    access_column: str | None = Field(default=None, min_length=1)
    deny_column: str | None = Field(default=None, min_length=1)
    access_query: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _hide_password(cls, data: Any) -> Any:
        """A URL with a password is replaced before any validation, so that no error message
        (nor a ValidationError's ``input``) holds it; its password is masked in logs."""
        if isinstance(data, Mapping) and isinstance(data.get("url"), str):
            try:
                url = make_url(data["url"])
            except (ArgumentError, ValueError):  # a bad port, say: its password is hidden all the same
                if URL_PASSWORD.search(data["url"]):
                    return {**data, "url": _UrlWithPassword("<a URL with a password>")}
                return data
            if url.password is not None or any("pass" in name.lower() for name in url.query):
                if url.password:
                    remember(str(url.password))
                return {**data, "url": _UrlWithPassword("<a URL with a password>")}
        return data

    @field_validator("url", mode="before")
    @classmethod
    def _url(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # the type's own error
        if isinstance(value, _UrlWithPassword):
            raise ValueError(CREDENTIALS_IN_URL)
        try:
            url = make_url(value)
        except (ArgumentError, ValueError):  # messages may quote the URL
            raise ValueError("expected an SQLAlchemy URL such as 'postgresql+psycopg://crawler@db.example/hr'") from None
        try:
            url.get_dialect()
        except (NoSuchModuleError, ImportError):
            raise ValueError(f"expected a database SQLAlchemy knows, got {url.drivername!r}") from None
        return value

    @field_validator("password_secret")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        return checked_secret_name(value)

    @field_validator("query", "keys_query", "access_query")
    @classmethod
    def _select(cls, value: str | None) -> str | None:
        """A query is used as a subquery: one statement, without its final ';'."""
        if value is None:
            return None
        value = value.strip().rstrip(";").rstrip()
        if not re.match(r"(select|with)\b", value, re.IGNORECASE):
            raise ValueError("expected a SELECT statement")
        return value

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: dict[str, str]) -> dict[str, str]:
        for column, field_name in value.items():
            if not SOLR_FIELD.fullmatch(field_name):
                raise ValueError(
                    f"expected a Solr field name with its type's suffix (_s _ss _t _i _l _d _dt _b) for column {column!r}, "
                    f"such as 'department_s', got {field_name!r}"
                )
        fields = list(value.values())
        if len(set(fields)) != len(fields):
            raise ValueError("expected each Solr field for one column only")
        return value

    @field_validator("display_url")
    @classmethod
    def _display_url(cls, value: str | None) -> str | None:
        if value is not None:
            template_fields(value)
        return value

    @model_validator(mode="after")
    def _access(self) -> DatabaseOptions:
        if self.access_column and self.access_query:
            raise ValueError("expected access_column or access_query, not both (a query may read the column too)")
        if self.deny_column and not self.access_column:
            raise ValueError("expected access_column beside deny_column (the readers of the row)")
        if self.deny_column and self.deny_column == self.access_column:
            raise ValueError("expected a deny_column other than access_column")
        return self

    def database_urls(self) -> list[tuple[str, str]]:
        """The database the source reads, by key (config/own_places.py refuses the installation's own)."""
        return [("url", self.url)]

    @property
    def gives_access(self) -> bool:
        """Whether each row carries its readers (a column or the access query)."""
        return self.access_column is not None or self.access_query is not None

    @property
    def title_columns(self) -> list[str]:
        if self.title is None:
            return []
        return [self.title] if isinstance(self.title, str) else list(self.title)

    def columns(self) -> list[str]:
        """Every column the options name: the query must return them all."""
        named = [self.key, *self.title_columns, *self.content, *self.attributes]
        named.extend(column for column in (self.access_column, self.deny_column) if column)
        if self.modified_column:
            named.append(self.modified_column)
        if self.display_url:
            named.extend(template_fields(self.display_url))
        return list(dict.fromkeys(named))


def template_fields(template: str) -> list[str]:
    """The columns a display URL template names. ValueError unless every field is a plain column
    name (``{id}``): no attribute or index access (``{0.__class__}``), conversion or format
    spec, and unless the scheme and host are the template's own (http or https)."""
    if not DISPLAY_URL_HEAD.match(template):
        raise ValueError(
            "expected an http(s) URL template whose scheme and host are fixed, such as 'https://hr.example/people/{id}'"
        )
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError("expected a URL template with {column} fields ('{{' and '}}' for braces)") from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if not IDENTIFIER.fullmatch(name) or spec or conversion:
            raise ValueError(f"expected {{column}} fields naming a column (letters, digits, '_'), got {{{name}}}")
        names.append(name)
    return names


# -- values -----------------------------------------------------------------------------------


def utc_datetime(value: object) -> datetime | None:
    """A column's date or time as an aware UTC datetime (naive values are UTC; ISO text, as
    SQLite returns it, is read; numbers are Unix seconds), None when it is none."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    elif isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        try:
            value = datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    elif isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


def solr_date(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def column_text(value: object) -> str:
    """A column's value as text: dates in ISO UTC, bytes as UTF-8, booleans as true/false."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime, date)):
        moment = utc_datetime(value)
        return solr_date(moment) if moment else ""
    return str(value)


def attribute_value(value: object, field_name: str) -> Any:
    """A column's value as the type of the Solr field ``field_name`` names by its suffix, or None
    when it has none or is not of that type (the field is left out, as Solr would refuse the
    whole document)."""
    if value is None:
        return None
    kind = KINDS["_" + field_name.rsplit("_", 1)[1]]
    if kind == "strings" and isinstance(value, (list, tuple)):
        items = [column_text(item) for item in value if item is not None]
        return [item for item in items if item] or None
    if kind in INT_RANGES and isinstance(value, (float, Decimal)):
        if not math.isfinite(value) or value != int(value):
            return None
        value = int(value)
    if kind == "date":
        moment = utc_datetime(value)
        return solr_date(moment) if moment else None
    try:
        result = typed_value(column_text(value), kind)  # an int or long beyond Solr's: ValueError
    except ValueError:
        return None
    if kind == "double" and not math.isfinite(result):
        return None
    if kind in ("string", "text") and not result:
        return None
    return result


def joined(row: RowMapping, columns: Iterable[str], separator: str) -> str:
    """The non-empty values of ``columns`` joined by ``separator``."""
    parts = (column_text(row[column]).strip() for column in columns if row[column] is not None)
    return separator.join(part for part in parts if part)


def row_token(row: RowMapping) -> str:
    """A hash of the row's values: it changes when any value does."""
    digest = hashlib.sha256()
    for name, value in row.items():
        if isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        digest.update(f"{name}\x1f{type(value).__name__}\x1f{value!r}\x1e".encode("utf-8", errors="surrogatepass"))
    return digest.hexdigest()


# -- access -------------------------------------------------------------------------------------


def column_tokens(value: object) -> list[str]:
    """The tokens a column's value holds, as written: an array's items (PostgreSQL's ``text[]``)
    one token each, any other value's text split (``grants.split_tokens``: spaces, commas or
    semicolons before a namespace), NULL none."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = (column_text(item).strip() for item in value if item is not None)
        return [item for item in items if item]
    return split_tokens(column_text(value))


def row_name(key: str) -> str:
    return f"row {key[:100]!r}"


class QueriedTokens:
    """The tokens ``access_query`` gave one key (rows of ``token`` and, when the query has it,
    ``kind``: allow or deny), and the first of its rows that was not readable: then the key's
    access is unreadable, never what the other rows allowed."""

    def __init__(self, key: str) -> None:
        self.where = row_name(key)
        self.allow: list[Grant] = []
        self.deny: list[Grant] = []
        self.error: str | None = None

    def add(self, token: object, kind: object = "allow") -> None:
        if self.error is not None:
            return
        kind_text = column_text(kind).strip().lower() if kind is not None else "NULL"
        if kind_text not in ACCESS_KINDS:
            self.error = f"the access query's kind {kind_text[:40]!r} for {self.where} is neither allow nor deny"
            return
        try:
            grants = grants_of(column_tokens(token), f"access query of {self.where} ({kind_text})")
        except AccessError as error:
            self.error = f"the access query's token for {self.where}: {error}"
            return
        (self.allow if kind_text == "allow" else self.deny).extend(grants)

    def access(self) -> Access | None:
        """The key's access; None when the query gave it no token (the source's ``[access]`` says)."""
        if self.error is not None:
            return unreadable(self.error)
        return Access.of(self.allow, self.deny) if self.allow or self.deny else None


def access_hash(access: Access | None) -> str:
    """A short hash of an access, its origins and names too: part of a row's token when its
    tokens come from the access query, so that a change of them alone is a change of the row."""
    data = None if access is None else access.to_data()
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


class AccessSeen:
    """What a listing found of its rows' readers: rows that name none (the source's ``[access]``
    says), rows whose access is unreadable (invalid tokens, a failed access query)."""

    def __init__(self) -> None:
        self.unnamed = 0
        self.unreadable = 0

    def count(self, access: Access | None, key: str) -> None:
        why = unreadable_reason(access)
        if access is None:
            self.unnamed += 1
            logger.debug("%s: no reader named: the source's [access] says", row_name(key))
        elif why is not None:
            self.unreadable += 1
            logger.debug("%s: access unreadable, not indexed: %s", row_name(key), why)
        elif not access.levels[0].allow:
            logger.debug("%s: denied tokens and no reader: read by nobody", row_name(key))


class KeysSeen:
    """What a listing passed over: rows without key, and rows whose key the row before had. The
    listing is sorted by key when the database says keys repeat, so one key (the last) is all it
    keeps: constant memory, whatever the table's size."""

    def __init__(self) -> None:
        self.without_key = 0
        self.repeated = 0
        self._last: str | None = None

    @property
    def skipped(self) -> int:
        return self.without_key + self.repeated

    def first(self, key: str) -> bool:
        """Whether a row with ``key`` is the first with it (rows sorted by key); counts it otherwise."""
        if key == self._last:
            self.repeated += 1
            return False
        self._last = key
        return True


# -- the agent ----------------------------------------------------------------------------------


class DatabaseAgent(Agent):
    """Rows of an SQL query as documents. Thread-safe: the listing and each fetch take their own
    connection from the engine's pool."""

    scheme: ClassVar[str] = "sql"
    Options: ClassVar[type[BaseModel]] = DatabaseOptions

    def __init__(self, source: str, options: BaseModel) -> None:
        if not isinstance(options, DatabaseOptions):
            raise TypeError(f"expected DatabaseOptions, got {type(options).__name__}")
        super().__init__(source, options)
        self.settings = options
        self.incremental = options.modified_column is not None  # per source, not per class
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._password: str | None = None
        url = make_url(options.url)
        self._where = url.render_as_string(hide_password=True)
        self._backend = url.get_backend_name()
        self._display_fields = template_fields(options.display_url) if options.display_url else []
        self._keys = KeysSeen()  # the last listing's: what it skipped
        self._access_seen = AccessSeen()  # the last listing's: rows without readers, or unreadable

    # -- connections --------------------------------------------------------------------------

    def engine(self) -> Engine:
        """The engine, made at first use: the password secret is read when the agent connects,
        not when the source file is validated."""
        with self._lock:
            if self._engine is None:
                url: URL = make_url(self.settings.url)
                if self.settings.password_secret:
                    try:
                        self._password = required_secret(self.settings.password_secret, TABLE)
                    except SecretError as exc:
                        raise AgentError(str(exc)) from None
                    url = url.set(password=self._password)
                connect_args: dict[str, Any] = {}
                if url.get_driver_name() in LIBPQ_DRIVERS and "connect_timeout" not in url.query:
                    connect_args["connect_timeout"] = CONNECT_TIMEOUT  # else a silent host blocks the crawl for minutes
                try:
                    engine = create_engine(url, pool_pre_ping=True, hide_parameters=True, connect_args=connect_args)
                except (SQLAlchemyError, ImportError) as exc:
                    raise AgentError(self._describe(exc, "connecting")) from None
                event.listen(engine, "connect", _read_only_session(self._backend))
                self._engine = engine
            return self._engine

    @contextmanager
    def _connection(self, doing: str) -> Iterator[Connection]:
        """A pooled connection; database errors as AgentError saying what failed, never a secret."""
        engine = self.engine()
        try:
            with engine.connect() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise AgentError(self._describe(exc, doing)) from None

    def _describe(self, exc: BaseException, doing: str) -> str:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        message = f"{TABLE} {doing} failed on {self._where}: {detail[0] if detail else type(exc).__name__}"
        if self._password:
            message = message.replace(self._password, "***")
        return redact(message)

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None

    # -- SQL ------------------------------------------------------------------------------------

    def _quoted(self, column: str) -> str:
        return self.engine().dialect.identifier_preparer.quote(column)

    def _check_columns(self, found: Iterable[str]) -> None:
        found = list(found)
        missing = [column for column in self.settings.columns() if column not in found]
        if missing:
            raise AgentError(
                f"{TABLE} the query returns no column {', '.join(map(repr, missing))} (its columns: {', '.join(map(repr, found))})"
            )

    def _since(self, since: datetime) -> datetime:
        """``since`` as the database compares it: aware for PostgreSQL (sessions are in UTC),
        naive UTC for the others (SQLite's text timestamps)."""
        moment = since.replace(tzinfo=UTC) if since.tzinfo is None else since.astimezone(UTC)
        return moment if self._backend == "postgresql" else moment.replace(tzinfo=None)

    # -- the Agent interface ----------------------------------------------------------------------

    def references(self, since: datetime | None) -> Iterator[Reference]:
        """Every row's reference, or with ``modified_column`` and ``since``, those modified since,
        read ``batch_size`` rows at a time through a server-side cursor; with ``access_query``,
        each batch's readers asked for in one query per thousand keys of the batch."""
        options = self.settings
        listed = 0
        keys = self._keys = KeysSeen()
        seen = self._access_seen = AccessSeen()
        with self._connection("listing") as connection:
            rows = self._rows(connection, since)
            batches = _batched(rows, options.batch_size) if options.access_query else ([row] for row in rows)
            for batch in batches:
                queried = self._queried_access(batch) if options.access_query else {}
                for _raw_key, key, row in batch:
                    listed += 1
                    yield self._reference(row, key, queried.get(key))
        logger.info(
            "%s: %d rows listed from %s%s", self.source, listed, self._where, f" (modified since {since})" if since else ""
        )
        if keys.skipped:
            logger.warning(
                "%s: %d rows of %s skipped: %d with a NULL key (column %r), %d with a key an earlier row had "
                "(one row of a key is its document); the run's report counts them as skipped",
                self.source,
                keys.skipped,
                self._where,
                keys.without_key,
                options.key,
                keys.repeated,
            )
        if seen.unreadable:
            logger.warning(
                "%s: of the %d rows listed, %d have unreadable readers (invalid tokens, a failed access query): not indexed (927)",
                self.source,
                listed,
                seen.unreadable,
            )
        if seen.unnamed:
            logger.info(
                "%s: of the %d rows listed, %d name no reader: the source's [access] table says who may read them "
                "(without one, they are not indexed)",
                self.source,
                listed,
                seen.unnamed,
            )

    def _rows(self, connection: Connection, since: datetime | None) -> Iterator[tuple[Any, str, RowMapping]]:
        """The listing's rows with a key, each key once: (the key's value, its text, the row)."""
        options = self.settings
        query, params = options.query, {}
        if since is not None and options.modified_column:
            query = f"SELECT * FROM ({options.query}) AS q WHERE {self._quoted(options.modified_column)} > :since"
            params = {"since": self._since(since)}
        keys = self._keys
        if self._keys_repeat(connection, query, params):  # the rows of a key together: see KeysSeen
            query = f"SELECT * FROM ({query}) AS listing ORDER BY {self._quoted(options.key)}"
        statement = text(query).bindparams(**params)  # typed as the column's (SQLite's text timestamps)
        result = connection.execution_options(stream_results=True, yield_per=options.batch_size).execute(statement)
        self._check_columns(result.keys())
        for row in result.mappings():
            raw_key = row[options.key]
            if raw_key is None:
                keys.without_key += 1
                continue
            key = column_text(raw_key)
            if not keys.first(key):
                logger.debug("%s: a second row with key %r is skipped", self.source, key[:200])
                continue
            yield raw_key, key, row

    def skipped(self) -> int:
        return self._keys.skipped

    def _keys_repeat(self, connection: Connection, query: str, params: dict[str, Any]) -> bool:
        """Whether two rows of the listing have one key. The database counts, in a pass over the
        keys, so that the listing holds no set of keys: only when some repeat is it sorted by key
        (the database sorts on disk what its memory does not hold)."""
        column = self._quoted(self.settings.key)
        counting = text(f"SELECT COUNT({column}) - COUNT(DISTINCT {column}) FROM ({query}) AS listing")
        repeated = connection.execute(counting.bindparams(**params)).scalar() or 0
        if repeated:
            logger.debug("%s: %d rows repeat an earlier row's key: the listing is sorted by key", self.source, repeated)
        return bool(repeated)

    def fetch(self, key: str, max_bytes: int) -> Content | None:
        """The row's content, read again by its key (None when it is gone)."""
        statement = text(f"SELECT * FROM ({self.settings.query}) AS q WHERE {self._quoted(self.settings.key)} = :key")
        with self._connection("reading a row") as connection:
            try:
                result = connection.execute(statement, {"key": key})
            except DataError:  # a key that is not of the column's type: no such row
                logger.debug("%s: key %r is not of the key column's type: no row", self.source, key)
                return None
            self._check_columns(result.keys())
            row = result.mappings().first()
        if row is None:
            return None
        content = self._content(row)
        if max_bytes and len(content.body) > max_bytes:
            raise DocumentTooLarge(f"{len(content.body)} bytes")
        return content

    def gone(self, keys: Sequence[str]) -> Iterable[str]:
        """The keys ``keys_query`` no longer returns (one query per thousand keys)."""
        options = self.settings
        column = self._quoted(options.key)
        keys_query = options.keys_query or f"SELECT {column} FROM ({options.query}) AS listing"
        statement = text(f"SELECT {column} FROM ({keys_query}) AS k WHERE {column} IN :keys").bindparams(
            bindparam("keys", expanding=True)
        )
        wanted = list(dict.fromkeys(keys))
        present: set[str] = set()
        with self._connection("asking which rows are gone") as connection:
            for start in range(0, len(wanted), GONE_CHUNK):
                chunk = wanted[start : start + GONE_CHUNK]
                values: Iterable[object] = connection.execute(statement, {"keys": chunk}).scalars()
                present.update(column_text(value) for value in values if value is not None)
        missing = [key for key in wanted if key not in present]
        logger.debug("%s: %d of %d keys asked about are gone", self.source, len(missing), len(wanted))
        return missing

    # -- rows -------------------------------------------------------------------------------------

    def _reference(self, row: RowMapping, key: str, queried: Access | None = None) -> Reference:
        """The row's reference; its access from ``access_column`` or, when the access query gave
        it, ``queried`` (None: the query gave the key no token, the source's ``[access]`` says)."""
        options = self.settings
        fields: dict[str, Any] = {}
        title = joined(row, options.title_columns, " ")
        if title:
            fields["title"] = title
        display_url = self._display_url(row)
        if display_url:
            fields["display_url"] = display_url
        for column, field_name in options.attributes.items():
            value = attribute_value(row[column], field_name)
            if value is not None:
                fields[field_name] = value
        modified = utc_datetime(row[options.modified_column]) if options.modified_column else None
        if modified is not None:
            fields["last_modified"] = solr_date(modified)
            # the time says when to list it, the hash whether it changed: an edit that keeps the
            # column's value (a trigger-less update, a coarse clock) is still an edit
            token = f"{modified.isoformat()}:{row_token(row)[:16]}"
        else:
            token = row_token(row)
        access: Access | None = None
        if options.access_column:
            access = self._column_access(row, key)  # its tokens are in the row's hash
        elif options.access_query:
            access = queried
            token = f"{token}:{access_hash(access)}"
        if options.gives_access:
            self._access_seen.count(access, key)
        why = unreadable_reason(access)  # not indexed (status 927), never public
        return Reference(
            key=key,
            token=token,
            modified=modified,
            fields=fields,
            content=self._content(row),
            access=None if why else access,
            access_unreadable=why,
        )

    def _column_access(self, row: RowMapping, key: str) -> Access | None:
        """The readers in ``access_column`` and the denied in ``deny_column`` (None when both
        are empty: the source's ``[access]`` says); unreadable when one of them is not a token
        (fail closed: a deny dropped would show what it hides)."""
        where = row_name(key)
        found: list[tuple[Grant, ...]] = []
        for column in (self.settings.access_column, self.settings.deny_column):
            try:
                found.append(grants_of(column_tokens(row[column]), f"column {column} of {where}") if column else ())
            except AccessError as error:
                return unreadable(f"column {column} of {where}: {error}")
        allow, deny = found
        return Access.of(allow, deny) if allow or deny else None

    def _queried_access(self, batch: Sequence[tuple[Any, str, RowMapping]]) -> dict[str, Access | None]:
        """The access of each key of a listing's batch from ``access_query``, asked on a
        connection of its own (the listing's cursor stays open on its own), a thousand keys a
        query. A query that fails makes the batch's access unreadable: shown to no one."""
        options = self.settings
        column = self._quoted(options.key)
        statement = text(f"SELECT * FROM ({options.access_query}) AS acl WHERE {column} IN :keys").bindparams(
            bindparam("keys", expanding=True)
        )
        tokens = {key: QueriedTokens(key) for _raw, key, _row in batch}
        raw_keys = list({key: raw for raw, key, _row in batch}.values())
        try:
            with self.engine().connect() as connection:
                for start in range(0, len(raw_keys), GONE_CHUNK):
                    result = connection.execute(statement, {"keys": raw_keys[start : start + GONE_CHUNK]})
                    names = list(result.keys())
                    missing = [name for name in (options.key, "token") if name not in names]
                    if missing:
                        why = f"the access query returns no column {', '.join(map(repr, missing))} (its columns: {', '.join(map(repr, names))})"
                        return self._unreadable_batch(tokens, why)
                    has_kind = "kind" in names
                    for row in result.mappings():
                        found = tokens.get(column_text(row[options.key])) if row[options.key] is not None else None
                        if found is not None:
                            found.add(row["token"], row["kind"] if has_kind else "allow")
        except SQLAlchemyError as exc:
            return self._unreadable_batch(tokens, self._describe(exc, "the access query"))
        return {key: found.access() for key, found in tokens.items()}

    def _unreadable_batch(self, tokens: Mapping[str, QueriedTokens], why: str) -> dict[str, Access | None]:
        logger.warning("%s: %s: the access of %d rows is unreadable, they are not indexed", self.source, why, len(tokens))
        return dict.fromkeys(tokens, unreadable(why))

    def _content(self, row: RowMapping) -> Content:
        body = joined(row, self.settings.content, "\n\n").encode("utf-8", errors="replace")
        return Content(body=body, content_type=CONTENT_TYPE, name=None)

    def _display_url(self, row: RowMapping) -> str | None:
        template = self.settings.display_url
        if not template:
            return None
        if any(row[name] is None for name in self._display_fields):
            return None
        return template.format_map({name: quote(column_text(row[name]), safe="") for name in self._display_fields})


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last shorter)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _read_only_session(backend: str) -> Any:
    """A ``connect`` listener making each new connection read-only (and PostgreSQL's in UTC, so
    that naive timestamps compare with ``since`` as UTC)."""

    def listener(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            if backend == "postgresql":
                cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                cursor.execute("SET TIME ZONE 'UTC'")
            elif backend == "sqlite":
                cursor.execute("PRAGMA query_only = ON")
        finally:
            cursor.close()
        if backend == "postgresql":
            dbapi_connection.commit()

    return listener
