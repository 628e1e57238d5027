"""IMAP's access lists (RFC 4314, as Dovecot applies them; Cyrus's identifiers too) as who may read
a folder's messages: what an ``imap`` source is indexed with (agents/imap.py, which reads the
lists with GETACL and keeps the protocol and the listing), beside every other foreign access
format of access/.

An identifier with the ``r`` right reads; one listed without ``r`` takes it from whom it names
(``_without_read``); one with a negative ``r`` (``-bob``) is denied, whatever the groups grant; the
crawl's account is nobody's reader. ``$name`` (a Dovecot group) and ``group:name`` (Cyrus) are
``group_token``, ``anyone`` and ``anonymous`` ``anyone_token``, ``authenticated``
``authenticated_token`` (none by default: such a grant is left out), ``owner`` and every other
identifier ``user_token``. Dovecot matches its global entries (``#``) against the name each reader
sees, so a folder of a user's own mailbox has its list read twice, under the owner's name and
under the others' (``mailbox_access``). An entry whose meaning as tokens is not certain
(``Unmappable``: ``_entry_token``, ``folder_access``) keeps the folder from everyone: fail closed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from searchcrawl.access.tokens import PUBLIC, Access, AccessError, Grant, normal_token, unique_grants

logger = logging.getLogger("searchcrawl.agents.imap")  # the imap source's log, where its decisions are read


class MailboxNames(Protocol):
    """What an access list's identifiers are read with: the crawl's account and the token
    templates of an ``imap`` source (agents/imap.py ``ImapOptions``)."""

    @property
    def username(self) -> str: ...

    @property
    def user_token(self) -> str: ...

    @property
    def group_token(self) -> str: ...

    @property
    def anyone_token(self) -> str | None: ...

    @property
    def authenticated_token(self) -> str | None: ...


_IDENTIFIER = re.compile(r"[A-Za-z0-9._-]{1,128}")  # a name as a token keeps its meaning (no @, \\, DN syntax)


class Unmappable(Exception):
    """An access list entry whose meaning as tokens is not certain: the folder is shown to no one."""


@dataclass
class _FolderGrants:
    """What a folder's entries grant and deny, as ``folder_access`` reads them, entry by entry."""

    options: MailboxNames
    owner: str | None
    where: str
    allow: list[Grant] = field(default_factory=list)
    deny: list[Grant] = field(default_factory=list)
    late: list[Grant] = field(default_factory=list)  # denies that a user's or group's own grant overrides
    overriding: list[Grant] = field(default_factory=list)
    owner_listed: bool = False

    def entry(self, identifier: str, rights: str) -> None:
        """One entry (raises Unmappable when its meaning is not certain)."""
        options, owner = self.options, self.owner
        name, negative, global_entry = _identifier(identifier)
        if name.startswith("!"):  # Dovecot's group-override (even one taking rights away) beats user entries
            raise Unmappable(f"{identifier} {rights}: a group-override, which tokens cannot say")
        if name == options.username:
            # the crawl's own account is nobody's reader; an entry that denies it or does not let it
            # read may be Dovecot's rewriting of "owner" for another login: not certain
            if negative or "r" not in rights:
                raise Unmappable(f"{identifier} {rights}: an entry of the crawl's own account that does not read")
            return
        if owner is not None and name in ("owner", owner):
            self.owner_listed = self.owner_listed or not negative
        origin = f"IMAP ACL of {self.where}: {identifier} {rights}"
        if "r" not in rights:
            taken = None if negative else _without_read(name, global_entry, options, owner)
            if taken is not None:
                logger.debug("imap: %s: %s %s takes reading from %s", self.where, identifier, rights, taken[0])
                (self.late if taken[1] else self.deny).append(Grant.of(taken[0], origin))
            return
        if global_entry and owner is not None and not negative and name not in ("owner", owner):
            logger.debug(
                "imap: %s: the global entry %s %s grants %s's own view of the folder only: left out",
                self.where,
                identifier,
                rights,
                owner,
            )
            return
        self.reads(name, negative, origin, f"{identifier} {rights}")

    def reads(self, name: str, negative: bool, origin: str, entry: str) -> None:
        """An entry with ``r``: its token reads (or, negative, is denied)."""
        token = _entry_token(name, self.options, self.owner)
        if token is None:
            if negative:  # a deny that cannot be written would show what it hides
                raise Unmappable(f"{entry}: a negative right of no token (authenticated_token is not set)")
            logger.debug("imap: %s: %r reads, and is no one's token (authenticated_token is not set): left out", self.where, name)
            return
        grant = Grant.of(token, origin)
        (self.deny if negative else self.allow).append(grant)
        if not negative and name not in ("anyone", "anonymous", "authenticated"):
            self.overriding.append(grant)

    def owners_own(self) -> None:
        """The owner of a mailbox reads its folders unless an entry of theirs says otherwise."""
        if self.owner is not None and not self.owner_listed:
            grant = Grant.of(
                self.options.user_token.replace("{id}", self.owner), f"IMAP: {self.where} is {self.owner}'s own mailbox"
            )
            self.allow.append(grant)
            self.overriding.append(grant)


