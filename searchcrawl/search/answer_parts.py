"""What an answer is made of, below both ways of answering (answers.py, the model's; extractive.py,
the one without a model): the answer as a value (``Answer``: the sources sent, each
``AnswerSource`` numbered, every passage ``Considered`` with its verdict, the ``Extract`` that
stands in for the model or leads it), and the reading of text both hold an answer to
(``split_sentences``: the one splitter of a model's answer and of a passage; ``content_words`` and
``SourceWords``: what a text says, word by word; ``speaks_of``: whether what is kept speaks of the
question). Both import them from here, and neither imports the other: the answer's run
(answer_run.py) is the one place that puts the two together.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from searchcrawl.system.translations import N_, translated
from searchcrawl.system.translations import gettext as _

# a sentence ends at . ! ? and a space, or at a full stop of Japanese or Chinese (no space after)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")
# a full stop after an abbreviation or an initial ends no sentence: "Except contractors, e.g. interns,
# all get 25 days [1]" kept from "interns" on would say what its source does not
_ABBREVIATED = re.compile(
    r"(?:^|[\s(])(?:[^\W\d_]|e\.g|i\.e|etc|cf|vs|approx|incl|no|nr|fig|dr|mr|mrs|ms|prof|st|z\.\s?b|d\.\s?h|u\.\s?a|bzw|ca|vgl|usw|ggf)\.$",
    re.IGNORECASE,
)
NO_ANSWER = N_("No answer in what you may read.")
WORD = re.compile(r"[^\W\d_]{2,}")  # two letters in a row: a word, in any script
# scripts written without spaces between words: compared two characters at a time
_SPACELESS = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
CONTENT_LETTERS = 4  # shorter words are mostly function words (the, und, est): not compared
STEM_LETTERS = 5  # words compared on their first letters: "indexing" says "indexer", "slowest" "slow"
URL = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s<>\"'`)\]]+", re.IGNORECASE)
NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")  # 25, 4.2, 15:30, 2026-03-15, 1,000


@dataclass(frozen=True)
class AnswerSource:
    number: int
    document: str  # the Solr id
    url: str  # the document's display URL, with a text fragment of the heading where known
    title: str
    heading: str
    text: str  # what was sent
    score: float

    @property
    def given(self) -> str:
        """What the model was given of it, as the check compares a sentence with it: its title and
        its passage."""
        return f"{self.title}\n{self.text}"


@dataclass(frozen=True)
class Considered:
    document: str
    url: str
    title: str
    score: float
    verdict: str  # "sent as [n]", "below the threshold", "over the budget", answers.py OLDER_TEXT


@dataclass(frozen=True)
class Extract:
    """The extractive answer: one passage the searcher may read, its sentences around the answer
    with the answering ones marked, and its citation (``source``: title, link, heading)."""

    source: AnswerSource
    sentences: tuple[tuple[str, bool], ...]  # (text, marked), in the passage's order
    score: float  # the passage ranking's score that chose it (kNN, or the re-ranker's)

    @property
    def marked(self) -> list[str]:
        return [text for text, marked in self.sentences if marked]

    def as_json(self) -> dict[str, Any]:
        """As the JSON API and the agents' tool give it."""
        return {
            "sentences": [{"text": text, "answering": marked} for text, marked in self.sentences],
            "source": {"number": self.source.number, "title": self.source.title, "url": self.source.url},
            "heading": self.source.heading,
            "score": round(self.score, 4),
        }


@dataclass
class Answer:
    question: str
    sentences: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # text, sources cited
    sources: list[AnswerSource] = field(default_factory=list)  # those sent, numbered
    refused: str = ""  # why there is no answer ("" when there is one), in English (the JSON API's)
    reason: str = ""  # the check's reason within ``refused`` ("" for NO_ANSWER or an answer)
    considered: list[Considered] = field(default_factory=list)
    prompt_chars: int = 0
    model: str = ""
    seconds: float = 0.0
    raw: str = field(default="", repr=False)  # the model's text as it came (explain-answer only)
    # the best passage with its answering sentences marked (extractive.py; issue 93): the answer
    # without a model, and what the model's prompt points it to with one
    extract: Extract | None = None
    asked_model: bool = False  # whether a model was asked (the page offers to ask it otherwise)

    def refusal(self) -> str:
        """Why there is no answer in the page's language ("" when there is one): ``refused`` is
        NO_ANSWER, or "No answer: " and one of answers.py ``checked_answer``'s reasons."""
        if not self.refused:
            return ""
        if self.reason:
            return _("No answer: %(reason)s.", reason=translated(self.reason))
        return translated(self.refused)

    @property
    def cited(self) -> list[AnswerSource]:
        """The sources the kept sentences cite, in their numbers' order."""
        numbers = sorted({number for _text, cites in self.sentences for number in cites})
        return [source for source in self.sources if source.number in numbers]


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its content, as answers.py ``supported`` compares them: case-folded,
    cut to ``STEM_LETTERS`` (a light stem in any language that spaces its words), shorter than
    ``CONTENT_LETTERS`` left out; in a script without spaces, every two characters."""
    words: set[str] = set()
    for word in WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _SPACELESS.search(word):
            words.update(word[at : at + 2] for at in range(len(word) - 1))
        elif len(word) >= CONTENT_LETTERS:
            words.add(word[:STEM_LETTERS])
    return words


def link_of(url: str) -> str:
    """A URL as links are compared: its trailing punctuation off, its scheme and host in lower case."""
    url = url.rstrip(".,;:!?")
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}"


class SourceWords:
    """What the model was given of one source, as a sentence is compared with it: its content
    words (and their first CONTENT_LETTERS letters, for a word that ends sooner), its numbers
    and its links. Made once an answer for each source, whatever its sentences cite."""

    def __init__(self, text: str) -> None:
        self.words = content_words(text)
        self.stems = {word[:CONTENT_LETTERS] for word in self.words if len(word) > CONTENT_LETTERS}
        self.numbers = set(NUMBER.findall(text))
        self.links = {link_of(url) for url in URL.findall(text)}
        self.folded = text.casefold()  # where an address is looked for, in any case

    def says(self, word: str) -> bool:
        """Whether the source holds ``word`` (of ``content_words``) or a word that differs from it
        only in an ending ("slow" and "slowest", "index" and "indexed")."""
        if word in self.words:
            return True
        if len(word) > CONTENT_LETTERS:
            return word[:CONTENT_LETTERS] in self.words
        return len(word) == CONTENT_LETTERS and word in self.stems


def speaks_of(kept: Sequence[str], question: str) -> bool:
    """Whether the kept sentences name something the question asked (a content word of it); true
    for a question without one (nothing to compare)."""
    asked = SourceWords(question)
    return not asked.words or any(asked.says(word) for text in kept for word in content_words(text))


def split_sentences(text: str) -> list[str]:
    """``text`` (its whitespace collapsed) in sentences: each ends at . ! ? and a space, or at a
    Japanese or Chinese full stop, but not after an abbreviation or an initial (``_ABBREVIATED``).
    The one splitter of a model's answer and of a passage (extractive.py)."""
    pieces: list[str] = []
    for piece in _SENTENCE.split(" ".join(text.split())):
        if pieces and _ABBREVIATED.search(pieces[-1][-12:]):  # its end: no scan of what grows
            pieces[-1] += " " + piece
        elif piece:
            pieces.append(piece)
    return pieces
