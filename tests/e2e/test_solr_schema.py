"""The configset against the real Solr: the SPEC's stoplist phrase cases, and the fields."""

import uuid

import pysolr
import pytest

CASES = [
    ('"oracle on demand"', "oracle on demand", True),
    ('"oracle on demand"', "oracle demand", False),
    ('"oracle on on demand"', "oracle technology on demand", True),
]


@pytest.mark.parametrize(("query", "content", "matches"), CASES)
def test_stopwords_keep_positions_in_phrases(solr: pysolr.Solr, query: str, content: str, matches: bool) -> None:
    source = f"phrase-{uuid.uuid4().hex[:8]}"
    solr.add([{"id": f"http://phrase.test/{source}", "url": "x", "source": source, "title": "t", "content": content}])
    hits = solr.search(query, fq=f'source:"{source}"', rows=10).hits
    assert hits == (1 if matches else 0)


def test_search_attributes_are_facetable(solr: pysolr.Solr) -> None:
    source = f"facets-{uuid.uuid4().hex[:8]}"
    solr.add(
        [
            {
                "id": f"http://f.test/{source}/{i}",
                "url": "x",
                "source": source,
                "host": "f.test",
                "author": "Ann",
                "language": "en",
                "mimetype": "text/html",
                "title": "facet",
                "content": "facet",
                "version_s": "2.1",
            }
            for i in range(3)
        ]
    )
    results = solr.search(
        "*:*",
        fq=f'source:"{source}"',
        rows=0,
        facet="true",
        **{"facet.field": ["host", "author", "language", "mimetype", "source", "version_s"]},
    )
    fields = results.facets["facet_fields"]
    for name, value in [
        ("host", "f.test"),
        ("author", "Ann"),
        ("language", "en"),
        ("mimetype", "text/html"),
        ("source", source),
        ("version_s", "2.1"),
    ]:
        assert fields[name][:2] == [value, 3]


def test_titles_sort_as_a_reader_orders_them_and_a_huge_title_is_indexed(solr: pysolr.Solr) -> None:
    """title_sort (issue 59): case and accents ignored, documents without a title last, and a
    title of 100,000 characters indexed (its key is taken from the first 200)."""
    source = f"sort-{uuid.uuid4().hex[:8]}"
    titles = {"b": "banana", "a": "Apple", "c": "Äpfel", "d": "Zebra " + "z" * 100_000, "e": "cherry"}
    docs = [
        {"id": f"{source}!{key}", "url": key, "source": source, "title": title, "content": "fruit"}
        for key, title in titles.items()
    ]
    docs.append({"id": f"{source}!f", "url": "f", "source": source, "content": "fruit"})  # no title: no key
    solr.add(docs)
    ordered = solr.search("*:*", fq=f'source:"{source}"', sort="title_sort asc", fl="url", rows=10)
    assert [doc["url"] for doc in ordered] == ["c", "a", "b", "e", "d", "f"]
    reverse = solr.search("*:*", fq=f'source:"{source}"', sort="title_sort desc", fl="url", rows=10)
    assert [doc["url"] for doc in reverse] == ["d", "e", "b", "a", "c", "f"]  # missing last either way
    assert all("title_sort" not in doc for doc in solr.search("*:*", fq=f'source:"{source}"', fl="*"))  # never returned


def test_the_newest_first_sort_puts_documents_without_a_date_last(solr: pysolr.Solr) -> None:
    """The search page's sort by date (last_modified desc): a document without one comes last."""
    source = f"dates-{uuid.uuid4().hex[:8]}"
    dates = {"a": "2001-01-01T00:00:00Z", "b": None, "c": "2024-06-01T00:00:00Z", "d": "1969-07-20T20:17:00Z"}
    solr.add(
        [
            {"id": f"{source}!{key}", "url": key, "source": source, "title": key, **({"last_modified": when} if when else {})}
            for key, when in dates.items()
        ]
    )
    ordered = solr.search("*:*", fq=f'source:"{source}"', sort="last_modified desc", fl="url", rows=10)
    assert [doc["url"] for doc in ordered] == ["c", "a", "d", "b"]
