"""Language detection: the same answers as py3langid's own ``classify`` (its tokenizer run in
numpy: the same features counted, on real pages and on any bytes), from the unpacked copy of its
model kept in the user's cache (made by the first process that needs it, replaced when broken)."""

from __future__ import annotations

import functools
from pathlib import Path

import lxml.html
import py3langid
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py3langid.langid import visit_counts

from searchcrawl.content import language_detection
from tests.conftest import fresh_python, html_pages

TEXTS = {
    "en": "The crawler fetches every page of the intranet and sends its text to the search index.",
    "de": "Der Crawler holt jede Seite des Intranets und schickt ihren Text an den Suchindex.",
    "fr": "Le robot parcourt chaque page de l'intranet et envoie son texte à l'index de recherche.",
    "es": "El rastreador obtiene cada página de la intranet y envía su texto al índice de búsqueda.",
}


@pytest.fixture(scope="module")
def unpacked() -> tuple[object, ...]:
    """py3langid's packed model, unpacked once for the module (0.4 s of CPU each time)."""
    from py3langid import langid, modelio

    return tuple(modelio.load_model(langid.MODEL_DIR / langid.MODEL_FILE))


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unpacked: tuple[object, ...]) -> Path:
    """An empty user cache; the packed model's unpacking (the same each time) done once."""
    from py3langid import modelio

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(language_detection, "_model", None)
    monkeypatch.setattr(modelio, "load_model", lambda _path: unpacked)
    return tmp_path


def test_answers_are_py3langids_and_the_unpacked_model_is_kept(cache_home: Path) -> None:
    assert not language_detection.model_cache_path().exists()
    for expected, text in TEXTS.items():
        assert language_detection.detect_language(text) == expected == py3langid.classify(text)[0]
    kept = language_detection.model_cache_path()
    assert kept.parent == cache_home / "searchcrawl"
    assert sorted(path.name for path in kept.iterdir()) == sorted(
        f"{name}.npy" for name in language_detection.MAPPED + language_detection.READ
    )
    assert [path.name for path in kept.parent.iterdir()] == [kept.name]  # no temporary folder left
    # a second process reads the kept copy and answers the same
    model = language_detection.load_model()
    for text in TEXTS.values():
        assert model.classify(text) == py3langid.classify(text)


def test_the_kept_copy_is_read_not_unpacked_again(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    language_detection.load_model()  # unpacks and keeps it

    from py3langid import modelio

    def unpack(*_args: object) -> None:
        raise AssertionError("the packed model was unpacked although a copy is kept")

    monkeypatch.setattr(modelio, "load_model", unpack)
    assert language_detection.load_model().classify(TEXTS["de"])[0] == "de"


def test_the_large_tables_are_mapped_not_read(cache_home: Path) -> None:
    """Reading them took 0.17 s of CPU and 37 MB more peak memory per process; mapped, a process
    touches the pages its texts need, and the crawl's processes share them."""
    import mmap

    language_detection.load_model()  # unpacks and keeps it
    model = language_detection.load_model()
    for table in (model.ptc, model.nextmove):
        assert not table.flags.writeable
        while not isinstance(table, mmap.mmap):  # a view of a view ... of the mapped file
            table = table.base
    assert model.classify(TEXTS["en"]) == py3langid.classify(TEXTS["en"])


@pytest.mark.parametrize(
    "broken", ["a file where the folder should be", "a table cut short", "a table missing", "a copy kept before depth"]
)
def test_a_broken_copy_is_replaced(cache_home: Path, broken: str) -> None:
    kept = language_detection.model_cache_path()
    if broken == "a file where the folder should be":
        kept.parent.mkdir(parents=True)
        kept.write_bytes(b"not a model")
    else:
        language_detection.load_model()  # unpacks and keeps it
        language_detection._model = None
        table = kept / "nextmove.npy"
        if broken == "a table cut short":
            table.write_bytes(table.read_bytes()[:1000])
        elif broken == "a table missing":
            table.unlink()
        else:
            (kept / "depth.npy").unlink()
    assert language_detection.detect_language(TEXTS["fr"]) == "fr"
    assert (kept / "nextmove.npy").stat().st_size > 1_000_000
    assert (kept / "depth.npy").exists()


def test_the_copy_of_earlier_versions_is_removed(cache_home: Path) -> None:
    earlier = language_detection.model_cache_path().with_name(language_detection.model_cache_path().name + ".npz")
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"68 MB of an earlier version's copy")
    assert language_detection.detect_language(TEXTS["de"]) == "de"
    assert not earlier.exists() and language_detection.model_cache_path().is_dir()


def test_without_a_writable_cache_the_model_is_unpacked_as_before(cache_home: Path) -> None:
    (cache_home / "searchcrawl").write_text("a file where the folder should be")
    assert language_detection.detect_language(TEXTS["es"]) == "es"


