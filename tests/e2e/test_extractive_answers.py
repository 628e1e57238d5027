"""Extractive answers against the real dev Solr (issue 93, point 3): the best passage the searcher
may read, its answering sentence marked and cited, with no model server; a page withheld from the
searcher, or a passage older than its page, is never quoted; the search page, the JSON API and the
agents' answer tool show it; with a model server its prompt is led by it. Without a model server
explain-answer explains it (the command and the administration's page); a question's search page
embeds its query once and shows the extract on its first page only."""

from __future__ import annotations

import html
import json
import signal
from collections.abc import Iterator

import pytest
import requests

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.answers import NO_ANSWER, OLDER_TEXT, Answer, AnswerConfig, answer
from searchcrawl.search.extractive import with_extract
from searchcrawl.search.hybrid import SemanticModel
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import WordLlamaEmbedder
from searchcrawl.semantic.passage_index import PassageIndex
from tests.conftest import free_port
from tests.e2e.test_agent_endpoint import call
from tests.e2e.test_answers import FINANCE, SECRET_WORDS, corpus, stand_in, wordllama  # noqa: F401 - the fixtures
from tests.e2e.test_api import api, make_token
from tests.e2e.test_semantic_search import document
from tests.e2e.test_web import client, login
from tests.web_site import serve_web

BONUS = "How big is the bonus pool for 2027?"
NO_MODEL = AnswerConfig(url="", model="")  # the product's threshold and budgets, no model server


@pytest.fixture
def kept_apart(corpus: tuple[str, SolrIndex]) -> Iterator[tuple[str, SolrIndex]]:  # noqa: F811
    """test_answers.py's corpus, deleted after the test (documents and passages): explain-answer
    searches every source of the shared dev Solr, and each corpus left there holds one more
    withheld bonus page that crowds the nearest ones it lists."""
    yield corpus
    source, index = corpus
    found = index.search("*:*", fq=["{!term f=source}" + source, "-doc_type:passage"], fl="id", rows=1000)
    index.delete([str(doc["id"]) for doc in found.docs])
    index.commit()


def extractive_answer(index: TrimmedIndex, model: SemanticModel, question: str, filters: list[str]) -> Answer:
    """The answer of an installation without a model server, as the web application asks it."""
    return answer(index, model, question, NO_MODEL, filters, lead=with_extract)


def test_the_answering_sentence_of_a_readable_page_only(kept_apart, wordllama) -> None:  # noqa: F811
    """The only page that answers is readable by finance alone: its reader gets its sentence
    marked and cited; a visitor gets no answer, or one from a page they may read, and never a
    word of it."""
    source, index = kept_apart
    model, filters = SemanticModel(wordllama), ["{!term f=source}" + source]
    fiona = extractive_answer(TrimmedIndex(index, FINANCE), model, BONUS, filters)
    assert fiona.extract is not None and not fiona.refused
    assert fiona.extract.source.title == "Bonus pool 2027" and fiona.extract.source.url == "http://h.test/bonus"
    assert fiona.extract.marked == ["The bonus pool for 2027 is 4.2 million euros under codename BLUEHERON."]
    visitor = extractive_answer(TrimmedIndex(index, Principals.anonymous()), model, BONUS, filters)
    assert visitor.extract is None or visitor.extract.source.url != "http://h.test/bonus"
    assert visitor.refused == ("" if visitor.extract else NO_ANSWER)
    shown = json.dumps([visitor.extract.as_json() if visitor.extract else None, [c.__dict__ for c in visitor.considered]])
    assert not any(secret in shown for secret in SECRET_WORDS)


