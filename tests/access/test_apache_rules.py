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
NAMES = TokenNames(group_token="group:{id}", skip=frozenset({"crawler"}))


def readers(url_path: str, config: str = SITE, names: TokenNames = NAMES) -> set[str] | str:
    access, why = read_rules([("dav.conf", config)]).access_of(url_path, names)
    if access is None:
        assert why
        return why
    return {grant.token for level in access.levels for grant in level.allow}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/dav/a.txt", {"member:cn=all-staff,ou=groups,dc=example,dc=org"}),  # the crawler is nobody's reader
        ("/dav/hr/pay.txt", {"group:hr"}),  # the longer Directory wins
        ("/dav/hr/open/x.txt", {"public"}),  # a Location wins over every Directory
        ("/dav/board/m.txt", {"user:carol", "user:dave"}),
        ("/dav/boardroom/m.txt", {"member:cn=all-staff,ou=groups,dc=example,dc=org"}),  # whole segments only
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
        "<Location ~ ^/dav/x>\nRequire all granted\n</Location>",  # a regular expression
        "<Location /dav/*/x>\nRequire all granted\n</Location>",  # a wildcard
        "<IfDefine NEVER>\n<Location /dav>\nRequire all granted\n</Location>\n</IfDefine>",  # a condition not modelled
        "<Proxy *>\nRequire all granted\n</Proxy>",
        "Require all granted",  # outside any section (not even valid in httpd 2.4)
        "RewriteRule ^/dav/secret - [F]",
        "Include /etc/apache2/more.conf",
        "AuthLDAPMaxSubGroupDepth 0",
        'AuthLDAPURL "ldap://h/ou=people,dc=example,dc=org?uid?sub?(employeeType=staff)"',
        "<Location /dav>\n</Directory>",  # a section closed by another's name
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


def test_the_virtual_host_that_serves_the_root_and_no_other() -> None:
    config = (
        "<Location /dav>\nRequire group staff\n</Location>\n"
        "<VirtualHost *:443>\nServerName files.example.org\n<Location /dav>\nRequire user bob\n</Location>\n</VirtualHost>\n"
        "<VirtualHost *:443>\nServerName other.example.org\n<Location /dav>\nRequire all granted\n</Location>\n</VirtualHost>\n"
    )
    rules = read_rules([("sites.conf", config)])
    access, _ = rules.access_of("/dav/x", NAMES, "files.example.org", 443)
    assert access is not None and {g.token for g in access.levels[0].allow} == {"user:bob"}  # the vhost's after the main's
    access, _ = rules.access_of("/dav/x", NAMES, "unnamed.example.org", 443)
    assert access is not None and {g.token for g in access.levels[0].allow} == {"user:bob"}  # the first for the port
    access, _ = rules.access_of("/dav/x", NAMES, "files.example.org", 80)
    assert access is not None and {g.token for g in access.levels[0].allow} == {"group:staff"}  # no vhost on 80


def test_lines_as_httpd_reads_them() -> None:
    assert readers("/dav/x", "\ufeff<Location /dav>\nRequire\tuser bob\n</Location>") == {"user:bob"}  # a BOM, a tab
    assert readers("/dav/x", "<Location /dav>\nRequire user al\\\nice\n</Location>") == {"user:alice"}  # joined as is
    # a backslash followed by a space continues nothing: the comment ends on its own line
    assert readers("/dav/x", "<Location /dav>\n# bob only \\ \nRequire user bob\n</Location>") == {"user:bob"}
    assert "no Require" in str(readers("/dav/a b", "<Location /dav/a%20b>\nRequire all granted\n</Location>"))  # verbatim


def test_uncertainty_anywhere_on_the_way_and_rules_of_writes_only() -> None:
    config = (
        "Alias /dav /srv/dav\n<Directory /srv/dav>\nAllowOverride AuthConfig\nRequire all granted\n</Directory>\n"
        "<Directory /srv/dav/hr>\nRequire user bob\n</Directory>\n"
    )
    assert "for certain" in str(readers("/dav/hr/x", config))  # an .htaccess above may refuse
    writes = (
        "<Location /dav>\nRequire user bob\n</Location>\n<Location /dav/in>\n<Limit PUT>\nRequire user bob\n</Limit>\n</Location>"
    )
    assert "writes only" in str(readers("/dav/in/x", writes))  # httpd then lets everyone read: not modelled
    assert readers("/dav/x", writes) == {"user:bob"}


def test_a_deny_only_pattern_refuses_what_it_matches() -> None:
    config = SITE + '<FilesMatch "^\\.ht">\nRequire all denied\n</FilesMatch>\n<Files "*.bak">\nRequire all denied\n</Files>\n'
    assert readers("/dav/.htaccess", config) == set() and readers("/dav/x.bak", config) == set()
    assert readers("/dav/a.txt", config) == {"member:cn=all-staff,ou=groups,dc=example,dc=org"}
    assert "for certain" in str(readers("/dav/hr/pay.txt", "Require group hr", TokenNames()))  # a group file's group, unnamed


@pytest.mark.parametrize(
    "setting",
    [
        "AuthLDAPGroupAttribute memberUid\nAuthLDAPGroupAttributeIsDN off",  # a posixGroup's memberUid by name
        "AuthLDAPGroupAttribute member",  # uniqueMember no longer counts
        "AuthLDAPSubGroupClass posixGroup",
        "AuthLDAPSubGroupAttribute member",
        "AuthLDAPGroupAttributeIsDN off",
        "AuthLDAPCompareAsUser on",
    ],
)
def test_ldap_group_is_read_only_with_mod_authnz_ldaps_default_group_reading(setting: str) -> None:
    """Require ldap-group is member:<DN>, what the defaults compare (a DN as a member or
    uniqueMember, groupOfNames and groupOfUniqueNames followed): set otherwise, wherever, the
    paths an ldap-group rule decides are not read for certain; the others still are."""
    config = SITE.replace("  Dav On\n", "  Dav On\n" + setting + "\n")
    reason = readers("/dav/a.txt", config)
    assert isinstance(reason, str) and "for certain" in reason and "not mod_authnz_ldap's default" in reason
    assert readers("/dav/board/m.txt", config) == {"user:carol", "user:dave"}


def test_the_default_group_reading_written_out_is_the_default() -> None:
    written = "AuthLDAPGroupAttribute member\nAuthLDAPGroupAttribute uniqueMember\nAuthLDAPSubGroupClass groupOfNames groupOfUniqueNames\nAuthLDAPGroupAttributeIsDN on\n"
    assert readers("/dav/a.txt", SITE.replace("  Dav On\n", "  Dav On\n" + written)) == {
        "member:cn=all-staff,ou=groups,dc=example,dc=org"
    }
