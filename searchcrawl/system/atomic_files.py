"""Files written whole or not at all: a text written beside its place, flushed, then renamed over it.

The source editor's saves and a restore's files go through here, so that a crash leaves the old
file or the new one, never half of one, and so that the bytes written are exactly the text's
UTF-8 (no line end translated: the text checked is the text saved, issue 99).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` (its folder made if missing): written to a file beside it, flushed,
    then renamed over it; the file beside it is removed if anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".saving")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as written:
            written.write(text)
            written.flush()
            os.fsync(written.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
