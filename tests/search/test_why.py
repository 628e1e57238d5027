"""The why page's logic (web/why.py): Solr's explanation in words, and the answers the page
gives without revealing a document the viewer may not read (a fake Solr client)."""

from __future__ import annotations

import gettext
import json
import re
from typing import Any

import pytest
from babel import Locale

from searchcrawl.access.decision import Principals
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.search.why import MAX_QUERY_CHARS, NOT_SHOWN, explain_lines, number, why
from searchcrawl.system import translations

# Solr 9's [explain style=nl] of "tugboat" for a harbour log (tests/e2e/test_web.py captures one)
SAMPLE: dict[str, Any] = json.loads(
    r"""
{
 "match": true,
 "value": 4.4193974,
 "description": "max of:",
 "details": [
  {
   "match": true,
   "value": 1.9235992,
   "description": "weight(content:tugboat in 10) [SchemaSimilarity], result of:",
   "details": [
    {
     "match": true,
     "value": 1.9235992,
     "description": "score(freq=4.0), computed as boost * idf * tf from:",
     "details": [
      {
       "match": true,
       "value": 2.4849067,
       "description": "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:",
       "details": [
        {
         "match": true,
         "value": 2,
         "description": "n, number of documents containing term"
        },
        {
         "match": true,
         "value": 29,
         "description": "N, total number of documents with field"
        }
       ]
      },
      {
       "match": true,
       "value": 0.77411324,
       "description": "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:",
       "details": [
        {
         "match": true,
         "value": 4.0,
         "description": "freq, occurrences of term within document"
        },
        {
         "match": true,
         "value": 1.2,
         "description": "k1, term saturation parameter"
        },
        {
         "match": true,
         "value": 0.75,
         "description": "b, length normalization parameter"
        },
        {
         "match": true,
         "value": 31.0,
         "description": "dl, length of field"
        },
        {
         "match": true,
         "value": 32.172413,
         "description": "avgdl, average length of field"
        }
       ]
      }
     ]
    }
   ]
  },
  {
   "match": true,
   "value": 4.4193974,
   "description": "weight(title:tugboat in 10) [SchemaSimilarity], result of:",
   "details": [
    {
     "match": true,
     "value": 4.4193974,
     "description": "score(freq=1.0), computed as boost * idf * tf from:",
     "details": [
      {
       "match": true,
       "value": 4.0,
       "description": "boost"
      },
      {
       "match": true,
       "value": 2.4849067,
       "description": "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:",
       "details": [
        {
         "match": true,
         "value": 2,
         "description": "n, number of documents containing term"
        },
        {
         "match": true,
         "value": 29,
         "description": "N, total number of documents with field"
        }
       ]
      },
      {
       "match": true,
       "value": 0.44462407,
       "description": "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:",
       "details": [
        {
         "match": true,
         "value": 1.0,
         "description": "freq, occurrences of term within document"
        },
        {
         "match": true,
         "value": 1.2,
         "description": "k1, term saturation parameter"
        },
        {
         "match": true,
         "value": 0.75,
         "description": "b, length normalization parameter"
        },
        {
         "match": true,
         "value": 4.0,
         "description": "dl, length of field"
        },
        {
         "match": true,
         "value": 3.7931035,
         "description": "avgdl, average length of field"
        }
       ]
      }
     ]
    }
   ]
  }
 ]
}
"""
)


def test_the_sample_in_words() -> None:
    lines, truncated = explain_lines(SAMPLE)
    assert not truncated
    assert [line.depth for line in lines] == [0, 1, 1]
    assert lines[0].text == "4.42: the best-matching field alone counts, of"
    assert lines[1].text == (
        "‘tugboat’ in content: 1.92 (the word is rare in content (2 of 29 documents); it occurs 4 times here; "
        "the content is of average length (31 words, average 32))"
    )
    assert lines[2].text == (
        "‘tugboat’ in title: 4.42 (the word is rare in title (2 of 29 documents); it occurs 1 time here; "
        "the title is of average length (4 words, average 4); title is boosted ×4)"
    )


def node(description: str, value: float = 1.0, *details: dict[str, Any], match: bool = True) -> dict[str, Any]:
    return {"match": match, "value": value, "description": description, "details": list(details)}


