"""JavaScript rendering decisions, as plain logic: which URLs go through the browser, and when a
statically fetched page is an empty shell that needs rendering (``render_js = "auto"``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from lxml import html as lxml_html
from pydantic import BaseModel, ConfigDict, field_validator

RenderMode = bool | Literal["auto"]
HEAVY_RESOURCES = frozenset({"image", "font", "media"})


class RenderRule(BaseModel):
    """``[[render_rules]] pattern = '/app/' render_js = true``: overrides the source's render_js."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    pattern: str
    render_js: RenderMode

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
        return value


def render_mode(url: str, default: RenderMode, rules: Sequence[RenderRule]) -> str:
    """'static', 'browser' or 'auto' for a URL: the first matching rule, else the source's default."""
    mode: RenderMode = default
    for rule in rules:
        if re.search(rule.pattern, url):
            mode = rule.render_js
            break
    return "auto" if mode == "auto" else ("browser" if mode else "static")


def empty_shell(root: Any, min_text: int, selector: str | None) -> str | None:
    """Why a statically fetched page looks like a JavaScript shell (None: it does not)."""
    if selector:
        try:
            if not root.cssselect(selector):
                return f"selector {selector!r} missing"
        except Exception:  # noqa: BLE001 - a selector lxml cannot run is checked in the browser only
            pass
    for noscript in root.iter("noscript"):
        if len(" ".join(noscript.text_content().split())) > 20:
            return "<noscript> notice"
    body = root.find("body")
    if body is None:
        return "no body"
    clone = lxml_html.fromstring(lxml_html.tostring(body))
    for element in clone.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    visible = len(" ".join(clone.text_content().split()))
    if visible < min_text:
        return f"{visible} characters of visible text (< {min_text})"
    return None


def abort_heavy_request(request: Any) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: images, fonts and media are not needed for text and links."""
    return request.resource_type in HEAVY_RESOURCES
