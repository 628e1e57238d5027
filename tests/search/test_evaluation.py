"""The judged-query figures (search/evaluation.py), computed by hand."""

from __future__ import annotations

import math

import pytest

from searchcrawl.search.evaluation import (
    JudgedQuery,
    JudgmentError,
    compare,
    grade_of,
    page_key,
    randomization_p,
    read_qrels,
    read_queries,
    read_run,
    score,
    score_run,
    silence,
    write_run,
)

Q = JudgedQuery("q1", "question", "how do I plot")


def test_query_files_with_and_without_kinds() -> None:
    queries = read_queries("# a comment\nq1\tkeyword\tnumpy arrays\n\nq2\tplain text\n")
    assert queries == [JudgedQuery("q1", "keyword", "numpy arrays"), JudgedQuery("q2", "", "plain text")]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("q1 no tabs\n", "expected qid<TAB>kind<TAB>text"),
        ("q1\tk\ta\nq1\tk\tb\n", "given twice"),
        ("\tk\ttext\n", "needs an id"),
        ("q1\tall\ttext\n", "the row of every query"),  # would be counted twice in the 'all' row
        ("q 1\tk\ttext\n", "no space"),
    ],
)
def test_a_bad_query_file_names_its_line(text: str, says: str) -> None:
    with pytest.raises(JudgmentError, match=says):
        read_queries(text, "q.tsv")


def test_judgments_keep_the_higher_grade_and_match_paths_on_any_host() -> None:
    judged = read_qrels("q1 0 /a/b.html 1\nq1 0 /a/b.html 2\nq1 0 /docs/ 2\nq1 0 http://Site.example:8080/c 1\n")
    assert judged == {"q1": {"/a/b.html": 2, "/docs/index.html": 2, "site.example:8080/c": 1}}
    assert page_key("http://127.0.0.1:5000/docs/?x=1") == "127.0.0.1:5000/docs/index.html?x=1"
    # a path matches on any host; a URL on its own host only
    assert grade_of("https://moved.example/docs/", judged["q1"]) == 2
    assert grade_of("http://site.example:8080/c", judged["q1"]) == 1
    assert grade_of("http://other.example/c", judged["q1"]) is None
    for bad, says in (("q1 0 /a 3\n", "not one of"), ("q1 0 /a x\n", "not a number"), ("q1 /a 2\n", "expected")):
        with pytest.raises(JudgmentError, match=says):
            read_qrels(bad, "qrels")


def test_the_figures_of_one_query() -> None:
    judged = {"/answer.html": 2, "/other-answer.html": 2, "/mention.html": 1}
    hits = ["http://h/mention.html", "http://h/unjudged.html", "http://h/answer.html", "http://h/answer.html"]
    found = score(Q, hits, judged)
    dcg = 1 / math.log2(2) + 3 / math.log2(4)  # a repeated page gains nothing the second time
    ideal = 3 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert found.first_answer == 3
    assert found.figures == pytest.approx(
        {"ndcg@10": dcg / ideal, "mrr@10": 1 / 3, "recall@10": 0.5, "success@1": 0.0, "success@3": 1.0}
    )


def test_an_answer_below_the_tenth_hit_has_a_rank_but_no_reciprocal() -> None:
    hits = [f"/filler{n}.html" for n in range(10)] + ["/answer.html"]
    found = score(Q, hits, {"/answer.html": 2})
    assert found.first_answer == 11 and found.figures["mrr@10"] == 0.0 and found.figures["ndcg@10"] == 0.0


def test_a_query_without_judgments_is_left_out_and_one_without_hits_scores_zero() -> None:
    queries = [Q, JudgedQuery("q2", "keyword", "unjudged")]
    scores = score_run(queries, {"q1": {"/a.html": 2}}, {})
    assert [item.query.qid for item in scores] == ["q1"] and scores[0].figures["ndcg@10"] == 0.0


def test_silence_is_the_share_of_nonsense_queries_that_found_nothing() -> None:
    queries = [Q, JudgedQuery("x1", "nonsense", "lasagne recipe"), JudgedQuery("x2", "nonsense", "tyre pressure")]
    assert silence(queries, {"q1": ["/a.html"], "x1": ["/b.html"], "x2": []}) == 0.5
    assert silence(queries, {"q1": ["/a.html"]}) == 1.0  # a query the run lacks found nothing
    assert silence([Q], {"q1": []}) is None  # no nonsense query: no figure, not a perfect one
    # left out of the figures like any query without judgments
    assert [item.query.qid for item in score_run(queries, {"q1": {"/a.html": 2}}, {"x1": ["/b.html"]})] == ["q1"]


def test_a_run_written_reads_back_in_rank_order() -> None:
    ranked = {"q1": ["http://h/a.html", "http://h/b.html"], "q2": []}
    text = write_run(ranked, "page")
    assert text.splitlines()[0] == "q1 Q0 http://h/a.html 1 2 page"
    assert read_run(text) == {"q1": ranked["q1"]}


def test_the_randomization_test() -> None:
    assert randomization_p([0.0] * 30) == 1.0
    assert randomization_p([0.5] * 30) < 0.001  # every query better: no sign flip comes near
    assert randomization_p([0.5, -0.5] * 15) == 1.0
    assert randomization_p([0.1, -0.1, 0.2]) == randomization_p([0.1, -0.1, 0.2])  # seeded


def test_two_runs_compared_query_by_query() -> None:
    judged = {"q1": {"/a.html": 2}, "q2": {"/b.html": 2}}
    queries = [Q, JudgedQuery("q2", "keyword", "b")]
    before = score_run(queries, judged, {"q1": ["/x.html", "/a.html"], "q2": ["/b.html"]})
    after = score_run(queries, judged, {"q1": ["/a.html"], "q2": ["/b.html"]})
    mrr = next(row for row in compare(before, after) if row.metric == "mrr@10")
    assert (mrr.before, mrr.after, mrr.better, mrr.worse) == (0.75, 1.0, 1, 0)
    assert mrr.change == 0.25 and 0 < mrr.p <= 1


def test_a_judged_url_and_a_hit_match_however_each_is_encoded() -> None:
    """Review: a qrels docno is written percent-encoded, a hit's URL may not be."""
    judged = read_qrels("q1 0 http://h/meeting%20notes.html 2\nq1 0 /caf%C3%A9.html 1\n")
    assert grade_of("http://h/meeting notes.html", judged["q1"]) == 2
    assert grade_of("http://other/café.html", judged["q1"]) == 1


def test_one_path_judged_on_two_hosts_counts_once() -> None:
    """Review: a path judgment matched by the same path on two hosts gained twice (recall 2.0)."""
    found = score(Q, ["http://x.test/a.html", "http://y.test/a.html"], {"/a.html": 2})
    assert found.figures["recall@10"] == 1.0 and found.figures["ndcg@10"] == 1.0


def test_a_byte_order_mark_is_no_part_of_the_first_id(tmp_path) -> None:
    """Review: a file saved with a BOM made its first query 'unjudged' (qid '\\ufeffq1')."""
    from searchcrawl.commands.relevance import read_text

    path = tmp_path / "queries.tsv"
    path.write_bytes("q1\tkeyword\tnumpy\n".encode("utf-8-sig"))
    assert read_queries(read_text(str(path), "query file"))[0].qid == "q1"
