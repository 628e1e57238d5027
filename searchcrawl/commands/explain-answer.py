"""`scrapy explain-answer USER "<question>"`: why an answer says what it says (issue 77).

For an administrator, as `scrapy explain-access` is: USER's principals from the directory (``public``
for a visitor), then the answer USER would get on the search page (search/answers.py) with every
step that made it: each passage the kNN query found among what USER may read, the grant that
admitted its document (the explain-access decision), sent (and as which number) or left out and
why (below the similarity threshold, over the budget); the passages nearest the question that USER
may not read, each with the decision that refused it (the administrator's view: untrimmed, never
shown to a searcher); the prompt's size, the model, the time it took, the model's text as it came,
and the sentences kept. Exit 2 when answers or semantic search are off, 1 when Solr or the model
failed."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.access.decision import Principals, decide
from searchcrawl.access.explanation import access_of_fields
from searchcrawl.commands.search import principals_of
from searchcrawl.index.indexer import PASSAGES, IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.search.answers import ANSWERS_API_KEY, AnswerFailed, answer, answer_config
from searchcrawl.search.hybrid import SemanticModel, semantic_search
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.semantic.passage_index import ACCESS_FIELDS
from searchcrawl.system import paths, secrets

WITHHELD_SHOWN = 10  # nearest passages the user may not read, listed


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return 'USER "<question>"   (USER: a directory user name, or "public")'

    def short_desc(self) -> str:
        return "Explain an answer: the passages found, sent or left out and why, the grants, the prompt, the model"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) < 2:
            raise UsageError("a user (or public) and a question are needed")
        assert self.settings is not None
        user, question = args[0], " ".join(args[1:])
        config = answer_config(self.settings.get, secrets.secret(ANSWERS_API_KEY))
        solr = SolrIndex(paths.solr_url(self.settings), timeout=60, auth=paths.solr_auth(self.settings))
        semantic = semantic_search(
            self.settings.get("SEARCHCRAWL_EMBEDDINGS") or "",
            self.settings.get("SEARCHCRAWL_EMBEDDINGS_PREVIOUS") or "",
            solr,
            self.settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
        )
        if config is None or semantic is None:
            print("searchcrawl: answers are off: SEARCHCRAWL_ANSWERS_URL and SEARCHCRAWL_EMBEDDINGS must both be set")
            self.exitcode = 2
            return
        principals = principals_of(self.settings, None if user == "public" else user)
        print(f"Question: {printable(question)}")
        print(
            f"Searcher: {user}: {', '.join(sorted(principals.tokens))}{' (' + principals.error + ')' if principals.error else ''}"
        )
        model = semantic.active()
        try:
            result = answer(TrimmedIndex(solr, principals), model, question, config)
        except IndexingError as exc:
            print(f"searchcrawl: Solr did not answer: {exc.reason}")
            self.exitcode = 1
            return
        except AnswerFailed as exc:
            print(f"searchcrawl: the model did not answer: {exc}")
            self.exitcode = 1
            return
        access = (
            {
                str(doc["id"]): doc
                for doc in solr.search(
                    "*:*",
                    fq='{!terms f=id separator=" "}' + " ".join(item.document for item in result.considered),
                    fl="id," + ",".join(ACCESS_FIELDS),
                    rows=max(len(result.considered), 1),
                ).docs
            }
            if result.considered
            else {}
        )
        print(
            f"\nPassages found among what {user} may read (threshold {config.threshold}, {config.passages} at most, {config.budget_chars} characters):"
        )
        for item in result.considered:
            held = access_of_fields(access.get(item.document, {}))
            grant = decide(held, principals).reason if held is not None else "no access fields"
            print(printable(f"  {item.score:.3f}  {item.verdict}: {item.title} <{item.url}>"))
            print(printable(f"         {grant}"))
        if not result.considered:
            print("  none")
        self.withheld(solr, model, question, principals, {item.document for item in result.considered})
        print(
            f"\nModel: {config.model or '(the server default)'} at {config.url}; prompt {result.prompt_chars} characters; {result.seconds:.2f} s"
        )
        if result.raw:
            print("The model's text:\n  " + printable(result.raw))
        if result.sentences:
            print("Kept, with their citations:")
            for text, cites in result.sentences:
                print(printable(f"  {text} {' '.join(f'[{n}]' for n in cites)}"))
        else:
            print(f"No answer: {result.refused}")

    def withheld(self, solr: SolrIndex, model: SemanticModel, question: str, principals: Principals, found: set[str]) -> None:
        """The passages nearest ``question`` that the searcher may not read: untrimmed, for the
        administrator only, each with the decision that refused it."""
        vector = ",".join(f"{float(value):.6g}" for value in model.embedder.embed([question])[0])
        near = solr.search(
            "{!knn f=" + model.field + f" topK={WITHHELD_SHOWN * 3}}}[{vector}]",
            fq=[PASSAGES, "{!term f=passage_model}" + model.model_id],
            fl="parent_id,score," + ",".join(ACCESS_FIELDS),
            rows=WITHHELD_SHOWN * 3,
            defType="lucene",
            hl="false",
        )
        refused = []
        for doc in near.docs:
            held = access_of_fields(doc)
            decision = decide(held, principals) if held is not None else None
            if doc["parent_id"] not in found and (decision is None or not decision.granted):
                refused.append((doc["parent_id"], doc.get("score", 0.0), decision.reason if decision else "no access fields"))
        print(f"\nNearest passages {principals.user or 'public'} may not read (never sent, never shown to them):")
        for parent, score, reason in list(dict.fromkeys(refused))[:WITHHELD_SHOWN]:
            print(printable(f"  {score:.3f}  not permitted: {parent}: {reason}"))
        if not refused:
            print("  none")