def test_a_passage_older_than_its_page_is_not_quoted(kept_apart, wordllama) -> None:  # noqa: F811
    """Issue 91's rule (answers.py ``select_sources``, hybrid.py ``made_from_current``): the page
    dropped the sentence and its passages were not made again since: it is not quoted."""
    source, index = kept_apart
    model, visitor = SemanticModel(wordllama), TrimmedIndex(index, Principals.anonymous())
    filters, question, page = ["{!term f=source}" + source], "What is the guest wifi password?", "http://h.test/wifi"
    index.add([document(source, page, "Guest wifi", "The guest wifi password is PLOVER7731. Ask reception.", Access.public("t"))])
    index.commit()
    assert PassageIndex(index, wordllama).sync(source).documents == 1
    before = extractive_answer(visitor, model, question, filters)
    assert before.extract is not None and before.extract.marked == ["The guest wifi password is PLOVER7731."]
    index.add([document(source, page, "Guest wifi", "Ask reception for the guest wifi voucher.", Access.public("t"))])
    index.commit()  # no pass since: the page's passages are of its older text
    after = extractive_answer(visitor, model, question, filters)
    assert (page, OLDER_TEXT) in {(item.url, item.verdict) for item in after.considered}
    assert after.extract is None or "PLOVER7731" not in json.dumps(after.extract.as_json())


def test_the_models_prompt_is_led_by_the_extract(kept_apart, stand_in, wordllama) -> None:  # noqa: F811
    source, index = kept_apart
    url, prompts = stand_in
    config = AnswerConfig(url=url, model="standin", threshold=0.55, timeout=5.0)
    visitor, filters = TrimmedIndex(index, Principals.anonymous()), ["{!term f=source}" + source]
    result = answer(visitor, SemanticModel(wordllama), "When is parking free?", config, filters, lead=with_extract)
    assert result.asked_model and result.extract is not None
    assert "Most likely answering, in source [1]: Parking permits are free at the gate office." in prompts[-1]
    assert [text for text, _cites in result.sentences] == ["Parking permits are free at the gate office."]


def test_the_search_page_api_and_agents_show_the_extract_without_a_model(project, kept_apart) -> None:  # noqa: F811
    source, _index = kept_apart
    port = free_port()
    web = serve_web(project, port, SEARCHCRAWL_EMBEDDINGS="wordllama")
    try:
        base = f"http://127.0.0.1:{port}"
        page = requests.get(base + "/", params={"q": "When is parking free?", "source": source}, timeout=30).text
        assert "<mark>Parking permits are free at the gate office.</mark>" in page
        assert 'class="extract-source"><a href="http://h.test/parking"' in page
        assert "Answer this from what I may read" not in page  # no model to ask
        german = requests.get(
            base + "/", params={"q": "When is parking free?", "source": source}, headers={"Accept-Language": "de"}, timeout=30
        ).text
        assert "die markierten Sätze beantworten die Frage" in german
        keywords = requests.get(base + "/", params={"q": "parking permits", "source": source}, timeout=30).text
        assert "answer-extract" not in keywords  # two keywords: no question
        withheld = requests.get(base + "/", params={"q": BONUS, "source": source}, timeout=30).text
        assert not any(secret in withheld for secret in SECRET_WORDS[1:])
        token = make_token(base, "extracts")
        found = api(base, token, q="When is parking free?", source=source, answer="1").json()["answer"]
        assert found["extract"]["source"] == {"number": 1, "title": "Parking", "url": "http://h.test/parking"}
        assert {"text": "Parking permits are free at the gate office.", "answering": True} in found["extract"]["sentences"]
        assert found["sentences"] == [] and found["refused"] is None
        assert "answer" not in api(base, token, q="When is parking free?", source=source).json()  # asked for only
        agent = call(base + "/mcp/", token, "answer", {"question": "When is parking free?", "source": source})
        assert agent["answer"]["extract"]["source"]["url"] == "http://h.test/parking"
        hidden = call(base + "/mcp/", token, "answer", {"question": BONUS, "source": source})
        assert not any(secret in json.dumps(hidden) for secret in SECRET_WORDS)
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)
    log = (project.data_dir.parent / f"web-{port}.log").read_text()
    assert not any(secret in log for secret in SECRET_WORDS[1:])


