"""How often a crawl's pushes set the anchor field of a page many pages link to. Plain logic.

A page's anchor field (content/anchors.py) is computed from every anchor to it of the pages in the
index, and each page parsed that links to it marks it due again (store/anchor_table.py). A push
during the crawl that set every due field read all the anchors of a page linked from every page
(an intranet's home page) each time: the anchors read at each push grew with the crawl, a cost a
page that grew with the site (tests/benchmarks/README.md: the pushes of a 2,000-page crawl that
pushed every 7 pages read 310,214 of its home page's anchors; 6,158 paced).

During a crawl, a page whose field was last computed from at least ``PACED_FROM`` anchors is set
again once the marks read for it since reach ``GROWTH`` of those anchors: each time its linking
pages may have grown by a quarter, so the anchors read for it over a crawl add up to a few times
its final count, not its count times the pushes. Its marks stay in the table meanwhile, and the
run's last push (and every push outside a crawl: ``SolrPusher.push_once`` without
``during_crawl``) sets every field still due, so the index holds each field as the anchors of the
run's end make it. What a crawl remembers is bounded: ``MAX_PACED`` pages at most (those past it
are set at every push, as before).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PACED_FROM = 32  # anchors a field was computed from, from which its next setting in a crawl waits
GROWTH = 0.25  # marks read since, as a share of those anchors, that make it due again
MAX_PACED = 10_000  # pages a crawl remembers the anchors of


@dataclass
class AnchorPacing:
    """The anchor fields a crawl's pushes have set (``counted``: the page's key -> the anchors
    its field was computed from), the marks read since for each (``waiting``), and the last mark
    a push during the crawl read (``after``: each is read once during the crawl; one committed out
    of id order on PostgreSQL waits for the run's last push)."""

    counted: dict[str, int] = field(default_factory=dict)
    waiting: dict[str, int] = field(default_factory=dict)
    after: int = 0

    def due_now(self, key: str, marks: int) -> bool:
        """Whether the page of ``key``, ``marks`` more marks of it read, is set now; if not, the
        marks are counted (and stay in the table, for later)."""
        anchors = self.counted.get(key)
        seen = self.waiting.pop(key, 0) + marks
        if anchors is None or seen >= anchors * GROWTH:
            return True
        self.waiting[key] = seen
        return False

    def computed(self, key: str, anchors: int) -> None:
        """The page's field was computed from ``anchors`` anchors."""
        if anchors >= PACED_FROM and (key in self.counted or len(self.counted) < MAX_PACED):
            self.counted[key] = anchors
        else:
            self.counted.pop(key, None)
