"""A document's text cut into passages: what a vector stands for.

One vector for a whole manual says little of any page of it, so a document is embedded in
passages of at most ``PASSAGE_WORDS`` words (about 170 tokens of a sentence-transformer, inside
all-MiniLM's 256), never crossing a heading: a passage begins at each of the document's headings
(its ``outline``, found in its text in order) and is cut between sentences where it can, between
words where a sentence is longer than a passage. Passages do not overlap: no word is in two of
them. They are not searched by words at all (the words query reads the document's fields), so
nothing is counted twice in a words score. The embedded text is the passage with its document's
title and its heading before it, so a passage that never names its subject still carries it.

A very long document keeps its first ``MAX_PASSAGES`` passages (about 50,000 words); the rest of
it is found by words alone. Everything here is plain computation on strings: tested directly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

PASSAGE_WORDS = 128  # at most, a passage; a section's last passage may be shorter
MIN_WORDS = 24  # a shorter section (a heading alone, a one-line intro) joins the one after it
MAX_PASSAGES = 400  # a document's
MAX_HEADING_CHARS = 200
MAX_OUTLINE = 200  # headings a document keeps (extract's outline)
MAX_WORD_CHARS = 64  # a longer "word" (base64, a URL, a language written without spaces) is cut
MAX_TEXT_CHARS = MAX_PASSAGES * PASSAGE_WORDS * 16  # of a document's text read at all
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s])")


@dataclass(frozen=True)
class Passage:
    ordinal: int
    text: str  # the passage as the document says it (the snippet)
    heading: str  # the heading it is under ("" before the first)
    embedded: str  # what the model reads: title, heading and text

    def checksum(self, model: str) -> str:
        """What a vector was made of: the model and the embedded text (a passage whose text and
        model are unchanged keeps its vector)."""
        return hashlib.sha256(f"{model}\n{self.embedded}".encode()).hexdigest()[:32]


def sections(text: str, headings: Sequence[str]) -> list[tuple[str, str]]:
    """(heading, text) of each part of ``text`` that begins at one of ``headings``, found in
    order (a heading not found after the previous one is passed over); the text before the
    first is a part with heading ""."""
    cuts: list[tuple[int, str]] = []
    position = 0
    for heading in headings[:MAX_OUTLINE]:
        heading = " ".join(heading.split())[:MAX_HEADING_CHARS]
        if not heading:
            continue
        found = text.find(heading, position)
        if found < 0:
            continue
        cuts.append((found, heading))
        position = found + len(heading)
    parts: list[tuple[str, str]] = []
    starts = [(0, ""), *cuts]
    for number, (start, heading) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(text)
        body = text[start:end].strip()
        if heading and body.startswith(heading):
            body = body[len(heading) :].strip()
        if body:
            parts.append((heading, body))
    return parts


def _words(sentence: str) -> list[str]:
    """The words of ``sentence``, one longer than MAX_WORD_CHARS cut into pieces of that length:
    a passage is at most PASSAGE_WORDS * MAX_WORD_CHARS characters, whatever the text."""
    found: list[str] = []
    for word in sentence.split():
        found.extend(word[start : start + MAX_WORD_CHARS] for start in range(0, len(word), MAX_WORD_CHARS))
    return found


def _pieces(body: str) -> list[list[str]]:
    """The sentences of ``body`` as word lists, a sentence longer than a passage cut in pieces."""
    pieces: list[list[str]] = []
    for sentence in _SENTENCE_END.split(body):
        words = _words(sentence)
        for start in range(0, len(words), PASSAGE_WORDS):
            if words[start : start + PASSAGE_WORDS]:
                pieces.append(words[start : start + PASSAGE_WORDS])
    return pieces


def split_passages(text: str, title: str = "", headings: Sequence[str] = ()) -> list[Passage]:
    """``text``'s passages, in order (see the module's docstring)."""
    grouped: list[tuple[str, list[str]]] = []
    carried: list[str] = []  # a short section, joined to the next
    carried_heading = ""
    for heading, body in sections(" ".join(text[:MAX_TEXT_CHARS].split()), headings):
        words_in = len(_words(body))
        if carried:
            heading = carried_heading or heading
        if words_in + len(carried) < MIN_WORDS:
            carried, carried_heading = carried + _words(body), heading
            continue
        current: list[str] = list(carried)
        carried, carried_heading = [], ""
        for piece in _pieces(body):
            if current and len(current) + len(piece) > PASSAGE_WORDS:
                grouped.append((heading, current))
                current = []
            current.extend(piece)
        if current:
            grouped.append((heading, current))
        if len(grouped) >= MAX_PASSAGES:
            break
    if carried and len(grouped) < MAX_PASSAGES:
        if grouped and len(grouped[-1][1]) + len(carried) <= PASSAGE_WORDS:
            grouped[-1] = (grouped[-1][0], grouped[-1][1] + carried)
        else:
            grouped.append((carried_heading, carried))
    title = " ".join(title.split())[:MAX_HEADING_CHARS]
    passages = []
    for ordinal, (heading, words) in enumerate(grouped[:MAX_PASSAGES]):
        passage = " ".join(words)
        context = " — ".join(part for part in (title, heading if heading != title else "") if part)
        passages.append(Passage(ordinal, passage, heading, f"{context}\n{passage}" if context else passage))
    return passages