def test_sums_ties_phrases_unknown_nodes_and_no_match() -> None:
    phrase = json.loads(json.dumps(SAMPLE["details"][1]))
    phrase["description"] = 'weight(title:"harbour master" in 3) [SchemaSimilarity], result of:'
    phrase["details"][0]["details"][2]["details"][0]["description"] = "phraseFreq=1.0"
    tree = node(
        "sum of:",
        6.0,
        node("max plus 0.1 times others of:", 4.5, SAMPLE["details"][0], SAMPLE["details"][1]),
        phrase,
        node("FunctionQuery(<script>log(popularity)</script>), product of:", 1.5),
        node("no matching term", 0.0, match=False),
    )
    texts = [(line.depth, line.text) for line in explain_lines(tree)[0]]
    assert texts[0] == (0, "6: the sum of")
    assert texts[1] == (1, "4.5: the best-matching field, plus 0.1 × each other field, of")
    assert texts[2][0] == texts[3][0] == 2 and texts[2][1].startswith("‘tugboat’ in content: 1.92")
    assert texts[4][1].startswith("‘harbour master’ in title: 4.42 (the phrase is rare in title")
    assert texts[5] == (1, "1.5: FunctionQuery(<script>log(popularity)</script>), product of:")  # verbatim (escaped by the page)
    assert texts[6] == (1, "no match: no matching term")


def test_the_explanation_is_bounded_in_depth_and_lines() -> None:
    deep: dict[str, Any] = node("leaf", 1.0)
    for _ in range(50):
        deep = node("sum of:", 1.0, deep)
    lines, truncated = explain_lines(deep)
    assert truncated and max(line.depth for line in lines) < 10
    wide = node("sum of:", 1.0, *[node(f"part {number}") for number in range(1000)])
    lines, truncated = explain_lines(wide)
    assert truncated and len(lines) == 200
    assert explain_lines(None) == ([], False) and explain_lines({"details": "junk"})[0][0].text == "None: "


def test_counts_plurals_and_numbers() -> None:
    one = json.loads(json.dumps(SAMPLE["details"][1]))
    leaves = one["details"][0]["details"]
    leaves[1]["details"][1]["value"] = 1  # N: one document with the field
    leaves[1]["details"][0]["value"] = 1
    leaves[2]["details"][0]["value"] = 1.5  # a sloppy phrase's frequency
    leaves[2]["details"][3]["value"] = 1.0  # dl
    leaves[2]["details"][4]["value"] = 1.2  # avgdl
    (line,), _ = explain_lines(one)
    assert "(1 of 1 document)" in line.text and "it occurs 1.5 times here" in line.text
    assert "the title is of average length (1 word, average 1)" in line.text
    assert [number(v) for v in (4.4193974, 6.0, 0.1, 12345.6, 0.000123456, "junk", None)] == [
        "4.42",
        "6",
        "0.1",
        "12,300",
        "0.000123",
        "junk",
        "None",
    ]
    assert number(float("nan")) == "nan" and number(1e30) == "1e+30"


class Marking(gettext.NullTranslations):
    """A catalogue that brackets every message it translates (singular and plural)."""

    def gettext(self, message: str) -> str:
        return f"[{message}]"

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        return f"[{msgid1 if n == 1 else msgid2}]"


