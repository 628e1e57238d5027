"""The answer's orchestration, as results.py's ``run_search`` is the search's: one ``run_answer``
for the search page, the JSON API and the agents' endpoint (MCP), a question in, an answer or none
out, without HTTP.

Which answer: with a model server (``AnswerConfig`` with a URL) and the model asked for, the
model's (answers.py ``answer``), its prompt led by the extractive answer when that is on; else the
extractive answer alone (extractive.py ``with_extract``). Its fallbacks: a model that fails or
answers junk leaves its extract where there is one, else no answer; Solr or the embedding model
failing leaves no answer; the model is asked by ``ModelSlots.at_once`` answers at most, and more
get none at once, never a wait. No answer is never an error: the hits are shown alone, and
``AnswerRun.failed`` says why for the caller's log (which throttles it: web/context.py). Nothing is
cached: each searcher's answer is asked for them alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from searchcrawl.search import answers
from searchcrawl.search.answer_parts import Answer
from searchcrawl.search.answers import AnswerConfig
from searchcrawl.search.extractive import with_extract
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.trimmed_index import TrimmedIndex

# answers.py ``answer``'s shape: (index, model, question, config, filters, params, lead=...) -> Answer
Answerer = Callable[..., Answer]


class ModelSlots:
    """The answers asked of the model at once (each holds a thread until the model answers): a
    slot is taken without waiting, or there is none."""

    def __init__(self, at_once: int) -> None:
        self.at_once = at_once
        self._free = threading.BoundedSemaphore(at_once)

    @contextmanager
    def taken(self) -> Iterator[bool]:
        """Whether a slot was free, holding it until the block ends."""
        if not self._free.acquire(blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            self._free.release()


@dataclass(frozen=True)
class AnswerRun:
    """What ``run_answer`` gave: the answer (None: the hits alone), and why there is none where
    something failed ("" otherwise), for the caller's log: never the question nor the searcher."""

    answer: Answer | None
    failed: str = ""


def run_answer(
    index: TrimmedIndex,
    semantic: SemanticSearch | None,
    question: str,
    filters: Sequence[str],
    params: dict[str, Any],
    generative: AnswerConfig | None,
    extractive: AnswerConfig | None,
    slots: ModelSlots,
    answerer: Answerer = answers.answer,
) -> AnswerRun:
    """The answer to ``question`` from what the searcher of ``index`` may read (see the module's
    docstring). ``generative``: the model's configuration where the model is asked (None: it is
    not, or there is no server); ``extractive``: the extractive answer's (None: off). ``semantic``:
    the request's (``SemanticSearch.for_request``) or the installation's; None: no answer."""
    if semantic is None or not question.strip():
        return AnswerRun(None)
    model = semantic.active()
    if generative is None:
        if extractive is None:
            return AnswerRun(None)
        return extract_alone(index, model, question, filters, params, extractive, answerer)
    with slots.taken() as free:
        if not free:
            return AnswerRun(None, f"No answer: {slots.at_once} answers are waiting for the model already")
        lead = with_extract if extractive is not None else None
        try:
            return AnswerRun(answerer(index, model, question, generative, filters, params, lead=lead))
        except answers.AnswerFailed as exc:  # a model that fails or answers junk: its extract, or the hits alone
            shown = exc.gathered if exc.gathered is not None and exc.gathered.extract is not None else None
            return AnswerRun(shown, f"No answer (the hits are shown alone): {type(exc).__name__}")
        except Exception as exc:  # noqa: BLE001 - Solr failing: the hits alone
            return AnswerRun(None, f"No answer (the hits are shown alone): {type(exc).__name__}")


def extract_alone(
    index: TrimmedIndex,
    model: SemanticModel,
    question: str,
    filters: Sequence[str],
    params: dict[str, Any],
    config: AnswerConfig,
    answerer: Answerer,
) -> AnswerRun:
    """The extractive answer without a model (``config``: the passages' budgets and threshold);
    none when Solr or the embedding model fails."""
    try:
        return AnswerRun(answerer(index, model, question, config, filters, params, lead=with_extract))
    except Exception as exc:  # noqa: BLE001 - Solr or the embedding model failing: the hits alone
        return AnswerRun(None, f"No extractive answer (the hits are shown alone): {type(exc).__name__}")
