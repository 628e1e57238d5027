"""End-to-end crawls for: searchcrawl.content.convert: text quality on the textract test corpus, robustness of the worker pool (the components alone: tests.content.test_convert)."""

from __future__ import annotations

from collections import Counter

import pytest

from searchcrawl.content.convert import Converter, convert
from tests.content.test_convert import SENTENCE, corpus, words  # noqa: F401 - helpers and fixtures


@pytest.mark.parametrize("target", ["ppt", "odp"])
def test_legacy_ppt_and_odp_made_by_libreoffice(corpus, tmp_path, target):
    """The corpus has no PPT or ODP: LibreOffice (a bootstrap dependency) makes them from its
    PPTX files, and the same quality bar applies."""
    import subprocess

    for name in ("raw_text", "standardized_text"):
        subprocess.run(
            [
                "soffice",
                "--headless",
                "--norestore",
                f"-env:UserInstallation=file://{tmp_path}/profile",
                "--convert-to",
                target,
                "--outdir",
                str(tmp_path),
                str(corpus / "pptx" / f"{name}.pptx"),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    result = Converter(workers=1, timeout=120).convert((tmp_path / f"raw_text.{target}").read_bytes(), None, f"raw_text.{target}")
    assert result.kind == target
    expected = Counter(words((corpus / "pptx" / "raw_text.txt").read_text(encoding="utf-8")))
    got = Counter(words(result.text))
    ratio = sum(min(n, got[w]) for w, n in expected.items()) / sum(expected.values())
    print(f"\n{target} (made by LibreOffice): {ratio:.1%} of {sum(expected.values())} expected words found")
    assert ratio >= 0.95
    sentence = convert((tmp_path / f"standardized_text.{target}").read_bytes(), None, f"standardized_text.{target}")
    assert SENTENCE in " ".join(words(sentence.text))
