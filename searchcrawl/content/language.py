"""The language of a document when nothing declares it, detected from its text (py3langid: a
small bundled model, no download)."""

from __future__ import annotations

MIN_CHARS = 40  # shorter texts are too short to tell reliably


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None for text too short to tell."""
    sample = " ".join(text.split())[:5000]
    if len(sample) < MIN_CHARS:
        return None
    import py3langid  # loads its model on first use (about a second)

    language: str
    language, _score = py3langid.classify(sample)
    return language
