"""How often a crawl's pushes set the anchor field of a page many pages link to. Plain logic.

A page's anchor field (content/anchors.py) is computed from every anchor to it of the pages in the
index, and each page parsed that links to it marks it due again (store/anchor_table.py). A push
during the crawl that set every due field read all the anchors of a page linked from every page
(an intranet's home page) each time: the anchors read at each push grew with the crawl, a cost a
page that grew with the site (tests/benchmarks/README.md: the pushes of a 2,000-page crawl that
pushed every 7 pages read 287,292 of its home page's anchors, 14,164 paced, the run's last push
included).

During a crawl, a page whose field was last computed from at least ``PACED_FROM`` anchors is set
again once its marks in the table reach ``GROWTH`` of those anchors: each time its linking pages
may have grown by a quarter, so the anchors read for it over a crawl add up to a few times its
final count, not its count times the pushes. Its marks stay in the table meanwhile (each push
reads them all again, as it reads every mark: a mark's id says nothing of when it came, since
SQLite gives a deleted highest id to the next row and PostgreSQL hands ids out before commit),
and when it is set, every mark of it that push read goes. The run's last push (and every push
outside a crawl: ``SolrPusher.push_once`` without ``during_crawl``) sets every field still due,
so the index holds each field as the anchors of the run's end make it. What a crawl remembers is
bounded: ``MAX_PACED`` pages at most (those past it are set at every push, as before); what a
push remembers, the marks it read of the pages it leaves for later, lives for that push.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

PACED_FROM = 32  # anchors a field was computed from, from which its next setting in a crawl waits
GROWTH = 0.25  # marks read since, as a share of those anchors, that make it due again
MAX_PACED = 10_000  # pages a crawl remembers the anchors of


@dataclass
class AnchorPacing:
    """The anchor fields a crawl's pushes have set (``counted``: the page's key -> the anchors
    its field was computed from) and, within one push (``begin``), the marks it read of each page
    it leaves for later (``read``)."""

    counted: dict[str, int] = field(default_factory=dict)
    read: dict[str, list[int]] = field(default_factory=dict)

    def begin(self) -> None:
        """A push starts reading the marks (from the first: they are all in the table)."""
        self.read.clear()

    def due_now(self, key: str, marks: Sequence[int]) -> tuple[int, ...] | None:
        """The page of ``key``, ``marks`` more of its marks read: the marks to delete once its
        field is set (those this push read of it), if it is set now; None if it waits (the marks
        are kept in mind for this push, and stay in the table)."""
        seen = [*self.read.pop(key, ()), *marks]
        anchors = self.counted.get(key)
        if anchors is None or len(seen) >= anchors * GROWTH:
            return tuple(seen)
        self.read[key] = seen
        return None

    def computed(self, key: str, anchors: int) -> None:
        """The page's field was set, computed from ``anchors`` anchors."""
        if anchors >= PACED_FROM and (key in self.counted or len(self.counted) < MAX_PACED):
            self.counted[key] = anchors
        else:
            self.counted.pop(key, None)
