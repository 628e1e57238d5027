"""Why an answer says what it says (issue 77): `scrapy explain-answer` and the administration's page.

An administrator's view, as explain-access is (access/explanation.py): the answer a searcher would
get (answers.py ``answer``, trimmed to them), then, untrimmed, the access of every document it
considered with the decision that admitted it, and the passages nearest the question that the
searcher may not read, each with the decision that refused it (never sent to a model, never shown
to the searcher). Returned as lines of text: the command prints them, the page shows them.
"""

from __future__ import annotations

from searchcrawl.access.decision import Principals, decide
from searchcrawl.access.explanation import access_of_fields
from searchcrawl.index.indexer import PASSAGES, SolrIndex
from searchcrawl.search.answers import AnswerConfig, SourceWords, answer, dropped_because, sentences_of
from searchcrawl.search.hybrid import SemanticModel
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.semantic.passage_index import ACCESS_FIELDS

WITHHELD_SHOWN = 10  # nearest passages the searcher may not read, listed


def explain_answer(
    solr: SolrIndex, model: SemanticModel, principals: Principals, question: str, config: AnswerConfig
) -> list[str]:
    """The explanation's lines (see the module's docstring). Raises IndexingError when Solr
    fails, AnswerFailed when the model does."""
    who = principals.user or "public"
    lines = [f"Question: {question}"]
    lines.append(
        f"Searcher: {who}: {', '.join(sorted(principals.tokens))}{' (' + principals.error + ')' if principals.error else ''}"
    )
    result = answer(TrimmedIndex(solr, principals), model, question, config)
    access: dict[str, dict[str, object]] = {}
    if result.considered:
        found = solr.search(
            "*:*",
            fq='{!terms f=id separator=" "}' + " ".join(item.document for item in result.considered),
            fl="id," + ",".join(ACCESS_FIELDS),
            rows=len(result.considered),
        )
        access = {str(doc["id"]): doc for doc in found.docs}
    lines.append("")
    lines.append(
        f"Passages found among what {who} may read (threshold {config.threshold},"
        f" {config.passages} at most, {config.budget_chars} characters):"
    )
    for item in result.considered:
        held = access_of_fields(access.get(item.document, {}))
        grant = decide(held, principals).reason if held is not None else "no access fields"
        lines.append(f"  {item.score:.3f}  {item.verdict}: {item.title} <{item.url}>")
        lines.append(f"         {grant}")
    if not result.considered:
        lines.append("  none")
    lines.append("")
    lines.append(f"Nearest passages {who} may not read (never sent, never shown to them):")
    refused = withheld(solr, model, question, principals, {item.document for item in result.considered})
    lines.extend(f"  {score:.3f}  not permitted: {parent}: {reason}" for parent, score, reason in refused)
    if not refused:
        lines.append("  none")
    lines.append("")
    lines.append(
        f"Model: {config.model or '(the server default)'} at {config.url};"
        f" prompt {result.prompt_chars} characters; {result.seconds:.2f} s"
    )
    if result.raw:
        lines.append("The model's text:")
        lines.append("  " + " ".join(result.raw.split()))
        given = [SourceWords(source.given) for source in result.sources]
        dropped = [
            (plain, why)
            for plain, numbers in sentences_of(result.raw)
            if all(1 <= number <= len(given) for number in numbers)
            and (why := dropped_because(plain, numbers, given, result.question, config.support))
        ]
        if dropped:
            lines.append("Dropped, and why:")
            lines.extend(f"  {plain or '(empty)'}: {why}" for plain, why in dropped)
    if result.sentences:
        lines.append("Kept, with their citations:")
        lines.extend(f"  {text} {' '.join(f'[{n}]' for n in cites)}" for text, cites in result.sentences)
    else:
        lines.append(f"No answer: {result.refused}")
    return lines


def withheld(
    solr: SolrIndex, model: SemanticModel, question: str, principals: Principals, found: set[str]
) -> list[tuple[str, float, str]]:
    """(document id, score, why refused) of the passages nearest ``question`` that ``principals``
    may not read: untrimmed, for the administrator only."""
    vector = ",".join(f"{float(value):.6g}" for value in model.embedder.embed([question])[0])
    near = solr.search(
        "{!knn f=" + model.field + f" topK={WITHHELD_SHOWN * 3}}}[{vector}]",
        fq=[PASSAGES, "{!term f=passage_model}" + model.model_id],
        fl="parent_id,score," + ",".join(ACCESS_FIELDS),
        rows=WITHHELD_SHOWN * 3,
        defType="lucene",
        hl="false",
    )
    refused: dict[str, tuple[str, float, str]] = {}
    for doc in near.docs:
        held = access_of_fields(doc)
        decision = decide(held, principals) if held is not None else None
        parent = str(doc["parent_id"])
        if parent not in found and parent not in refused and (decision is None or not decision.granted):
            refused[parent] = (parent, float(doc.get("score") or 0.0), decision.reason if decision else "no access fields")
    return list(refused.values())[:WITHHELD_SHOWN]
