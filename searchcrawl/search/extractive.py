"""Extractive answers: the answering sentence without a language model (issue 93).

For a question (``is_question``: the query classifier), the passages are gathered exactly as for
the model's answers (answers.py ``answer``, with ``with_extract`` as its lead and no model URL: the kNN query through the one Searcher, trimmed before
its top k, each document confirmed readable, a passage made from an older text of its page never
taken, none under ``AnswerConfig.threshold``: "No answer in what you may read."). Of those, in the
passage ranking's order (the kNN score; a ``Reranker``'s scores where one is given), the first
whose best sentence speaks of the question (answers.py ``speaks_of``, the rule a model's answer is
held to) is the answer: that passage, its answering sentences marked (``marked_sentences``: those
that say the most of the question's content words), cited with its title and its link (at its
heading, answers.py ``anchored``). Nothing is written, so nothing can be invented: what is shown is
a readable page's current text, word for word.

With a model server the same extract goes into the model's prompt as a lead (answers.py
``messages``), and the page shows it beside the model's answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

from searchcrawl.search.answer_parts import (
    NO_ANSWER,
    Answer,
    AnswerSource,
    Extract,
    SourceWords,
    content_words,
    speaks_of,
    split_sentences,
)
from searchcrawl.search.hybrid import cut
from searchcrawl.search.query import FUNCTION_WORDS, asked_text

logger = logging.getLogger(__name__)

MARKED = 2  # answering sentences marked at most
CONTEXT = 1  # sentences shown before and after the marked ones
SENTENCE_CHARS = 400  # a shown sentence cut to this (a code block without a full stop is one "sentence")
# the first word of a question (English, German, French, Spanish)
QUESTION_WORDS = frozenset(
    "how what why when where which who whom whose can could should would will shall does do did is are was were "
    "wie was warum wann wo welche welcher welches wer kann können muss soll gibt "
    "comment pourquoi quand où quel quelle qui que est peut "
    "cómo qué por cuándo dónde cuál quién puedo".split()
)
REQUEST_WORDS = 4  # a request in a user's words ("remove noise from a photo") has at least this many
# code, a path, a stack trace, a class's or an exception's name: an error message, not a question
_CODE = re.compile(r"[\w)\]]\.[A-Za-z_]|::|[(){}\[\]<>=_/\\]|\b\w*(?:Error|Exception)\b|\b[A-Za-z][a-z]+[A-Z]\w*")
_QUESTION_MARK = re.compile(r"[?？]\s*$")
_JAPANESE_QUESTION = re.compile(r"(?:か|ですか|ますか|には|方法|どう|なぜ|何)[。？?]?\s*$")

# A re-ranker's scores of the gathered passages, higher first (issue 93, point 1's stage): given, it
# orders them instead of the kNN score. (question, passages) -> one score a passage.
Reranker = Callable[[str, Sequence[AnswerSource]], Sequence[float]]


def is_question(query: str) -> bool:
    """Whether ``query`` is a question, the kind an extractive answer is shown for: it ends with a
    question mark, opens with a question word (QUESTION_WORDS), ends as a Japanese question does, or
    is a request in a user's words (at least REQUEST_WORDS words, one of them a function word,
    such as "remove noise from a photo"). Code, paths and exceptions' names make it an error
    message, unless it ends with a question mark; two or three keywords are not a question."""
    text = " ".join(query.split())
    if not text:
        return False
    if _QUESTION_MARK.search(text) or _JAPANESE_QUESTION.search(text):
        return True
    words = text.casefold().split()
    if words[0].strip("¿¡,") in QUESTION_WORDS and len(words) > 1:
        return True
    if _CODE.search(text):
        return False
    return len(words) >= REQUEST_WORDS and any(word in FUNCTION_WORDS for word in words)


def said_of(sentence: str, asked: set[str]) -> int:
    """How many of the question's content words (``asked``) ``sentence`` says (as answers.py
    ``SourceWords.says`` compares them: their first letters, any ending)."""
    words = SourceWords(sentence)
    return sum(words.says(word) for word in asked)


def asked_words(question: str) -> set[str]:
    """The question's content words (answers.py ``content_words``) less its scaffolding (query.py
    ``SCAFFOLDING``: "what", "does", "best", "want") and its function words ("from", "that",
    "with"): what an answer must speak of. A passage that says "what" or "from" says nothing of
    "what is the best way to eat from a ball python"."""
    return content_words(asked_text(question))


def marked_sentences(question: str, text: str, asked: set[str] | None = None) -> tuple[list[tuple[str, bool]], int]:
    """The sentences of ``text`` around its answer, each with whether it is marked, and how many
    of the question's content words (``asked``; None: ``content_words(question)``) the marked ones
    say (0: none says any, nothing marked). The marked ones say the most of them (at most MARKED,
    the first on a tie, kept in the text's order), with CONTEXT sentences before and after."""
    sentences = split_sentences(text)
    asked = content_words(question) if asked is None else asked
    said = [said_of(sentence, asked) for sentence in sentences]
    best = max(said, default=0)
    if best == 0:
        return [(cut(sentence, SENTENCE_CHARS), False) for sentence in sentences[: 1 + 2 * CONTEXT]], 0
    chosen = [at for at, count in enumerate(said) if count == best][:MARKED]
    first, last = max(chosen[0] - CONTEXT, 0), min(chosen[-1] + CONTEXT, len(sentences) - 1)
    return [(cut(sentences[at], SENTENCE_CHARS), at in chosen) for at in range(first, last + 1)], best


# How the extract's passage is chosen of those gathered (issue 100, point 5; tests/benchmarks/
# extract_choice.py; docs/answers.md): "knn-asked", the first in the kNN order whose marked
# sentences say a word the question asks (``asked_words``); "knn", issue 93's rule, where the
# question's scaffolding and function words counted ("what", "does", "from"); "said", the one whose
# sentences say the most of the question's words, the kNN order on a tie; "covered", "said" held to
# at least half of them. "said" and "covered" lose answering pages on the judged sets (held out
# too): they are kept for measuring.
CHOICES = ("knn-asked", "knn", "said", "covered")
CHOICE = "knn-asked"


def best_extract(
    question: str, sources: Sequence[AnswerSource], rerank: Reranker | None = None, choice: str = CHOICE
) -> Extract | None:
    """The extract of the first of ``sources`` (answers.py ``answer``'s: readable, current, at
    or above the threshold) in the ranking's order whose marked sentences speak of ``question``
    (``choice``: ``CHOICES``); None when none does."""
    scores = list(rerank(question, sources)) if rerank is not None else [source.score for source in sources]
    asked = content_words(question) if choice == "knn" else asked_words(question)
    ranked = sorted(zip(scores, range(len(sources)), sources, strict=True), key=lambda item: (-item[0], item[1]))
    marked = [(score, source, *marked_sentences(question, source.text, asked)) for score, _at, source in ranked]
    if choice in ("said", "covered"):
        marked.sort(key=lambda item: -item[3])  # stable: the ranking's order on a tie
    least = (len(asked) + 1) // 2 if choice == "covered" else 1
    for score, source, sentences, said in marked:
        shown = [text for text, is_marked in sentences if is_marked]
        if said >= least and (speaks_of(shown, question) if choice == "knn" else True):
            logger.debug("Extractive answer: %s (score %.3f, %d of the question's words)", source.document, score, said)
            return Extract(source, tuple(sentences), score)
    return None


def with_extract(result: Answer, rerank: Reranker | None = None) -> None:
    """``result`` (answers.py ``answer``'s, as its ``lead``) given the extract chosen of its
    passages (``Answer.extract``), and ``refused`` NO_ANSWER when there is none: the answer of a
    configuration without a model, the model's lead with one."""
    result.extract = best_extract(result.question, result.sources, rerank)
    result.refused = "" if result.extract is not None else NO_ANSWER
