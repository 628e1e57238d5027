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

_identifier: Any = None  # py3langid's LanguageIdentifier, loaded on first use


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
    global _identifier
    if _identifier is None:
        _identifier = load_identifier()
    language: str
    language, _score = _identifier.classify(sample)
    return language


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

    from searchcrawl.dev.jvm_server import cache_dir

    packed = langid.MODEL_DIR / langid.MODEL_FILE
    return cache_dir() / f"py3langid-{py3langid.__version__}-{packed.stat().st_size}"


def load_identifier() -> Any:
    """py3langid's identifier with its bundled model, the same one ``py3langid.classify`` uses,
    its tables mapped from the unpacked copy in the cache (made when missing)."""
    np = import_numpy()
    from py3langid import langid, modelio

    try:
        cached = model_cache_path()
    except OSError as exc:  # the packed model unreadable: py3langid says why
        logger.debug("Language model: no cached copy (%s)", exc)
        return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE)
    model = _read_cached(cached)
    if model is None:
        ptc, pc, classes, nextmove, row, output = modelio.load_model(langid.MODEL_DIR / langid.MODEL_FILE)
        if _write_cached(cached, (ptc, pc, classes, nextmove, row, output)):
            model = _read_cached(cached)  # mapped, not held: the unpacked tables are freed
        if model is None:
            model = (np.asarray(ptc), np.asarray(pc), classes, nextmove, row, output)
    ptc, pc, classes, nextmove, row, output = model
    return langid.LanguageIdentifier(ptc, pc, classes, nextmove, output, tk_row=row)


# The model's tables, one .npy file each; the two large ones are mapped into memory.
MAPPED = ("ptc", "nextmove")
READ = ("pc", "classes", "row", "output")


def _read_cached(folder: Path) -> tuple[Any, ...] | None:
    np = import_numpy()

    try:
        mapped = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in MAPPED}
        read = {name: np.load(folder / f"{name}.npy", allow_pickle=False) for name in READ}
        return (
            mapped["ptc"],
            read["pc"],
            read["classes"].tolist(),
            _indexable(mapped["nextmove"]),  # indexed by the tokenizer an item at a time, as an array is
            read["row"].tolist(),
            read["output"].tolist(),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a broken copy: unpacked again and replaced
        logger.debug("Language model: cached copy %s unreadable (%s)", folder, exc)
        return None


def _write_cached(folder: Path, model: tuple[Any, ...]) -> bool:
    """Keep the unpacked model: written into a temporary folder and renamed, so a process reading
    it meanwhile never sees half of it. True when it is there to be read."""
    np = import_numpy()

    ptc, pc, classes, nextmove, row, output = model
    tables = {
        "ptc": ptc,
        "pc": pc,
        "classes": np.array(classes),
        "nextmove": _as_numpy(nextmove),
        "row": _as_numpy(row),
        "output": np.array(output, dtype=np.int64),
    }
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


def _indexable(values: Any) -> memoryview:
    """A numpy array of unsigned integers (mapped) as a memoryview of Python ints, which the
    tokenizer indexes as fast as the stdlib array it was, without a copy."""
    raw = memoryview(values).cast("B")
    itemsize = values.dtype.itemsize
    return raw.cast("H") if itemsize == 2 else raw.cast("I") if itemsize == 4 else raw.cast("L")
