"""Why an answer says what it says (issue 77): `scrapy explain-answer` and the administration's page.

An administrator's view, as explain-access is (access/explanation.py): the answer a searcher would
get (answers.py ``answer``, trimmed to them), then, untrimmed, the access of
every document it considered with the decision that admitted it, and the passages nearest the
question whose documents the searcher may not read, each with the decision that refused it (never
sent to a model, never shown to the searcher). Every decision is made on the document's own access,
as the answer's is (hybrid.py ``confirmed``), never on a passage's copy of it, which is stale
between an access change and the passages' next pass: a page the searcher just gained, whose
passages' copies still refuse them (so the answer could not find it), is listed there too, as
readable now. A model that fails leaves the passages found
and the prompt's size shown, and says why there is no answer. Returned as lines of text: the
command prints them, the page shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from searchcrawl.access.decision import Principals, decide
from searchcrawl.access.explanation import access_of_fields
from searchcrawl.access.tokens import Access
from searchcrawl.index.solr_client import PASSAGES, SolrIndex
from searchcrawl.search.answer_parts import Answer, SourceWords
from searchcrawl.search.answers import AnswerConfig, AnswerFailed, answer, dropped_because, sentences_of
from searchcrawl.search.extractive import with_extract
from searchcrawl.search.hybrid import SemanticModel
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.passage_index import ACCESS_FIELDS
from searchcrawl.system.translations import N_

WITHHELD_SHOWN = 10  # nearest passages the searcher may not read, listed
NOT_INDEXED = "its document is not in the index"
REFUSED = "not permitted"
GAINED = "readable now; its passages are not updated yet"
# why explain-answer explains nothing (the command's, and the administration's page, translated)
ANSWERS_OFF = N_(
    "SEARCHCRAWL_EMBEDDINGS must be set, and SEARCHCRAWL_ANSWERS_URL or SEARCHCRAWL_ANSWERS_EXTRACTIVE (on by default)"
)
Lead = Callable[[Answer], None]  # answers.py ``answer``'s lead: extractive.py ``with_extract``


@dataclass(frozen=True)
class AnswerExplanation:
    lines: list[str]
    failed: str = ""  # why the model did not answer ("" when it did, or was not asked)


def explain_answer(
    solr: SolrIndex,
    model: SemanticModel,
    principals: Principals,
    question: str,
    config: AnswerConfig,
    lead: Lead | None = None,
) -> AnswerExplanation:
    """The explanation (see the module's docstring). Raises IndexingError when Solr fails; a model
    that fails is in ``AnswerExplanation.failed`` and its last line. ``lead``: the extractive
    answer's (extractive.py ``with_extract``) where it is on, as the page asks: its extract is
    shown, and leads the prompt explained. A ``config`` without a URL (``explained_with``: no model
    server) explains the extract alone: no prompt, no model."""
    who = principals.user or "public"
    lines = [f"Question: {question}"]
    lines.append(
        f"Searcher: {who}: {', '.join(sorted(principals.tokens))}{' (' + principals.error + ')' if principals.error else ''}"
    )
    failed = ""
    try:
        result = answer(TrimmedIndex(solr, principals), model, question, config, lead=lead)
    except AnswerFailed as exc:
        result, failed = exc.gathered or Answer(question, model=config.model), str(exc)
    access = documents_access(solr, [item.document for item in result.considered])
    lines.extend(considered_lines(result, access, principals, config))
    lines.append("")
    lines.append(f"Nearest passages {who} may not read (never sent, never shown to them):")
    refused = withheld(solr, model, question, principals, {item.document for item in result.considered})
    lines.extend(f"  {score:.3f}  {verdict}: {parent}: {reason}" for parent, score, verdict, reason in refused)
    if not refused:
        lines.append("  none")
    lines.extend(model_lines(result, config, failed, who))
    return AnswerExplanation(lines, failed)


def considered_lines(result: Answer, access: dict[str, Access | None], principals: Principals, config: AnswerConfig) -> list[str]:
    """The passages the answer considered, each with its verdict and the grant that admitted its
    document (``access``: the documents' own, ``documents_access``)."""
    who = principals.user or "public"
    lines = [
        "",
        f"Passages found among what {who} may read (threshold {config.threshold},"
        f" {config.passages} at most, {config.budget_chars} characters):",
    ]
    for item in result.considered:
        held = access.get(item.document)
        grant = decide(held, principals).reason if held is not None else "no access fields"
        lines.append(f"  {item.score:.3f}  {item.verdict}: {item.title} <{item.url}>")
        lines.append(f"         {grant}")
    if not result.considered:
        lines.append("  none")
    return lines


def model_lines(result: Answer, config: AnswerConfig, failed: str, who: str) -> list[str]:
    """The extract, the model asked (or none), its text and what was dropped of it and why, and
    the sentences kept with their citations, or why there is no answer."""
    lines: list[str] = []
    if result.extract is not None:
        lines.append("")
        lines.append(f"Extract, from [{result.extract.source.number}] (answering sentences marked):")
        lines.extend(f"  {'>> ' if marked else '   '}{text}" for text, marked in result.extract.sentences)
    lines.append("")
    if config.url:
        lines.append(
            f"Model: {config.model or '(the server default)'} at {config.url};"
            f" prompt {result.prompt_chars} characters; {result.seconds:.2f} s"
        )
    else:
        lines.append(f"Model: none (no SEARCHCRAWL_ANSWERS_URL): the extract is the answer; {result.seconds:.2f} s")
    if result.raw:
        lines.append("The model's text:")
        lines.append("  " + " ".join(result.raw.split()))
        lines.extend(dropped_lines(result, config))
    if result.sentences:
        lines.append("Kept, with their citations:")
        lines.extend(f"  {text} {' '.join(f'[{n}]' for n in cites)}" for text, cites in result.sentences)
    elif failed:
        lines.append(f"No answer: the model did not answer ({failed}); {who} gets the hits alone.")
    elif result.refused:
        lines.append(result.refused)  # NO_ANSWER, or "No answer: " and the check's reason
    return lines


def dropped_lines(result: Answer, config: AnswerConfig) -> list[str]:
    """The sentences of the model's text that the answer dropped, and why (none: no line)."""
    given = [SourceWords(source.given) for source in result.sources]
    dropped = [
        (plain, why)
        for plain, numbers in sentences_of(result.raw)
        if all(1 <= number <= len(given) for number in numbers)
        and (why := dropped_because(plain, numbers, given, result.question, config.support))
    ]
    if not dropped:
        return []
    return ["Dropped, and why:", *(f"  {plain or '(empty)'}: {why}" for plain, why in dropped)]


def explained_with(answers: AnswerConfig | None, extractive: AnswerConfig | None) -> tuple[AnswerConfig, Lead | None] | None:
    """What explain-answer explains, as the search page answers (web/context.py ``answer``): the
    model's answer (``answers``: SEARCHCRAWL_ANSWERS_URL set), led by the extract where extractive
    answers are on; else the extract alone (``extractive``: the retrieval configuration, no model);
    None when both are off. Every answer a searcher can be shown can be explained."""
    if answers is not None:
        return answers, with_extract if extractive is not None else None
    if extractive is not None:
        return extractive, with_extract
    return None


def documents_access(solr: SolrIndex, ids: Iterable[str]) -> dict[str, Access | None]:
    """The access each of the documents ``ids`` holds now (None: indexed without access fields),
    untrimmed, for the administrator only; a document not in the index is left out."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    found = solr.search(
        "*:*",
        fq='{!terms f=id separator=" "}' + " ".join(wanted),
        fl="id," + ",".join(ACCESS_FIELDS),
        rows=len(wanted),
    )
    return {str(doc["id"]): access_of_fields(doc) for doc in found.docs}


def withheld(
    solr: SolrIndex, model: SemanticModel, question: str, principals: Principals, found: set[str]
) -> list[tuple[str, float, str, str]]:
    """(document id, score, verdict, why) of the passages nearest ``question`` that the answer did
    not consider (``found``) and whose documents ``principals`` may not read now, by the documents'
    own access, as the answer decides, or may read now while the passage's copy still refuses
    (``nearest_verdict``): untrimmed, for the administrator only."""
    vector = ",".join(f"{float(value):.6g}" for value in model.embedder.embed_queries([question])[0])
    near = solr.search(
        "{!knn f=" + model.field + f" topK={WITHHELD_SHOWN * 3}}}[{vector}]",
        fq=[PASSAGES, "{!term f=passage_model}" + model.model_id],
        fl="parent_id,score," + ",".join(ACCESS_FIELDS),
        rows=WITHHELD_SHOWN * 3,
        defType="lucene",
        hl="false",
    )
    nearest: dict[str, tuple[float, Access | None]] = {}
    for doc in near.docs:
        nearest.setdefault(str(doc["parent_id"]), (float(doc.get("score") or 0.0), access_of_fields(doc)))
    access = documents_access(solr, [parent for parent in nearest if parent not in found])
    refused: list[tuple[str, float, str, str]] = []
    for parent, (score, copy) in nearest.items():
        if parent in found:
            continue
        if parent not in access:
            refused.append((parent, score, REFUSED, NOT_INDEXED))
            continue
        verdict = nearest_verdict(access[parent], copy, principals)
        if verdict is not None:
            refused.append((parent, score, *verdict))
    return refused[:WITHHELD_SHOWN]


def nearest_verdict(held: Access | None, copy: Access | None, principals: Principals) -> tuple[str, str] | None:
    """What explain-answer says of a nearest passage the answer did not consider, whose document
    holds ``held`` and the passage ``copy`` (its copy of it): (REFUSED, why) when the document
    refuses ``principals``; (GAINED, the grant) when the document grants and the copy, stale until
    the passages' next pass, still refuses, so that the answer's kNN query, filtered by the copies,
    could not find it; None when both grant (the answer passed it over for its rank)."""
    decision = decide(held, principals) if held is not None else None
    if decision is None or not decision.granted:
        return REFUSED, decision.reason if decision is not None else "no access fields"
    if copy is None or not decide(copy, principals).granted:
        return GAINED, decision.reason
    return None
