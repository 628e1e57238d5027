"""`scrapy embed [<source> ...]`: bring the index's passages up to date now (issue 76).

A crawl embeds its own source's passages (crawl/extensions/passage_sync.py); this command does
every source's (or those named) in one pass, for what a crawl left (its final pass ran out of
time, the model did not answer) and for a new model's backfill: with SEARCHCRAWL_EMBEDDINGS set to
a new model, it writes the new model's passages beside the old one's (searches go on with the old
one, SEARCHCRAWL_EMBEDDINGS_PREVIOUS), and when no document is left without them, deletes the
old one's (``--retire``, the default: searches then switch). ``--status`` only counts. Exits 1
when the pass stopped (the model or Solr failed), 2 when semantic search is off."""

from __future__ import annotations

import argparse
import time

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.semantic.embedders import DimensionMismatch, ModelSpec, checked, embedder_from, not_installed
from searchcrawl.semantic.passage_index import PassageIndex
from searchcrawl.system import paths


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_LEVEL": "INFO"}

    def syntax(self) -> str:
        return "[<source> ...] [--status] [--no-retire] [--seconds N]"

    def short_desc(self) -> str:
        return "Embed the passages of the index's documents that have none for the model (SEARCHCRAWL_EMBEDDINGS)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--status", action="store_true", help="count the documents waiting, embed nothing")
        parser.add_argument("--no-retire", dest="retire", action="store_false", help="keep other models' passages")
        parser.add_argument("--seconds", type=float, default=0, help="stop after this long (0: no limit)")

    def embed(self, passages: PassageIndex, source: str | None, status_only: bool, deadline: float | None) -> None:
        """One source's documents without passages of the model (all sources': None), said, then
        embedded (unless ``status_only``) until ``deadline``."""
        model = passages.embedder.model_id
        waiting = passages.pending(source)
        print(f"{source or 'all sources'}: {waiting} documents without passages of {model}")
        if status_only or not waiting:
            return
        result = passages.sync(source, deadline=deadline)
        print(
            f"{source or 'all sources'}: {result.documents} documents done in {result.seconds:.1f} s:"
            f" {result.embedded} passages embedded ({result.embedded / max(result.seconds, 1e-9):.0f} a second),"
            f" {result.reused} kept their vectors, {result.updated} updated in place, {result.deleted} deleted"
        )
        if result.error:
            print(f"searchcrawl: the pass stopped: {result.error}")
            self.exitcode = 1

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        setting = self.settings.get("SEARCHCRAWL_EMBEDDINGS") or ""
        try:
            embedder = embedder_from(setting, self.settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"))
            if embedder is not None:
                checked(embedder)
        except DimensionMismatch as exc:
            raise UsageError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a model that does not load or answer: said, exit 1
            print(f"searchcrawl: the embedding model failed: {exc}")
            self.exitcode = 1
            return
        if embedder is None:
            missing = not_installed(ModelSpec.parse(setting))
            print(
                f"searchcrawl: semantic search's model {missing}"
                if missing
                else "searchcrawl: semantic search is off: SEARCHCRAWL_EMBEDDINGS is not set"
            )
            self.exitcode = 2
            return
        index = SolrIndex(paths.solr_url(self.settings), timeout=60, auth=paths.solr_auth(self.settings))
        passages = PassageIndex(index, embedder)
        deadline = time.monotonic() + opts.seconds if opts.seconds > 0 else None
        try:
            sources: list[str | None] = list(args) or [None]
            for source in sources:
                self.embed(passages, source, opts.status, deadline)
            if opts.retire and not opts.status and not args and not self.exitcode:
                retired = passages.retire_others()
                if retired:
                    print(f"{retired} passages of other models deleted: searches use {embedder.model_id}")
        except IndexingError as exc:
            print(f"searchcrawl: Solr did not answer: {exc.reason}")
            self.exitcode = 1
