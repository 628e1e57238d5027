"""The installation's directory, from its settings (SEARCHCRAWL_LDAP_URL): ``directory_of``, the
one place the LDAP client (ldap_directory.py) is imported, and only where a directory is set.

A module above both directory.py (the plain logic and the ``Directory`` protocol) and
ldap_directory.py (the client, which imports that logic), so that neither imports the other back:
directory.py building the client itself made the two an import circle."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from searchcrawl.access.directory import Directory, DirectoryConfig


def directory_of(settings: BaseSettings) -> Directory | None:
    """The installation's directory (SEARCHCRAWL_LDAP_URL), None without one."""
    if not settings.get("SEARCHCRAWL_LDAP_URL"):
        return None
    # the LDAP client (ldap3 and pyasn1: a tenth of a second of CPU) is imported only where a
    # directory is set: Scrapy imports every command module on each `scrapy` command, a crawl too
    from searchcrawl.access.ldap_directory import LdapDirectory  # noqa: PLC0415 - see the comment

    return LdapDirectory(DirectoryConfig.from_settings(settings))
