"""Answers with citations, only from what the searcher may read (issue 77).

The question is searched through the one Searcher: the kNN query of passages, trimmed before its
top k and each document confirmed readable (hybrid.py ``nearest_documents``). Of the passages
found, those similar enough (``AnswerConfig.threshold``, on Solr's kNN score, which for cosine is
(1 + cos) / 2) are sent, best first, at most ``passages`` of them and ``budget_chars`` characters
in all, each cut to ``passage_chars``, numbered [1], [2], ... to a model behind an
OpenAI-compatible chat URL (``/chat/completions``, plain HTTP, no vendor SDK). No passage similar
enough: no model call, and the answer says so.

The model's answer is checked sentence by sentence (``checked_answer``): a sentence keeps its
place only with a citation of a passage that was sent (one written after it: a citation that opens
a line, "[1] Title" as the prompt numbers the sources, cites nothing), a word (two letters in a row: a model's
"[2] 4.2." says nothing), and words its sources say (``supported``: at least
``AnswerConfig.support`` of its content words are in the passages it cites, the question's words not
counted, and its numbers, links and addresses too: a sentence of invented code, figures, URLs or
names is not what its citation says); a sentence without them is dropped. What is kept must speak of the question (a content word of it, where it has one: a
passage's title copied back is no answer), or the answer is refused. A citation of a number that
was never sent refuses the whole answer (the model confused its sources: nothing it says can be
trusted to be where it points). The answer is text, shown
escaped, never markup. Nothing is cached: each searcher's answer is asked for them alone. A model
that does not answer in time, or answers junk, leaves the hits alone (``AnswerFailed``, logged at
most once a minute by the caller).

Every decision is kept in the ``Answer`` (``considered``: each passage found, sent or left out and
why), which `scrapy explain-answer` prints with the grant that admitted each document.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from searchcrawl.rules.ranking_rules import URL_SCHEMES
from searchcrawl.search.answer_parts import (
    NO_ANSWER,
    NUMBER,
    URL,
    WORD,
    Answer,
    AnswerSource,
    Considered,
    Extract,
    SourceWords,
    content_words,
    link_of,
    speaks_of,
    split_sentences,
)
from searchcrawl.search.hybrid import TEXT_DIGEST, SemanticModel, made_from_current, nearest_documents
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.system.translations import N_

MAX_ANSWER_BYTES = 1 << 20  # a chat server's answer read at most
ANSWERS_API_KEY = "SEARCHCRAWL_ANSWERS_API_KEY"  # the chat server's key: environment or _FILE
MAX_QUESTION_CHARS = 500
SYSTEM_PROMPT = (
    "You answer questions from the numbered sources given, and from nothing else. "
    "After every sentence, cite the sources that say it, as [1] or [2][3]. "
    "If the sources do not answer the question, say only: I cannot answer this from the sources. "
    "Write plain sentences, no lists, no markup."
)
_ENDS = "[.!?。！？]"
# "It is booked online. [1]": citations written after the full stop are the sentence's own
_CITED_AFTER = re.compile(rf"({_ENDS})((?:\s*\[\d{{1,3}}\])+)")
# citations that open a line head what follows ("[1] Title", a source written out as the prompt
# numbers them, or "[2]" alone under "The answer is:"): the model was told to cite after each sentence,
# so these cite nothing, and are not taken for the citations of the sentence before them
_LEADING = re.compile(r"^(\s*(?:[-*•]\s*)?)((?:\[\d{1,3}\]\s*)+)(?=\S)")
_MARKERS_ONLY = re.compile(r"^\s*(?:[-*•]\s*)?(?:\[\d{1,3}\][\s,;.]*)+$")  # "[1]", "[1], [2]", "[1]."
_LINE = re.compile(r"\r\n|\r|\n")
# a line that ends a sentence: its full stop, then what may close it (a quote, a bracket, markup)
_ENDS_A_SENTENCE = re.compile(r"[.!?。！？．…][\"'”’)\]*_]*$")
# a number in brackets right after a letter or digit is code ("a[0]", "args[1]"), not a citation
_CITATION = re.compile(r"(?<![A-Za-z0-9_])\[(\d{1,3})\]")
# what is left of a citation the check did not read ([7 ], [7,8], [^7], a full-width bracket): the
# answer is refused rather than shown with a mark that points nowhere it was checked
_CITATION_LIKE = re.compile(r"(?<![A-Za-z0-9_])[\[［【]\s*\^?\s*[0-9０-９]|[¹²³⁴⁵⁶⁷⁸⁹⁰]")
MAX_ANSWER_CHARS = 4000  # of the model's text read
# a passage made from an older text of its document (select_sources): never sent, whatever its score
OLDER_TEXT = "made from an older text of it"
# why a model's answer is refused (``checked_answer``): English in ``Answer.refused`` (the JSON API's,
# explain-answer's), the page's language on the search page (``Answer.refusal``)
CITED_UNSENT = N_("the model cited a source it was not given")
CITED_UNREADABLE = N_("the model cited in a form the check cannot read")
CITED_NONE = N_("the model's answer cited none of the sources")
CITED_WORDLESS = N_("the model's answer holds no words, only numbers and citations")
CITED_UNSUPPORTED = N_("the model's answer is not what its sources say")
OFF_QUESTION = N_("the model's answer does not speak of the question")
# a mail address, or a host name without a scheme (a TLD an intranet's links commonly end in):
# written by a model that did not find it in its sources, it is someone else's address
_ADDRESS = re.compile(
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?<![\w@./-])(?:[a-z0-9-]+\.)+"
    r"(?:com|org|net|edu|gov|int|io|de|jp|uk|fr|eu|ch|at|nl|info|biz|local|corp|lan|intranet|internal)"
    r"\b(?:/[^\s<>\"'`)\]]*)?",
    re.IGNORECASE,
)


class AnswerFailed(Exception):
    """The model did not answer (unreachable, timed out, an error, junk): the hits alone.
    ``gathered``: the answer up to the model's failure (``answer`` sets it: the passages found, the
    sources and the prompt's size), which explain-answer shows."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.gathered: Answer | None = None


