"""The SAML answer's checks made before pysaml2 reads it (web/sign_on/saml.py): its size, its inflation, and
the algorithms its signatures name (a weak one refused). Synthetic answers; the IdP's real ones
are in tests/e2e/test_saml_sign_on.py."""

from __future__ import annotations

import ast
import base64
import zlib

import pytest

from searchcrawl.web.sign_on.providers import SignOnError
from searchcrawl.web.sign_on.saml import plain_response, weak_algorithm
from tests.syntax_trees import PACKAGE, tree_of

DSIG = "http://www.w3.org/2000/09/xmldsig#"


def answer(signature: str, digest: str) -> bytes:
    return (
        '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:ds="http://www.w3.org/2000/09/xmldsig#">'
        f'<ds:Signature><ds:SignedInfo><ds:SignatureMethod Algorithm="{signature}"/>'
        f'<ds:Reference URI="#a"><ds:DigestMethod Algorithm="{digest}"/></ds:Reference></ds:SignedInfo></ds:Signature>'
        "</samlp:Response>"
    ).encode()


@pytest.mark.parametrize(
    ("signature", "digest", "weak"),
    [
        ("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", "http://www.w3.org/2001/04/xmlenc#sha256", ""),
        (DSIG + "rsa-sha1", "http://www.w3.org/2001/04/xmlenc#sha256", DSIG + "rsa-sha1"),
        ("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", DSIG + "sha1", DSIG + "sha1"),  # a SHA-1 digest alone
        ("http://www.w3.org/2001/04/xmldsig-more#rsa-md5", DSIG + "sha1", "http://www.w3.org/2001/04/xmldsig-more#rsa-md5"),
    ],
)
def test_a_weak_signature_or_digest_is_found(signature: str, digest: str, weak: str) -> None:
    assert weak_algorithm(answer(signature, digest)) == weak


def test_an_answer_signed_with_sha1_is_refused_deflated_or_not() -> None:
    xml = answer(DSIG + "rsa-sha1", DSIG + "sha1")
    compressor = zlib.compressobj(wbits=-15)
    deflated = compressor.compress(xml) + compressor.flush()
    for sent in (xml, deflated):
        with pytest.raises(SignOnError, match="too weak"):
            plain_response(base64.b64encode(sent).decode())
    strong = answer("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256", "http://www.w3.org/2001/04/xmlenc#sha256")
    assert base64.b64decode(plain_response(base64.b64encode(strong).decode())) == strong


def test_an_answer_with_a_dtd_or_no_xml_is_refused_before_pysaml2_reads_it() -> None:
    entities = b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>'
    for sent in (entities, b"not xml <"):
        with pytest.raises(SignOnError, match="no XML"):
            plain_response(base64.b64encode(sent).decode())


def test_pysaml2_is_imported_where_a_sign_in_needs_it_not_with_the_module() -> None:
    """Every process that imports the web application imports this module; pysaml2 costs half a
    second of CPU to import, and is needed only once SAML is configured and used."""
    tree = tree_of(PACKAGE / "web" / "sign_on" / "saml.py")
    at_import = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    named = [alias.name for node in at_import for alias in node.names] + [
        node.module for node in at_import if isinstance(node, ast.ImportFrom) and node.module
    ]
    assert "requests" in named and not [name for name in named if name.split(".")[0] == "saml2"]