def test_short_text_is_not_told() -> None:
    assert language_detection.detect_language("too short") is None


def test_detecting_loads_no_model_before_it_is_needed() -> None:
    code = (
        "import sys\nimport searchcrawl.content.language_detection\nprint('py3langid' in sys.modules, 'numpy' in sys.modules)\n"
    )
    assert fresh_python(code) == ["False False"]


def test_numpy_is_loaded_with_openblas_on_one_thread_unless_the_environment_says_otherwise() -> None:
    """OpenBLAS's default, a thread per core started at import, cost a crawl that detected one
    page's language 0.04 s of CPU on two cores (a first one-page crawl: 1.10 -> 1.00 s)."""
    code = (
        "import os\nos.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
        "from searchcrawl.content.language_detection import import_numpy\n"
        "import_numpy()\nprint(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n"
    )
    assert fresh_python(code) == ["1 1"]  # one thread: the process's own
    chosen = code.replace("os.environ.pop('OPENBLAS_NUM_THREADS', None)", "os.environ['OPENBLAS_NUM_THREADS'] = '2'")
    assert fresh_python(chosen)[0].split()[0] == "2"


def test_the_sample_is_the_texts_beginning_with_whitespace_collapsed() -> None:
    words = TEXTS["de"].split()
    long_text = "\n\n  ".join(words * 400)  # some 40,000 characters
    sample = language_detection.language_sample(long_text)
    assert len(sample) == language_detection.SAMPLE_CHARS
    assert sample == " ".join(long_text.split())[: language_detection.SAMPLE_CHARS]
    # a text that opens with more whitespace than the first look takes is still sampled
    padded = " " * (language_detection.SAMPLE_CHARS * 10) + TEXTS["fr"]
    assert language_detection.language_sample(padded) == TEXTS["fr"]
    assert language_detection.language_sample("  short\n text ") == "short text"


def test_a_long_text_is_told_from_its_beginning(cache_home: Path) -> None:
    # German for the first SAMPLE_CHARS characters and far beyond, English after: what is read
    # is the beginning
    german = " ".join([TEXTS["de"]] * 100)
    assert language_detection.detect_language(german + " " + " ".join([TEXTS["en"]] * 50)) == "de"


# --- the tokenizer in numpy: py3langid's features, counted alike ---------------------------------


@pytest.fixture(scope="module")
def model() -> language_detection.LanguageModel:
    return language_detection.load_model()


@functools.cache
def tokenizer_lists(model: language_detection.LanguageModel) -> tuple[list[int], list[int]]:
    return model.rowbase.tolist(), model.output.tolist()


def py3langid_counts(model: language_detection.LanguageModel, data: bytes) -> dict[int, int]:
    """What py3langid's tokenizer counts (its own loop over the bytes), in the order it counts."""
    rowbase, output = tokenizer_lists(model)
    return dict(visit_counts(model.nextmove, rowbase, output, data) or {})


def numpy_counts(model: language_detection.LanguageModel, data: bytes) -> dict[int, int]:
    counts: dict[int, int] = {}
    for feature in model.features(data).tolist():
        counts[feature] = counts.get(feature, 0) + 1
    return counts


def test_the_tokenizers_depth_is_its_longest_n_gram(model: language_detection.LanguageModel) -> None:
    """py3langid 0.4's model: byte n-grams of up to 6 bytes (a UTF-8 character and more); a
    shorter look back gives other states on real text."""
    assert model.depth == 6
    text = language_detection.encode(TEXTS["de"])
    short = language_detection.LanguageModel(
        model.ptc, model.pc, model.classes, model.nextmove, model.rowbase >> 8, model.output, depth=4
    )
    assert numpy_counts(short, text) != py3langid_counts(model, text) == numpy_counts(model, text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=200).map(language_detection.encode))
def test_the_same_features_are_counted_in_the_same_order_for_any_bytes(model, data: bytes) -> None:
    assert list(numpy_counts(model, data).items()) == list(py3langid_counts(model, data).items())


@pytest.mark.parametrize("site", ["scipy-lectures-site.tar.xz", "nutch-site.tar.xz"])
def test_real_pages_get_py3langids_language_and_score(model, site: str) -> None:
    """Every page of the corpora's two real sites (1,546), from the sample the crawl reads."""
    told = 0
    for _name, page in html_pages(site):
        sample = language_detection.language_sample(lxml.html.fromstring(page).text_content())
        if len(sample) < language_detection.MIN_CHARS:
            continue
        language, score = model.classify(sample)
        expected_language, expected_score = py3langid.classify(sample)
        assert language == expected_language and score == pytest.approx(expected_score, rel=1e-6), _name
        told += 1
    assert told > 250


def test_a_text_of_no_feature_gets_py3langids_answer(model) -> None:
    assert model.classify("") == py3langid.classify("")