def folder_access(
    entries: Sequence[tuple[str, str]], options: MailboxNames, owner: str | None, where: str
) -> tuple[Access | None, str | None]:
    """The access of a folder's messages from its RFC 4314 entries (identifier, rights): its
    readers and those denied; ``owner``: the user whose own mailbox it is. (None, why) when an
    entry's meaning is not certain (see ``_entry_token``): the folder's messages are shown to no one.

    Rights as Dovecot builds them (``acl_object_rebuild_cache``): the entries matching a reader
    are applied by kind (anyone, authenticated, groups, owner, user), the folder's own before
    the global file's, and each kind replaces what the kinds before it gave; groups add up.
    So an entry without ``r`` takes reading from whom it names (``_without_read``), and a global
    entry (``#``) replaces even the owner's implicit rights.

    Dovecot's global entries of a user's own mailbox grant the owner alone: Dovecot matches the
    global file's patterns against the name each reader sees, and the crawl, logged in for the
    owner, sees the owner's (``Reports``), never the one others see (``shared/bob/Reports``),
    which may match no pattern. What they take away is kept (fail closed)."""
    found = _FolderGrants(options, owner, where)
    try:
        for identifier, rights in entries:
            found.entry(identifier, rights)
        found.owners_own()
    except (AccessError, Unmappable) as error:
        return None, f"the IMAP access list of {where} holds an entry that is no token ({error})"
    access = Access.of(found.allow, found.deny, name=f"IMAP folder {where}")
    if found.late:
        access = replace(access, late_deny=unique_grants(found.late), overriding=unique_grants(found.overriding))
    return access, None


def mailbox_access(
    own: Sequence[tuple[str, str]],
    others: Sequence[tuple[str, str]] | None,
    options: MailboxNames,
    owner: str,
    where: str,
) -> tuple[Access | None, str | None]:
    """The access of a folder of ``owner``'s own mailbox from its two access lists: ``own``, read
    under the owner's name (``Reports``), and ``others``, read under the name the other users see
    (``shared/bob/Reports``; None where the server has no such namespace: nobody else opens it).

    Dovecot matches its global file's patterns against the name each reader sees, so the lists
    differ by the global entries one name matches and the other does not; each reader's rights
    come from the list of the name they see (the owner cannot open his own under the others'
    name). The index holds one rule for all, so: the others' list is taken whole (as a public
    folder's: its global entries are theirs), without its entries for the owner; the owner
    reads where his own list lets him whatever his groups are but for the denies both lists hold
    (the index's for all, so his too), else his user token is denied (a global entry without
    ``r`` of his name only that names a group or everyone: fail closed, for the owner alone).
    Entries naming other users alone are left out of the owner's reading."""
    whole, why = folder_access(own, options, owner, where)  # every entry a token, or no one reads
    if whole is None:
        return None, why
    mine, why = folder_access([entry for entry in own if _concerns_owner(entry[0], options, owner)], options, owner, where)
    if mine is None:
        return None, why
    seen = f"{where} as the others see it"
    theirs, why = folder_access(
        [entry for entry in others or () if _identifier(entry[0])[0] not in ("owner", owner)], options, None, seen
    )
    if theirs is None:
        return None, why
    token = normal_token(options.user_token.replace("{id}", owner))
    granted = next((grant for grant in mine.levels[0].allow if grant.token == token), None)
    overridden = not mine.late_deny or any(grant.token == token for grant in mine.overriding)
    allow, deny, overriding = [*theirs.levels[0].allow], [*theirs.deny], [*theirs.overriding]
    # a deny both lists hold (the folder's own, a line of both names) is the index's for all: his too
    own_only = {grant.token for grant in mine.deny} - {grant.token for grant in theirs.deny}
    if granted is not None and not own_only and overridden:
        allow.append(granted)
        overriding.append(granted)
    else:
        logger.debug("imap: %s: %s's own reading is not certain for every group of his: denied (fail closed)", where, owner)
        deny.append(Grant.of(token, f"IMAP ACL of {where}: {owner}'s own entries do not let him read whatever his groups"))
    access = Access.of(allow, deny, name=f"IMAP folder {where}")
    if theirs.late_deny:
        access = replace(access, late_deny=theirs.late_deny, overriding=unique_grants(overriding))
    return access, None


