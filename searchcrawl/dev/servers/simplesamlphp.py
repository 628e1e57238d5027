"""A real SAML 2.0 identity provider for tests and `scrapy dev saml`: Debian's ``simplesamlphp`` (1.19) under PHP's own
web server on 127.0.0.1, with a configuration of its own (its Debian defaults, then ours: the IdP
on, its key and certificate made here, the users of ``exampleauth:UserPass`` with their groups,
the service provider the tests' client is).

``SamlIdp(sp_entity_id, acs_url).start()``; what tests may rely on:

- ``metadata_url``: the IdP's SAML 2.0 metadata (its entity id, SSO endpoint and certificate);
- ``USERS``: who may sign in, with their password and groups;
- ``sign_in(browser, url, user, password)``: a browser (a ``requests.Session``) at the IdP's SSO
  URL ``url`` (the service provider's redirect) fills the login form; returns the form the IdP
  answers with (its action, the ACS, and its fields: SAMLResponse, RelayState), which a browser
  would post to the service provider.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urljoin

import requests

from searchcrawl.dev.jvm_server import free_port
from searchcrawl.dev.servers.server_processes import stop, stopped_on_failure, wait_listening

PACKAGE = Path("/usr/share/simplesamlphp")
USERS = {
    "alice": ("alice-password", ["finance", "search-admins"]),
    "bob": ("bob-password", ["all-staff"]),
    "carol": ("carol-password", []),
}


def self_signed(name: str) -> tuple[bytes, bytes]:
    """An RSA key and a self-signed certificate (PEM), as an IdP signs with."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem_key, certificate.public_bytes(serialization.Encoding.PEM)


def php_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SamlIdp:
    def __init__(self, sp_entity_id: str, acs_url: str, signature_algorithm: str = "") -> None:
        self.sp_entity_id = sp_entity_id
        self.signature_algorithm = signature_algorithm  # "": SimpleSAMLphp's default (RSA with SHA-256)
        self.acs_url = acs_url
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.metadata_url = self.base + "saml2/idp/metadata.php"
        self.folder = Path(tempfile.mkdtemp(prefix="saml-idp-"))
        self.process: subprocess.Popen[bytes] | None = None

    def configure(self) -> None:
        config, metadata, certs = self.folder / "config", self.folder / "metadata", self.folder / "cert"
        for folder in (config, metadata, certs, self.folder / "log", self.folder / "data", self.folder / "tmp"):
            folder.mkdir()
        key, certificate = self_signed("idp.example.test")
        (certs / "idp.key").write_bytes(key)
        (certs / "idp.crt").write_bytes(certificate)
        overrides = {
            "baseurlpath": self.base,
            "certdir": f"{certs}/",
            "loggingdir": f"{self.folder / 'log'}/",
            "datadir": f"{self.folder / 'data'}/",
            "tempdir": str(self.folder / "tmp"),
            "metadatadir": f"{metadata}/",
            "secretsalt": "searchcrawl-tests-salt",
            "auth.adminpassword": "searchcrawl-tests-admin",
            "technicalcontact_email": "tests@example.org",
            "timezone": "UTC",
            "logging.handler": "file",
            "session.cookie.secure": False,
        }
        lines = ["<?php", "require '/etc/simplesamlphp/config.php';"]
        lines += [
            f"$config[{php_string(key)}] = {php_string(value) if isinstance(value, str) else 'false'};"
            for key, value in overrides.items()
        ]
        lines += [
            "$config['enable.saml20-idp'] = true;",
            "$config['module.enable'] = ['exampleauth' => true, 'core' => true, 'saml' => true];",
            "$config['logging.level'] = SimpleSAML\\Logger::WARNING;",
        ]
        (config / "config.php").write_text("\n".join(lines) + "\n")
        users = ",\n".join(
            f"    {php_string(f'{user}:{password}')} => ['uid' => [{php_string(user)}], 'groups' => [{', '.join(php_string(group) for group in groups)}]]"
            for user, (password, groups) in USERS.items()
        )
        (config / "authsources.php").write_text(
            f"<?php\n$config = [\n  'admin' => ['core:AdminPassword'],\n  'users' => ['exampleauth:UserPass',\n{users}\n  ],\n];\n"
        )
        (metadata / "saml20-idp-hosted.php").write_text(
            "<?php\n$metadata['__DYNAMIC:1__'] = ['host' => '__DEFAULT__', 'privatekey' => 'idp.key', 'certificate' => 'idp.crt',"
            " 'auth' => 'users'"
            + (f", 'signature.algorithm' => {php_string(self.signature_algorithm)}" if self.signature_algorithm else "")
            + "];\n"
        )
        (metadata / "saml20-sp-remote.php").write_text(
            f"<?php\n$metadata[{php_string(self.sp_entity_id)}] = ['AssertionConsumerService' => {php_string(self.acs_url)}];\n"
        )

    @stopped_on_failure
    def start(self) -> SamlIdp:
        self.configure()
        log = self.folder / "php.log"
        env = {"PATH": "/usr/bin:/bin", "SIMPLESAMLPHP_CONFIG_DIR": str(self.folder / "config"), "PHP_CLI_SERVER_WORKERS": "2"}
        with open(log, "wb") as output:
            self.process = subprocess.Popen(
                ["php", "-S", f"127.0.0.1:{self.port}", "-t", str(PACKAGE / "www")],
                cwd=PACKAGE / "www",
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its workers with it: stopped as a group
            )
        wait_listening(self.process, self.port, log)
        return self

    def stop(self) -> None:
        stop(self.process, group=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def sign_in(self, browser: requests.Session, url: str, user: str, password: str) -> tuple[str, dict[str, str]]:
        """``browser`` follows ``url`` to the IdP's login form, signs in; the form it is handed back."""
        return sign_in(browser, url, user, password)


def sign_in(browser: requests.Session, url: str, user: str, password: str) -> tuple[str, dict[str, str]]:
    """As ``SamlIdp.sign_in``, at the IdP ``url`` leads to (one another process started)."""
    answer = browser.get(url, timeout=30)
    for _step in range(5):
        page = answer.text
        action = re.search(r'<form[^>]*action="([^"]*)"', page)
        assert action is not None, page[:3000]
        fields = {
            name: html.unescape(value) for name, value in re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page)
        }
        if "SAMLResponse" in fields:
            return html.unescape(action[1]), fields
        fields.update(username=user, password=password)
        answer = browser.post(urljoin(answer.url, html.unescape(action[1])), data=fields, timeout=30)
    raise AssertionError(f"the IdP did not answer with a SAMLResponse: {answer.text[:2000]}")