@dataclass(frozen=True)
class AnswerConfig:
    """SEARCHCRAWL_ANSWERS_*: the chat server and the budgets (docs/answers.md)."""

    url: str  # the server's base URL: <url>/chat/completions
    model: str
    api_key: str | None = field(default=None, repr=False)
    passages: int = 6
    passage_chars: int = 1200
    budget_chars: int = 6000
    threshold: float = 0.6
    support: float = 0.5  # share of a kept sentence's content words its cited sources say
    timeout: float = 30.0
    max_tokens: int = 300


def answer_config(get: Callable[[str], Any], api_key: str | None) -> AnswerConfig | None:
    """The answers' configuration from the SEARCHCRAWL_ANSWERS_* settings (``get``: a settings
    object's get), None when they are off (no URL)."""
    url = str(get("SEARCHCRAWL_ANSWERS_URL") or "").strip()
    if not url:
        return None
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"SEARCHCRAWL_ANSWERS_URL is http(s), not {url!r}")
    model = str(get("SEARCHCRAWL_ANSWERS_MODEL") or "")
    return replace(retrieval_config(get), url=url, model=model, api_key=api_key)


def retrieval_config(get: Callable[[str], Any]) -> AnswerConfig:
    """The SEARCHCRAWL_ANSWERS_* settings of the passages (their budgets and threshold) with no
    model (url ""): the extractive answer's (extractive.py), which never asks a model."""
    return AnswerConfig(
        url="",
        model="",
        passages=int(get("SEARCHCRAWL_ANSWERS_PASSAGES") or 6),
        passage_chars=int(get("SEARCHCRAWL_ANSWERS_PASSAGE_CHARS") or 1200),
        budget_chars=int(get("SEARCHCRAWL_ANSWERS_BUDGET_CHARS") or 6000),
        threshold=float(get("SEARCHCRAWL_ANSWERS_THRESHOLD") or 0.6),
        support=share_setting(get("SEARCHCRAWL_ANSWERS_SUPPORT"), 0.5, "SEARCHCRAWL_ANSWERS_SUPPORT"),
        timeout=float(get("SEARCHCRAWL_ANSWERS_TIMEOUT") or 30),
    )


def share_setting(value: Any, default: float, name: str) -> float:
    """A share (0 to 1) from a setting, ``default`` when unset; 0 is a value, not unset."""
    share = default if value is None or str(value).strip() == "" else float(value)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{name} is a share from 0 to 1, not {value!r}")
    return share


