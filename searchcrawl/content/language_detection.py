"""The language of a document when nothing declares it, detected from its text (py3langid: a
small bundled model, no download).

py3langid ships its model LZMA-compressed (4.5 MB, 68 MB unpacked): unpacking it took 0.4 s of
CPU in every crawl process that met one document without a declared language, a fifth of a
one-page crawl. The first process to load it keeps the unpacked model in the user's cache, a
folder of .npy files (``~/.cache/searchcrawl/py3langid-<version>-<size of the packed model>/``),
and the next ones map its two large tables (the tokenizer's state machine, 38 MB, and the
features' weights per language, 27 MB) into memory rather than read them: a process touches only
the pages its texts need, and the processes of a crawl share them (reading a copy took 0.17 s of
CPU and 37 MB more peak memory per process; an .npz copy of earlier versions is removed). Without
a writable cache the model is unpacked as before.

Classifying is py3langid's own algorithm (its tokenizer's byte n-gram counts, naive Bayes over
them), with the tokenizer run in numpy rather than in a Python loop over the text's bytes
(``LanguageModel``): the same language and score for every text, at 0.20 ms of CPU a document
of the real corpora's 1,546 pages where py3langid's ``classify`` takes 0.28 (what is left is
mostly the model's float16 weights, gathered and multiplied). py3langid's tokenizer is a state
machine whose state after a byte is the longest of its model's n-grams (or their beginnings)
ending there (an Aho-Corasick automaton), so it depends on the last ``depth`` bytes only (6 in
py3langid 0.4's model): the state after every byte is found at once by running the machine
``depth`` steps from its start over each byte's last ``depth`` bytes. ``depth`` is found once
(0.44 s of CPU), as the model is unpacked, and kept beside it (tests/content/
test_language_detection.py checks the counts against py3langid's own loop on any bytes, and the
answers on the real corpora).

numpy is imported with OpenBLAS on one thread (``OPENBLAS_NUM_THREADS=1`` unless the environment
sets it): its default starts a thread per core at import, 0.035-0.04 s of CPU on two cores (more
on more), for products of one text's features that one thread does in well under a millisecond; a
crawl's parallelism is its processes (``processes = N``), not BLAS threads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import unicodedata
from array import array
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MIN_CHARS = 40  # shorter texts are too short to tell reliably
# The text's first SAMPLE_CHARS characters (whitespace collapsed) are what is classified.
# py3langid walks its tokenizer over every byte in Python, so the cost grows with the sample:
# on 386 translated manual pages of this machine's Debian (21 languages; the language
# benchmark, tests/benchmarks/language.py), 5,000 characters took 1.65 ms a document and named
# 368 languages right, 2,000 took 0.82 ms and named as many (3,000: 369, 1,000: 363).
SAMPLE_CHARS = 2000

_model: LanguageModel | None = None  # loaded on first use


def language_sample(text: str, length: int = SAMPLE_CHARS) -> str:
    """The text's beginning with its whitespace collapsed, at most ``length`` characters; a long
    text is not split whole for it (a converted book's text is megabytes)."""
    head = text[: length * 8]
    sample = " ".join(head.split())
    if len(sample) < length and len(head) < len(text):  # mostly whitespace: look further
        sample = " ".join(text.split())
    return sample[:length]


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None for text too short to tell."""
    sample = language_sample(text)
    if len(sample) < MIN_CHARS:
        return None
    global _model
    if _model is None:
        _model = load_model()
    return _model.classify(sample)[0]


class LanguageModel:
    """py3langid's model and its classification (``LanguageIdentifier.classify`` without
    normalised probabilities: the language and its raw score), the tokenizer run in numpy."""

    def __init__(self, ptc: Any, pc: Any, classes: list[str], nextmove: Any, row: Any, output: Any, depth: int) -> None:
        np = import_numpy()
        self.pc, self.classes, self.depth = pc, classes, depth
        self.ptc = np.asarray(ptc).view(np.ndarray)  # a mapped table stays mapped (the view: no
        self.nextmove = np.asarray(nextmove).view(np.ndarray)  # memmap's overhead on each look-up)
        self.rowbase = np.asarray(row, dtype=np.intp) << 8  # a state's first entry in nextmove
        self.output = np.asarray(output, dtype=np.intp)  # the feature a state counts, or -1

    def classify(self, text: str) -> tuple[str, float]:
        """The language and its score, as py3langid's ``classify`` gives them."""
        np = import_numpy()
        features = self.features(encode(text))
        if not len(features):  # nothing counted: every score the same, the first language wins
            return self.classes[0], float(np.finfo(np.float32).min)
        # py3langid counts features in a Counter: in the order they first occur, which is the
        # order of the sum below (a float sum in another order may differ in its last bit); its
        # float16 weights are made float32 first, as its product does, in a third of the time
        found, first, counts = np.unique(features, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        weights = self.ptc[found[order]].astype(np.float32)
        scores = np.log1p(counts[order].astype(np.float32)) @ weights + self.pc
        best = int(scores.argmax())  # a language with two columns (srl, sr) has one label
        return self.classes[best], float(scores[best])

    def features(self, data: bytes) -> Any:
        """The feature counted after each byte of ``data`` (those that count one), in order."""
        np = import_numpy()
        text = np.frombuffer(data, dtype=np.uint8)
        size = len(text)
        states = np.zeros(size, dtype=np.intp)
        for back in range(min(self.depth, size) - 1, -1, -1):  # the oldest of each byte's last `depth` first
            states[back:] = self.nextmove[self.rowbase[states[back:]] + text[: size - back]]
        features = self.output[states]
        return features[features >= 0]


def encode(text: str) -> bytes:
    """The text as py3langid's tokenizer reads it: lower case if all upper case, NFC, UTF-8."""
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf-8", errors="surrogatepass")


def automaton_depth(nextmove: Any, row: Any) -> int:
    """The length of the longest string the tokenizer's states stand for: the most steps from the
    start state to any state, the fewest being the string's own (breadth first over every byte)."""
    np = import_numpy()
    rowbase = np.asarray(row, dtype=np.intp) << 8
    table = np.asarray(nextmove)
    reached = np.zeros(len(rowbase), dtype=bool)
    reached[0] = True
    level, depth = np.array([0], dtype=np.intp), 0
    every_byte = np.arange(256, dtype=np.intp)
    while True:
        following = np.zeros(len(rowbase), dtype=bool)
        following[table[(rowbase[level][:, None] + every_byte).ravel()]] = True
        following &= ~reached
        level = np.flatnonzero(following)
        if not len(level):
            return depth
        reached |= following
        depth += 1


def import_numpy() -> Any:
    """numpy, with OpenBLAS on one thread unless the environment says otherwise (read by OpenBLAS
    as numpy loads it, so set before the first import; a numpy imported earlier keeps its own)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy

    return numpy


def model_cache_path() -> Path:
    """Where the unpacked model is kept (a folder): named by py3langid's version and its packed
    model's size, so an upgrade that changes the model never reads an older one."""
    import py3langid
    from py3langid import langid

    from searchcrawl.system.paths import user_cache_dir

    packed = langid.MODEL_DIR / langid.MODEL_FILE
    return user_cache_dir() / f"py3langid-{py3langid.__version__}-{packed.stat().st_size}"


def load_model() -> LanguageModel:
    """py3langid's bundled model, the same one ``py3langid.classify`` uses, its tables mapped from
    the unpacked copy in the cache (made when missing)."""
    np = import_numpy()
    from py3langid import langid, modelio

    packed = langid.MODEL_DIR / langid.MODEL_FILE
    try:
        cached: Path | None = model_cache_path()
    except OSError as exc:  # the packed model unreadable: py3langid says why as it unpacks it
        logger.debug("Language model: no cached copy (%s)", exc)
        cached = None
    tables = _read_cached(cached) if cached is not None else None
    if tables is None:
        ptc, pc, classes, nextmove, row, output = modelio.load_model(packed)
        nextmove, row = _as_numpy(nextmove), _as_numpy(row)
        tables = {
            "ptc": np.asarray(ptc),
            "pc": np.asarray(pc),
            "classes": np.array(classes),
            "nextmove": nextmove,
            "row": row,
            "output": np.array(output, dtype=np.int64),
            "depth": np.array(automaton_depth(nextmove, row)),
        }
        if cached is not None and _write_cached(cached, tables):
            tables = _read_cached(cached) or tables  # mapped, not held: the unpacked tables are freed
    return LanguageModel(
        tables["ptc"],
        tables["pc"],
        tables["classes"].tolist(),
        tables["nextmove"],
        tables["row"],
        tables["output"],
        int(tables["depth"]),
    )


# The model's tables, one .npy file each; the two large ones are mapped into memory. ``depth``
# is the tokenizer's (automaton_depth), found as the model is unpacked.
MAPPED = ("ptc", "nextmove")
READ = ("pc", "classes", "row", "output", "depth")


def _read_cached(folder: Path) -> dict[str, Any] | None:
    np = import_numpy()

    try:
        mapped = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in MAPPED}
        return mapped | {name: np.load(folder / f"{name}.npy", allow_pickle=False) for name in READ}
    except FileNotFoundError:  # none kept yet, or by a version without a table (depth): unpacked again
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a broken copy: unpacked again and replaced
        logger.debug("Language model: cached copy %s unreadable (%s)", folder, exc)
        return None


def _write_cached(folder: Path, tables: dict[str, Any]) -> bool:
    """Keep the unpacked model: written into a temporary folder and renamed, so a process reading
    it meanwhile never sees half of it. True when it is there to be read."""
    np = import_numpy()

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            folder.with_name(folder.name + ".npz").unlink()  # the copy of earlier versions
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name, suffix=".tmp"))
        try:
            for name, table in tables.items():
                np.save(temporary / f"{name}.npy", table, allow_pickle=False)
            if folder.is_dir():  # a broken copy (a process mapping its files keeps them)
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.exists():
                folder.unlink()
            os.rename(temporary, folder)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
    except OSError as exc:
        if folder.is_dir() and _read_cached(folder) is not None:
            return True  # another process kept it first
        logger.debug("Language model: not kept in %s (%s)", folder, exc)
        return False
    logger.debug("Language model: unpacked copy kept in %s", folder)
    return True


def _as_numpy(values: array[int]) -> Any:
    np = import_numpy()

    return np.frombuffer(values, dtype=f"u{values.itemsize}")