def _concerns_owner(identifier: str, options: MailboxNames, owner: str) -> bool:
    """Whether an entry may apply to the owner (or is the crawl's own, which ``folder_access``
    checks): any but another user's."""
    name = _identifier(identifier)[0]
    special = ("anyone", "anonymous", "authenticated", "owner", owner, options.username)
    return name in special or _is_group(name) or name.startswith("!")


def _without_read(name: str, global_entry: bool, options: MailboxNames, owner: str | None) -> tuple[str, bool] | None:
    """Whom an entry without ``r`` keeps from reading, as (token, late): a late deny yields to
    a user's or group's grant (``Access.late_deny``); None when it takes nothing away.

    Dovecot's kinds replace one another in the order anyone, authenticated, groups (which add
    up), owner, user; the global file's entries replace all of the folder's own. So in the
    folder's own list, a user without ``r`` is denied; a group without ``r`` refuses its members
    what ``anyone`` or ``authenticated`` gives them; ``authenticated`` without ``r`` refuses every
    searcher (all of them logged in) what ``anyone`` gives; ``anyone`` and ``owner`` take nothing
    (nothing comes before ``anyone``; the owner's rights are ``folder_access``'s). A global entry
    without ``r`` is a deny of all it names (``anyone`` and ``authenticated``: everyone), whatever
    the folder's own list or the owner's implicit rights give them: fail closed (a user's own or
    another group's global grant may still let some of them read in Dovecot)."""
    if name == "owner" and (owner is None or not global_entry):
        return None
    if name in ("anyone", "anonymous", "authenticated"):
        if global_entry:
            return PUBLIC, False
        return (PUBLIC, True) if name == "authenticated" else None
    token = _entry_token(name, options, owner)
    return (token, not global_entry and _is_group(name)) if token is not None else None


def _identifier(identifier: str) -> tuple[str, bool, bool]:
    """An entry's identifier as (name, negative, global): Dovecot writes a negative right's
    ``-`` first, then ``#`` for an entry of its global ACL file (``-#bob``)."""
    negative = identifier.startswith("-")
    name = identifier[1:] if negative else identifier
    global_entry = name.startswith("#")
    return (name[1:] if global_entry else name), negative, global_entry


def _is_group(name: str) -> bool:
    """Whether an identifier names a group: Dovecot's ``$name``, Cyrus's ``group:name``."""
    return name.startswith("$") or name.lower().startswith("group:")


def _entry_token(name: str, options: MailboxNames, owner: str | None) -> str | None:
    """An identifier as a token: RFC 4314's ``anyone`` (and Cyrus's ``anonymous``), Dovecot's
    ``authenticated``, ``owner``, a group (Dovecot ``$name``, Cyrus ``group:name``), a user.
    Unmappable for what could change meaning as a token: Dovecot's group-override ``!$name`` (it
    beats user entries, which tokens cannot say), a name with ``@`` or ``\\`` (a token drops
    domains) or with characters of DN syntax."""
    if name in ("anyone", "anonymous"):
        return options.anyone_token
    if name == "authenticated":
        return options.authenticated_token
    if name == "owner":
        if owner is None:
            raise Unmappable("'owner' of a folder that is no one's own mailbox")
        return options.user_token.replace("{id}", owner)
    template = options.user_token
    if _is_group(name):
        template, name = options.group_token, name[1 if name.startswith("$") else 6 :]
    if not _IDENTIFIER.fullmatch(name):
        raise Unmappable(f"{name[:80]!r} is not a plain name (letters, digits, '.', '_', '-')")
    return template.replace("{id}", name)