def test_the_lines_are_whole_messages_in_the_pages_language(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line's words come from the catalogue as whole sentences; its numbers are the language's."""
    marked = translations.Language("de", Locale.parse("de"), Marking())
    english = translations.language("en")
    monkeypatch.setattr(translations, "language", lambda tag: marked if tag == "de" else english)
    tree = node("sum of:", 6.5, node("max plus 0.1 times others of:", 4.5, *SAMPLE["details"]), node("boost", 2.0))
    with translations.speaking("de"):
        texts = [line.text for line in explain_lines(tree)[0]]
    assert texts[0] == "[6,5: the sum of]"
    assert texts[1] == "[4,5: the best-matching field, plus 0,1 × each other field, of]"
    assert texts[3] == (
        "[‘tugboat’ in title: 4,42 ([[[[the word is [rare] in title (2 of 29 documents)]; [it occurs 1 time here]]; "
        "[the title is [of average length] (4 words, average 4)]]; [title is boosted ×4]])]"
    )
    assert texts[4] == "[boost ×2]"
    assert all(re.fullmatch(r"\[.*\]", text) for text in texts)
    assert explain_lines(tree)[0][0].text == "6.5: the sum of"  # outside the block: English


class FakeSolr:
    """Answers the three questions why() asks: the explained document, whether it is readable at
    all (q=*:*), and the ranked hits; records every request."""

    def __init__(self, explained: list[dict[str, Any]], readable: int, ranked: list[dict[str, Any]]) -> None:
        self.explained, self.readable, self.ranked = explained, readable, ranked
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def search(self, query: str, **params: Any) -> Any:
        self.asked.append((query, params))

        class Results:
            docs: list[dict[str, Any]] = []
            hits = 0

        results = Results()
        if "[explain" in str(params.get("fl")):
            results.docs = self.explained
        elif query == "*:*":
            results.hits = self.readable
        else:
            results.docs = self.ranked
        return results


DOC = {"id": "main!https://h.example/a", "url": "https://h.example/a", "title": "A", "score": 4.42, "[explain]": SAMPLE}


def test_a_hit_its_rank_and_the_searchs_own_trimming_and_collapse() -> None:
    ranked = [
        {"id": "main!https://h.example/b", "url": "https://h.example/b"},
        {"id": "x!https://h.example/a", "url": "https://h.example/a"},
    ]
    solr = FakeSolr([DOC], 1, ranked)
    page = why(TrimmedIndex(solr, Principals.anonymous()), " tugboat ", "https://h.example/a")  # type: ignore[arg-type]
    assert page.found and page.rank == 2 and page.shown_by == "x!https://h.example/a" and page.score == 4.42
    assert page.lines[1].text.startswith("‘tugboat’ in content")
    (query, explained), (_query, rank) = solr.asked
    assert query == "tugboat"
    assert "{!term f=url}https://h.example/a" in explained["fq"]
    assert any("access" in str(fq) for fq in explained["fq"])  # the trimming
    assert any("collapse" in str(fq) for fq in rank["fq"]) and any("access" in str(fq) for fq in rank["fq"])
    by_id = why(TrimmedIndex(FakeSolr([DOC], 1, []), Principals.anonymous()), "tugboat", "main!https://h.example/a")  # type: ignore[arg-type]
    assert by_id.rank is None
    assert len(why(TrimmedIndex(FakeSolr([DOC], 1, []), Principals.anonymous()), "q" * 5000, "x").query) == MAX_QUERY_CHARS  # type: ignore[arg-type]


def test_hidden_and_missing_get_one_answer_a_readable_non_match_another() -> None:
    hidden = why(TrimmedIndex(FakeSolr([], 0, []), Principals.anonymous()), "tugboat", "main!https://h.example/secret")  # type: ignore[arg-type]
    assert not hidden.found and hidden.message == NOT_SHOWN
    other = why(TrimmedIndex(FakeSolr([], 1, []), Principals.anonymous()), "tugboat", "main!https://h.example/a")  # type: ignore[arg-type]
    assert not other.found and "does not match the query" in other.message
    empty = FakeSolr([DOC], 1, [])
    assert not why(TrimmedIndex(empty, Principals.anonymous()), "", "x").found and not empty.asked  # type: ignore[arg-type]


def test_solrs_time_running_out_is_said_not_taken_for_no_match() -> None:
    class Partial(FakeSolr):
        def search(self, query: str, **params: Any) -> Any:
            results = super().search(query, **params)
            results.raw_response = {"responseHeader": {"partialResults": True}}
            return results

    stopped = why(TrimmedIndex(Partial([], 1, []), Principals.anonymous()), "tugboat", "main!https://h.example/a")  # type: ignore[arg-type]
    assert not stopped.found and "time ran out" in stopped.message
    unranked = why(TrimmedIndex(Partial([DOC], 1, []), Principals.anonymous()), "tugboat", "main!https://h.example/a")  # type: ignore[arg-type]
    assert unranked.found and unranked.rank is None and unranked.partial