def answer_json(result: Answer) -> dict[str, Any]:
    """An answer as the JSON API gives it: the kept sentences with their citations' numbers,
    the sources cited, or why there is none."""
    return {
        "sentences": [{"text": text, "sources": list(cites)} for text, cites in result.sentences],
        "sources": [{"number": s.number, "title": s.title, "url": s.url} for s in result.cited],
        "refused": result.refused or None,
        "model": result.model,
        "extract": result.extract.as_json() if result.extract is not None else None,
    }


def anchored(url: str, heading: str) -> str:
    """``url`` with a text fragment of ``heading`` (browsers scroll to it), when it has none; ""
    for a URL of a scheme no hit links to (javascript:, data:)."""
    if urlsplit(url).scheme.lower() not in URL_SCHEMES:
        return ""
    if not heading or "#" in url or urlsplit(url).scheme.lower() not in ("http", "https"):
        return url
    words = heading[:80].rsplit(" ", 1)[0] if len(heading) > 80 else heading
    return f"{url}#:~:text={quote(words, safe='').replace('-', '%2D')}"


def select_sources(
    nearest: Sequence[tuple[str, dict[str, Any]]], documents: dict[str, dict[str, Any]], config: AnswerConfig
) -> tuple[list[AnswerSource], list[Considered]]:
    """The passages sent (numbered from 1) and every one found with its verdict. ``nearest``:
    (document id, its best passage with ``score``), best first; ``documents``: their display
    fields and text digest (the confirmed, readable ones). A passage not made from its document's
    current text (hybrid.py ``made_from_current``) is never sent: it may say what the page no
    longer does."""
    sources: list[AnswerSource] = []
    considered: list[Considered] = []
    spent = 0
    for parent, passage in nearest:
        doc = documents.get(parent)
        if doc is None:
            continue  # not readable now: never considered, never named
        score = float(passage.get("score") or 0.0)
        url = str(doc.get("display_url") or doc.get("url") or "")
        title = str(doc.get("title") or "") or url
        text = " ".join(str(passage.get("passage_text") or "").split())[: config.passage_chars]
        if not made_from_current(passage, doc):
            considered.append(Considered(parent, url, title, score, OLDER_TEXT))
            continue
        if score < config.threshold:
            considered.append(Considered(parent, url, title, score, "below the threshold"))
            continue
        if len(sources) >= config.passages or spent + len(text) > config.budget_chars:
            considered.append(Considered(parent, url, title, score, "over the budget"))
            continue
        heading = str(passage.get("passage_heading") or "")
        number = len(sources) + 1
        sources.append(AnswerSource(number, parent, anchored(url, heading), title, heading, text, score))
        considered.append(Considered(parent, url, title, score, f"sent as [{number}]"))
        spent += len(text)
    return sources, considered


def messages(question: str, sources: Sequence[AnswerSource], extract: Extract | None = None) -> list[dict[str, str]]:
    """The chat's messages: the rules, then the numbered sources and the question; with an
    ``extract`` (extractive.py), the sentences the passage ranking found answering, as a lead the
    model may build on (it still cites what it says)."""
    numbered = "\n\n".join(f"[{source.number}] {source.title}\n{source.text}" for source in sources)
    lead = ""
    if extract is not None and extract.marked:
        lead = f"\n\nMost likely answering, in source [{extract.source.number}]: {' '.join(extract.marked)}"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Sources:\n\n{numbered}{lead}\n\nQuestion: {question}"},
    ]


def supported(sentence: str, sources: Sequence[SourceWords | str], question: str = "") -> float:
    """The share of ``sentence``'s content words that the ``sources`` it cites (their titles
    included) say. The question's words are not counted: a model that repeats a question back
    ("yes, the bonus pool is 2 million") says nothing its sources say. 0.0 for a sentence without
    a content word (nothing of it can be checked, so nothing of it is vouched for), with a link its
    sources do not hold (#4786's links to nowhere; a mail address or a host name alike), or with a
    number neither they nor the question hold (40 days where the source says 25)."""
    given = [source if isinstance(source, SourceWords) else SourceWords(source) for source in sources]
    words = content_words(sentence)
    if not words:
        return 0.0
    links = set().union(*(each.links for each in given))
    if any(link_of(url) not in links for url in URL.findall(sentence)):
        return 0.0
    unlinked = URL.sub(" ", sentence)
    if any(not any(found.casefold().rstrip(".") in each.folded for each in given) for found in _ADDRESS.findall(unlinked)):
        return 0.0
    numbers = set(NUMBER.findall(question)).union(*(each.numbers for each in given))
    if any(number not in numbers for number in NUMBER.findall(unlinked)):
        return 0.0
    return sum(any(each.says(word) for each in given) for word in words) / len(words)


