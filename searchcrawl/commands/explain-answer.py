"""`scrapy explain-answer USER "<question>"`: why an answer says what it says (issue 77).

For an administrator, as `scrapy explain-access` is: USER's principals from the directory (``public``
for a visitor), then the answer USER would get on the search page (search/answers.py) with every
step that made it: each passage the kNN query found among what USER may read, the grant that
admitted its document (the explain-access decision), sent (and as which number) or left out and
why (below the similarity threshold, over the budget); the passages nearest the question that USER
may not read, each with the decision that refused it (the administrator's view: untrimmed, never
shown to a searcher); the prompt's size, the model, the time it took, the model's text as it came,
and the sentences kept; without a model server (SEARCHCRAWL_ANSWERS_URL empty), the extractive
answer alone. Exit 2 when semantic search is off, or both the model's and the extractive answers
are; 1 when Solr or the model failed (a model's failure after all the rest is printed)."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands.search import principals_of
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.search.answer_explanation import ANSWERS_OFF, explain_answer, explained_with
from searchcrawl.search.answers import ANSWERS_API_KEY, answer_config, retrieval_config
from searchcrawl.search.hybrid import semantic_search
from searchcrawl.system import paths, secrets


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
        extractive = retrieval_config(self.settings.get) if self.settings.getbool("SEARCHCRAWL_ANSWERS_EXTRACTIVE") else None
        chosen = explained_with(answer_config(self.settings.get, secrets.secret(ANSWERS_API_KEY)), extractive)
        solr = SolrIndex(paths.solr_url(self.settings), timeout=60, auth=paths.solr_auth(self.settings))
        semantic = semantic_search(
            self.settings.get("SEARCHCRAWL_EMBEDDINGS") or "",
            self.settings.get("SEARCHCRAWL_EMBEDDINGS_PREVIOUS") or "",
            solr,
            self.settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
        )
        if chosen is None or semantic is None:
            print(f"searchcrawl: answers are off: {ANSWERS_OFF}")
            self.exitcode = 2
            return
        principals = principals_of(self.settings, None if user == "public" else user)
        try:
            explained = explain_answer(solr, semantic.active(), principals, question, *chosen)
        except IndexingError as exc:
            print(f"searchcrawl: Solr did not answer: {exc.reason}")
            self.exitcode = 1
            return
        for line in explained.lines:
            print(printable(line))  # titles, passages and the model's text come from elsewhere
        if explained.failed:  # the passages and the prompt's size shown, the failure said last
            self.exitcode = 1
