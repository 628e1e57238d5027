"""The agent endpoint (issue 77): the Model Context Protocol at /mcp/ of `scrapy web`, called with the
protocol's official Python SDK client over Streamable HTTP, as an agent calls it. Its tools act as
the API token's searcher: public documents for a visitor's token, a named user's for a token made to
search on behalf of users (their principals from the worker's real LDAP directory); a visitor's
token that names a user is refused (403) and never acts as one; a withheld document is "not found"
exactly as one that does not exist."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import requests
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from tests.e2e.test_api import access_web, make_token  # noqa: F401 - access_web: the fixture
from tests.e2e.test_web_access import Corpus


def call(url: str, token: str, tool: str | None, arguments: dict[str, Any] | None = None) -> Any:
    """The tool's structured result (or, ``tool`` None, the tools' names) through the SDK client."""

    async def run() -> Any:
        async with streamablehttp_client(url, headers={"Authorization": f"Bearer {token}"}) as (read, write, _session):
            async with ClientSession(read, write) as session:
                await session.initialize()
                if tool is None:
                    return sorted(item.name for item in (await session.list_tools()).tools)
                result = await session.call_tool(tool, arguments or {})
                assert not result.isError, result.content
                return result.structuredContent or json.loads(result.content[0].text)

    return asyncio.run(run())


def test_the_tools_act_as_the_tokens_searcher_and_nothing_more(access_web, project) -> None:  # noqa: F811
    base, corpus = access_web
    corpus: Corpus
    visitor, acting = make_token(base, "agent-visitor"), make_token(base, "agent", on_behalf=True)
    endpoint = base + "/mcp/"
    assert call(endpoint, visitor, None) == ["answer", "fetch_document", "search"]
    query = {"query": corpus.word, "source": corpus.source, "rows": 20}
    found = call(endpoint, visitor, "search", query)
    assert {corpus.name_of(hit["url"]) for hit in found["hits"]} == corpus.readers[None] and found["total"] == 1
    alice = call(endpoint + "?user=alice", acting, "search", query)
    assert {corpus.name_of(hit["url"]) for hit in alice["hits"]} == corpus.readers["alice"]
    own = f"https://intranet.example/{corpus.source}/alice-own"
    read = call(endpoint + "?user=alice", acting, "fetch_document", {"url": own})
    assert read["found"] and corpus.secret in read["text"]
    withheld = call(endpoint, visitor, "fetch_document", {"url": own})
    missing = call(endpoint, visitor, "fetch_document", {"url": own + "-not-there"})
    assert withheld == missing == {"found": False, "error": "not found"}  # withheld and absent alike
    bob = call(endpoint + "?user=bob", acting, "search", {"query": corpus.secret})
    assert bob["total"] == 0 and corpus.secret not in json.dumps(bob)
    assert call(endpoint, visitor, "answer", {"question": "what is here?"}) == {"answer": None, "error": "answers are off"}
    # each tool call is one line at INFO, the endpoint's own: the SDK's lines of every request are at DEBUG (issue 91)
    log = (project.data_dir.parent / f"web-{base.rsplit(':', 1)[1]}.log").read_text()
    assert log.count("Agent search by token") == 3 and log.count("Agent fetch by token") == 3, log[-3000:]
    assert "Agent answer by token 'agent-visitor' (public): answers are off" in log, log[-3000:]
    assert "Processing request of type" not in log and "Terminating session" not in log, log[-3000:]
    # a visitor's token never acts as a user; no token, no protocol
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    refused = requests.post(
        endpoint + "?user=alice", json=body, headers={**headers, "Authorization": f"Bearer {visitor}"}, timeout=30
    )
    assert refused.status_code == 403 and "insufficient_scope" in refused.headers["www-authenticate"]
    assert requests.post(endpoint, json=body, headers=headers, timeout=30).status_code == 401
    # a request's body is bounded and of a declared length, checked before the token or the protocol
    large = {**body, "params": {"padding": "x" * 70_000}}
    authorized = {**headers, "Authorization": f"Bearer {visitor}"}
    assert requests.post(endpoint, json=large, headers=authorized, timeout=30).status_code == 413
    chunked = requests.post(endpoint, data=iter([json.dumps(body).encode()]), headers=authorized, timeout=30)
    assert chunked.status_code == 413