def uncited_headings(text: str) -> list[str]:
    """The model's text in blocks that no sentence and no citation crosses, with the citations
    that head a line taken out: those before the line's own text (a block starts there), and a
    line of citations alone where the line before it ends no sentence, or there is none (a block
    starts after it). Those that end a line, or stand alone after a sentence's end, stay its own.
    Taken out, they are still checked against the sources sent (``checked_answer``)."""
    blocks: list[list[str]] = [[]]
    before = ""  # the last line kept with something on it
    for line in _LINE.split(text):
        if _MARKERS_ONLY.match(line):
            if not _ENDS_A_SENTENCE.search(before):
                blocks.append([])
                continue
        else:
            uncited = _LEADING.sub(r"\1", line)
            if uncited != line:
                blocks.append([])
            line = uncited
            before = line.rstrip() or before
        blocks[-1].append(line)
    return [" ".join(block) for block in blocks if block]


def sentences_of(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """The model's sentences as they would be shown (its citations taken out) with the numbers each
    cites, in its first MAX_ANSWER_CHARS characters."""
    found = []
    for block in uncited_headings(text[:MAX_ANSWER_CHARS]):
        for sentence in split_sentences(_CITED_AFTER.sub(r"\2\1", " ".join(block.split()))):
            numbers = tuple(int(number) for number in _CITATION.findall(sentence))
            plain = " ".join(_CITATION.sub(" ", sentence).split())
            plain = re.sub(r"\s+([.,;:!?。！？])", r"\1", plain)
            if plain or numbers:
                found.append((plain, numbers))
    return found


def dropped_because(plain: str, numbers: tuple[int, ...], sources: Sequence[SourceWords], question: str, support: float) -> str:
    """Why a sentence of a model's answer is not kept ("" when it is): ``checked_answer``'s rules
    for one sentence, in words explain-answer shows. ``sources``: each numbered source's words."""
    if not numbers or not plain:
        return "no citation"
    if "cannot answer" in plain.lower():
        return "says it cannot answer"
    if not WORD.search(plain):  # "[2] 4.2." says nothing: dropped as an uncited sentence is
        return "no word"
    share = supported(plain, [sources[number - 1] for number in dict.fromkeys(numbers)], question)
    if share < support:
        return f"its sources say {share:.0%} of its words, under {support:.0%}"
    return ""


def checked_answer(
    text: str, sources: Sequence[str], question: str = "", support: float = 0.5
) -> tuple[list[tuple[str, tuple[int, ...]]], str]:
    """(sentences kept with the sources each cites, why the answer is refused or ""): see the
    module's docstring. ``sources``: the texts numbered 1, 2, ... as they were sent (title and
    passage); ``support``: ``AnswerConfig.support``."""
    given = [SourceWords(source) for source in sources]
    kept: list[tuple[str, tuple[int, ...]]] = []
    reasons: set[str] = set()
    # every citation, those that head a line too (which cite nothing, but say the model confused its sources)
    if any(not 1 <= int(number) <= len(sources) for number in _CITATION.findall(text[:MAX_ANSWER_CHARS])):
        return [], CITED_UNSENT
    for plain, numbers in sentences_of(text):
        if _CITATION_LIKE.search(plain):
            return [], CITED_UNREADABLE
        why = dropped_because(plain, numbers, given, question, support)
        if not why:
            kept.append((plain, tuple(dict.fromkeys(numbers))))
        elif why == "no word":
            reasons.add(CITED_WORDLESS)
        elif why.startswith("its sources say"):
            reasons.add(CITED_UNSUPPORTED)
    if not kept:
        return [], CITED_UNSUPPORTED if CITED_UNSUPPORTED in reasons else CITED_WORDLESS if reasons else CITED_NONE
    if not speaks_of([plain for plain, _cites in kept], question):
        return [], OFF_QUESTION
    return kept, ""


def ask_model(config: AnswerConfig, chat: list[dict[str, str]]) -> str:
    """The model's answer to ``chat`` (``AnswerFailed`` when there is none), within
    ``config.timeout`` in all (a server that trickles its answer is not waited for longer)."""
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    body: dict[str, Any] = {
        "model": config.model,
        "messages": chat,
        "temperature": 0,
        "max_tokens": config.max_tokens,
        "stream": False,
    }
    url = config.url.rstrip("/") + "/chat/completions"
    deadline = time.monotonic() + config.timeout
    try:
        with requests.Session() as session:
            session.trust_env = False
            with session.post(url, json=body, headers=headers, timeout=config.timeout, stream=True, allow_redirects=False) as got:
                if got.status_code != 200:
                    raise AnswerFailed(f"the chat server answered HTTP {got.status_code}")
                data = b""
                for chunk in got.iter_content(65536):
                    data += chunk
                    if len(data) > MAX_ANSWER_BYTES:
                        raise AnswerFailed("the chat server's answer is too large")
                    if time.monotonic() > deadline:
                        raise AnswerFailed("the chat server took too long")
    except AnswerFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - requests' and urllib3's alike
        raise AnswerFailed(f"the chat server did not answer: {type(exc).__name__}") from None
    try:
        content = json.loads(data)["choices"][0]["message"]["content"]
    except Exception as exc:  # noqa: BLE001 - junk of any shape (nesting too deep included)
        raise AnswerFailed(f"the chat server's answer is not one: {type(exc).__name__}") from None
    if not isinstance(content, str):
        raise AnswerFailed("the chat server's answer holds no text")
    return content


def answer(
    index: TrimmedIndex,
    model: SemanticModel,
    question: str,
    config: AnswerConfig,
    filters: Sequence[str] = (),
    params: dict[str, Any] | None = None,
    window: int = 20,
    lead: Callable[[Answer], None] | None = None,
) -> Answer:
    """The answer to ``question`` from what the searcher of ``index`` may read (see the module's
    docstring). The passages gathered (``sources``, each found with its verdict in ``considered``)
    are the one retrieval, trimming and "no answer" floor of the model's answers and the extractive
    one: ``lead`` (extractive.py ``with_extract``) sees them before the model does, and its extract
    leads the prompt. A ``config`` without a URL asks no model: the answer is what ``lead`` made of
    the passages. Raises ``AnswerFailed`` when the model fails (with what was gathered up to
    then); IndexingError when Solr does."""
    started = time.monotonic()
    question = " ".join(question.split())[:MAX_QUESTION_CHARS]
    result = Answer(question, model=config.model)
    nearest = nearest_documents(index, model, question, filters, params or {}, window)
    documents: dict[str, dict[str, Any]] = {}
    if nearest:
        ids = [parent for parent, _ in nearest]
        found = index.search(
            "*:*",
            {
                **(params or {}),
                "fq": [*filters, '{!terms f=id separator=" "}' + " ".join(ids)],
                "fl": f"id,url,display_url,title,{TEXT_DIGEST}",
                "rows": len(ids),
                "hl": "false",
                "facet": "false",
            },
        )
        documents = {str(doc["id"]): doc for doc in found.docs}
    result.sources, result.considered = select_sources(nearest, documents, config)
    if not result.sources:
        result.refused = NO_ANSWER
    if lead is not None:
        lead(result)
    if not result.sources or not config.url:
        result.seconds = time.monotonic() - started
        return result
    result.asked_model = True
    chat = messages(question, result.sources, result.extract)
    result.prompt_chars = sum(len(message["content"]) for message in chat)
    try:
        result.raw = ask_model(config, chat)
    except AnswerFailed as exc:
        result.seconds = time.monotonic() - started
        exc.gathered = result
        raise
    given = [source.given for source in result.sources]
    result.sentences, refused = checked_answer(result.raw, given, question, config.support)
    result.reason = refused
    result.refused = refused and f"No answer: {refused}."
    result.seconds = time.monotonic() - started
    return result
