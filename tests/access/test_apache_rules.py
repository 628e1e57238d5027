"""Apache's Require rules as access tokens, alone (tests/e2e/test_webdav_sources.py asks a real
Apache the same questions): the merge order, segment matching, and every construct that keeps
documents out because it cannot be read for certain."""

from __future__ import annotations

import pytest

from searchcrawl.access.apache_rules import TokenNames, normal_path, read_rules
from searchcrawl.access.decision import Principal, Principals, decide

SITE = """
Alias /dav /srv/dav
<Directory /srv/dav>
  Dav On
  AllowOverride None
  Require user crawler
  Require ldap-group cn=all-staff,ou=groups,dc=example,dc=org
  <LimitExcept GET HEAD OPTIONS PROPFIND>
    Require user admin
  </LimitExcept>
</Directory>
<Directory /srv/dav/hr>
  Require group hr
</Directory>
<Location /dav/board>
  <RequireAny>
    Require user carol "dave"
  </RequireAny>
</Location>
<Location "/dav/hr/open/">
  Require all granted
</Location>
<Location /dav/sealed>
  Require all denied
</Location>
"""
NAMES = TokenNames(skip=frozenset({"crawler"}))


def readers(url_path: str, config: str = SITE, names: TokenNames = NAMES) -> set[str] | str:
    access, why = read_rules([("dav.conf", config)]).access_of(url_path, names)
    if access is None:
        assert why
        return why
    return {grant.token for level in access.levels for grant in level.allow}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/dav/a.txt", {"group:cn=all-staff,ou=groups,dc=example,dc=org"}),  # the crawler is nobody's reader
        ("/dav/hr/pay.txt", {"group:hr"}),  # the longer Directory wins
        ("/dav/hr/open/x.txt", {"public"}),  # a Location wins over every Directory
        ("/dav/board/m.txt", {"user:carol", "user:dave"}),
        ("/dav/boardroom/m.txt", {"group:cn=all-staff,ou=groups,dc=example,dc=org"}),  # whole segments only
        ("/dav/sealed/x", set()),
        ("/dav/%68r/pay.txt", {"group:hr"}),  # decoded as Apache decodes it
        ("/dav/open/../hr/pay.txt", {"group:hr"}),
    ],
)
def test_the_rule_that_decides_is_the_one_apache_applies_last(path: str, expected: set[str]) -> None:
    assert readers(path) == expected


def test_decided_for_searchers() -> None:
    access, _ = read_rules([("dav.conf", SITE)]).access_of("/dav/board/m.txt", NAMES)
    assert access is not None
    carol = Principals.of("carol", [Principal("user:carol", "t")])
    assert decide(access, carol).granted and not decide(access, Principals.anonymous()).granted
    assert "Apache dav.conf:" in access.levels[0].allow[0].origin and "Require user carol" in access.levels[0].allow[0].origin


@pytest.mark.parametrize(
    "extra",
    [
        "<Location /dav>\n<RequireAll>\nRequire group a\nRequire group b\n</RequireAll>\n</Location>",
        "<Location /dav>\nRequire not user mallory\nRequire all granted\n</Location>",
        "<Location /dav>\nRequire ip 10.0.0.0/8\n</Location>",
        "<Location /dav>\nAuthMerging Or\nRequire group a\n</Location>",
        "<Location /dav>\nOrder deny,allow\n</Location>",
        "<Directory /srv/dav>\nAllowOverride AuthConfig\n</Directory>",
        "<Location /dav>\n<Limit GET>\nRequire group a\n</Limit>\n</Location>",
        "<FilesMatch \\.pdf$>\nRequire group pdf-readers\n</FilesMatch>",
        "<LocationMatch ^/dav/x>\nRequire all granted\n</LocationMatch>",
        "AliasMatch ^/files/(.*) /srv/dav/$1",
    ],
)
def test_what_cannot_be_read_for_certain_keeps_the_file_out(extra: str) -> None:
    reason = readers("/dav/a.txt", SITE + extra)
    assert isinstance(reason, str) and "for certain" in reason


def test_a_path_no_rule_governs_and_valid_user() -> None:
    assert "no Require" in str(readers("/elsewhere/x", "Alias /dav /srv/dav\n<Location /dav>\nRequire all granted\n</Location>"))
    config = "<Location /dav>\nRequire valid-user\n</Location>"
    assert readers("/dav/x", config) == set()  # no one, unless the source names who valid-user is
    staff = TokenNames(authenticated_token="group:staff")
    assert readers("/dav/x", config, staff) == {"group:staff"}


def test_continued_lines_comments_and_write_rules() -> None:
    config = "# a comment\n<Location /dav>\n  Require user \\\n    alice bob\n  <LimitExcept GET POST>\n  Require user root\n  </LimitExcept>\n</Location>\n"
    assert readers("/dav/x", config) == {"user:alice", "user:bob"}


def test_normal_paths() -> None:
    assert normal_path("/dav//a/./b/../c%20d") == "/dav/a/c d"
    assert normal_path("/dav/x/") == "/dav/x/"
