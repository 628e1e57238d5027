"""The README is the user's manual: it must document every status code and source key."""

from pathlib import Path

from searchcrawl.config.source import SourceSettings
from searchcrawl.rules.status_codes import CRAWLER_CODES

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_crawler_code_is_in_the_status_table() -> None:
    for status in CRAWLER_CODES:
        assert f"| {int(status)} | `{status.name.lower()}` |" in README


def test_every_source_key_is_in_the_reference() -> None:
    for key in SourceSettings.model_fields:
        assert f"| `{key}` |" in README
