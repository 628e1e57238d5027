"""The language of a document when nothing declares it, detected from its text (py3langid: a
small bundled model, no download).

py3langid ships its model LZMA-compressed (4.5 MB, 68 MB unpacked): unpacking it took 0.4 s of
CPU in every crawl process that met one document without a declared language, a fifth of a
one-page crawl. The first process to load it keeps the unpacked model in the user's cache
(``~/.cache/searchcrawl/py3langid-<version>-<size of the packed model>.npz``, uncompressed), and
the next ones read that in a twentieth of the time. Without a writable cache the model is
unpacked as before.
"""

from __future__ import annotations

import logging
import os
import tempfile
from array import array
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MIN_CHARS = 40  # shorter texts are too short to tell reliably

_identifier: Any = None  # py3langid's LanguageIdentifier, loaded on first use


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None for text too short to tell."""
    sample = " ".join(text.split())[:5000]
    if len(sample) < MIN_CHARS:
        return None
    global _identifier
    if _identifier is None:
        _identifier = load_identifier()
    language: str
    language, _score = _identifier.classify(sample)
    return language


def model_cache_path() -> Path:
    """Where the unpacked model is kept: named by py3langid's version and its packed model's size,
    so an upgrade that changes the model never reads an older one."""
    from importlib.metadata import version

    from py3langid import langid

    from searchcrawl.dev.jvm_server import cache_dir

    packed = langid.MODEL_DIR / langid.MODEL_FILE
    return cache_dir() / f"py3langid-{version('py3langid')}-{packed.stat().st_size}.npz"


def load_identifier() -> Any:
    """py3langid's identifier with its bundled model, the same one ``py3langid.classify`` uses,
    read from the unpacked copy in the cache (made when missing)."""
    import numpy as np
    from py3langid import langid, modelio

    try:
        cached = model_cache_path()
    except OSError as exc:  # the packed model unreadable: py3langid says why
        logger.debug("Language model: no cached copy (%s)", exc)
        return langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE)
    model = _read_cached(cached)
    if model is None:
        model = modelio.load_model(langid.MODEL_DIR / langid.MODEL_FILE)
        _write_cached(cached, model)
    ptc, pc, classes, nextmove, row, output = model
    return langid.LanguageIdentifier(np.asarray(ptc), np.asarray(pc), classes, nextmove, output, tk_row=row)


def _read_cached(path: Path) -> tuple[Any, ...] | None:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            return (
                data["ptc"],
                data["pc"],
                data["classes"].tolist(),
                _as_array(data["nextmove"]),
                _as_array(data["row"]),
                data["output"].tolist(),
            )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError) as exc:  # a broken copy: unpacked again and replaced
        logger.debug("Language model: cached copy %s unreadable (%s)", path, exc)
        return None


def _write_cached(path: Path, model: tuple[Any, ...]) -> None:
    """Keep the unpacked model; written to a temporary file and renamed, so a process reading it
    meanwhile never sees half a file."""
    import numpy as np

    ptc, pc, classes, nextmove, row, output = model
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(
                    file,
                    ptc=ptc,
                    pc=pc,
                    classes=np.array(classes),
                    nextmove=_as_numpy(nextmove),
                    row=_as_numpy(row),
                    output=np.array(output, dtype=np.int64),
                )
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        logger.debug("Language model: not kept in %s (%s)", path, exc)
    else:
        logger.debug("Language model: unpacked copy kept in %s", path)


def _as_numpy(values: array[int]) -> Any:
    import numpy as np

    return np.frombuffer(values, dtype=f"u{values.itemsize}")


def _as_array(values: Any) -> array[int]:
    """A numpy array of unsigned integers as the stdlib array py3langid's tokenizer indexes."""
    import numpy as np

    typecode = {2: "H", 4: "I", 8: "L"}[values.dtype.itemsize]
    converted: array[int] = array(typecode)
    contiguous: Any = np.ascontiguousarray(values)
    converted.frombytes(memoryview(contiguous).cast("B"))
    return converted
