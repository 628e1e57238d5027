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
