"""The base of the rule tables of a source file (``[domains]``, ``[filters.scope]`` ...): strict,
frozen, and an unknown key named with the table's known keys. The tables themselves live next to
what validates the file (searchcrawl/config/source.py) or, for the filters, next to their logic."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


def regular_expression(value: str) -> re.Pattern[str]:
    """``value`` compiled; a ValueError that names it when it is no regular expression (what a
    rule table's validator raises, so that the source file is refused with the key)."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a regular expression: {exc}") from None


def regular_expressions(values: list[str]) -> list[str]:
    """``values``, each checked by ``regular_expression``: a rule table's ``patterns``."""
    for value in values:
        regular_expression(value)
    return values


def known_keys(model: type[BaseModel], data: Any) -> Any:
    """Reject an unknown key with a message listing the known ones (nested tables)."""
    if isinstance(data, dict):
        unknown = [key for key in data if key not in model.model_fields]
        if unknown:
            known = ", ".join(model.model_fields)
            raise ValueError(f"unknown key {unknown[0]!r} (known keys: {known})")
    return data


class RuleTable(BaseModel):
    """A table of rules in a source file; an unknown key is named with the table's known keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        return known_keys(cls, data)