def test_a_model_that_fails_leaves_the_extract_shown(project, kept_apart, stand_in) -> None:  # noqa: F811
    source, _index = kept_apart
    url, _prompts = stand_in
    port = free_port()
    environ = {"SEARCHCRAWL_ANSWERS_URL": url, "SEARCHCRAWL_ANSWERS_MODEL": "slow", "SEARCHCRAWL_ANSWERS_TIMEOUT": "1"}
    web = serve_web(project, port, SEARCHCRAWL_EMBEDDINGS="wordllama", **environ)
    try:
        asked = {"q": "When is parking free?", "source": source, "answer": "1"}
        page = requests.get(f"http://127.0.0.1:{port}/", params=asked, timeout=30).text
        assert "<mark>Parking permits are free at the gate office.</mark>" in page
        assert 'class="answer-none"' not in page and "Answer this from what I may read" not in page  # it was asked
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)


def test_explain_answer_explains_the_extract_without_a_model_server(project, kept_apart) -> None:  # noqa: F811
    """Review of issue 93: with SEARCHCRAWL_EMBEDDINGS set and no SEARCHCRAWL_ANSWERS_URL the page
    shows an extract, but `scrapy explain-answer` said "answers are off" (exit 2), and so did the
    administration's page. Both explain it now: the passages, their grants, the extract, and no
    model ("Model: … at ;" was printed before); off only when extractive answers are off too."""
    question = "When is parking free?"
    shown = project.scrapy("explain-answer", "public", question, SEARCHCRAWL_EMBEDDINGS="wordllama")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "granted: public" in shown.stdout and " at ;" not in shown.stdout and "prompt" not in shown.stdout
    assert "Extract, from [1] (answering sentences marked):\n  >> Parking permits are free at the gate office." in shown.stdout
    assert "Model: none (no SEARCHCRAWL_ANSWERS_URL): the extract is the answer" in shown.stdout
    off = project.scrapy(
        "explain-answer", "public", question, SEARCHCRAWL_EMBEDDINGS="wordllama", SEARCHCRAWL_ANSWERS_EXTRACTIVE="false"
    )
    assert off.returncode == 2 and "answers are off" in off.stdout, off.stdout
    web = client(project, embeddings="wordllama", extractive=NO_MODEL)
    csrf = login(web)
    report = html.unescape(web.post("/admin/explain-answer", data={"csrf": csrf, "user": "public", "question": question}).text)
    assert "Answers are off" not in report and "granted: public" in report, report
    assert ">> Parking permits are free at the gate office." in report and " at ;" not in report


def test_a_question_is_embedded_once_and_extracted_on_its_first_page_only(project, kept_apart, monkeypatch) -> None:  # noqa: F811
    """Review of issue 93: a question's search page embedded the query and ran the kNN query for
    its hits, then again for its extract, on every page of results. Now once a request
    (hybrid.py ``SemanticSearch.for_request``), and the extract on the first page only."""
    source, _index = kept_apart
    embedded: list[list[str]] = []
    embed = WordLlamaEmbedder.embed

    def counted(self: WordLlamaEmbedder, texts: list[str]) -> object:
        embedded.append(list(texts))
        return embed(self, texts)

    monkeypatch.setattr(WordLlamaEmbedder, "embed", counted)
    web = client(project, embeddings="wordllama", extractive=NO_MODEL)
    question = {"q": "When is parking free?", "source": source}
    embedded.clear()  # the model's check at start
    first = web.get("/", params=question).text
    assert "<mark>Parking permits are free at the gate office.</mark>" in first
    assert embedded == [["When is parking free?"]]
    embedded.clear()
    second = web.get("/", params={**question, "page": "2"}).text
    assert "answer-extract" not in second and embedded == [["When is parking free?"]]
