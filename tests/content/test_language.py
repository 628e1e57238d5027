"""Language detection: the same answers as py3langid's own ``classify``, from the unpacked copy of
its model kept in the user's cache (made by the first process that needs it, replaced when broken)."""

from __future__ import annotations

from pathlib import Path

import py3langid
import pytest

from searchcrawl.content import language
from tests.conftest import fresh_python

TEXTS = {
    "en": "The crawler fetches every page of the intranet and sends its text to the search index.",
    "de": "Der Crawler holt jede Seite des Intranets und schickt ihren Text an den Suchindex.",
    "fr": "Le robot parcourt chaque page de l'intranet et envoie son texte à l'index de recherche.",
    "es": "El rastreador obtiene cada página de la intranet y envía su texto al índice de búsqueda.",
}


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(language, "_identifier", None)
    return tmp_path


def test_answers_are_py3langids_and_the_unpacked_model_is_kept(cache_home: Path) -> None:
    assert not language.model_cache_path().exists()
    for expected, text in TEXTS.items():
        assert language.detect_language(text) == expected == py3langid.classify(text)[0]
    kept = language.model_cache_path()
    assert kept.parent == cache_home / "searchcrawl" and kept.stat().st_size > 0
    assert [path.name for path in kept.parent.iterdir()] == [kept.name]  # no temporary file left
    # a second process reads the kept copy and answers the same
    identifier = language.load_identifier()
    for text in TEXTS.values():
        assert identifier.classify(text) == py3langid.classify(text)


def test_the_kept_copy_is_read_not_unpacked_again(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    language.load_identifier()  # unpacks and keeps it

    from py3langid import modelio

    def unpack(*_args: object) -> None:
        raise AssertionError("the packed model was unpacked although a copy is kept")

    monkeypatch.setattr(modelio, "load_model", unpack)
    assert language.load_identifier().classify(TEXTS["de"])[0] == "de"


def test_a_broken_copy_is_replaced(cache_home: Path) -> None:
    kept = language.model_cache_path()
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"not a model")
    assert language.detect_language(TEXTS["fr"]) == "fr"
    assert kept.stat().st_size > 1000


def test_without_a_writable_cache_the_model_is_unpacked_as_before(cache_home: Path) -> None:
    (cache_home / "searchcrawl").write_text("a file where the folder should be")
    assert language.detect_language(TEXTS["es"]) == "es"


def test_short_text_is_not_told() -> None:
    assert language.detect_language("too short") is None


def test_detecting_loads_no_model_before_it_is_needed() -> None:
    code = "import sys\nimport searchcrawl.content.language\nprint('py3langid' in sys.modules, 'numpy' in sys.modules)\n"
    assert fresh_python(code) == ["False False"]
