"""The manual (the README, the front door, and its pages in docs/) must document every status code
and source key, name only files and modules that exist, and link only to headings that exist."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import pytest

from searchcrawl.config.implementations import AGENTS, SPIDERS, URL_REWRITERS
from searchcrawl.config.source import SourceFile, SourceSettings, load_source
from searchcrawl.rules.status_codes import CRAWLER_CODES, describe

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md"))
# the README and its pages, as one text: what the checks below read
README = "\n\n".join((ROOT / name).read_text(encoding="utf-8") for name in ["README.md", *PAGES])
# the manuals whose links are checked (the README links into the others, and back)
MANUALS = ("README.md", *PAGES, "deploy/README.md", "tests/benchmarks/README.md", "solr/README.md")

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.M)


def prose(text: str) -> str:
    """The text without its fenced code blocks (a ``# comment`` in a shell block is no heading)."""
    return FENCE.sub("", text)


def section(text: str, title: str) -> str:
    """The body of the section whose heading says ``title`` (at any level: a section of the README
    became a page's title), up to the next heading of the same or a higher level."""
    lines = text.splitlines()
    start = next(number for number, line in enumerate(lines) if re.fullmatch(rf"#+ {re.escape(title)}", line))
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    start += 1
    for end in range(start, len(lines)):
        found = re.match(r"(#+) ", lines[end])
        if found and len(found.group(1)) <= level:
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])


# ---------------------------------------------------------------------------------------------
# status codes


def status_rows() -> dict[int, list[str]]:
    """The rows of the README's status-code table: code -> its other cells."""
    body = section(README, "Status codes")
    table = [line for line in body.splitlines() if line.startswith("|")]
    assert table[:2] == ["| code | name | meaning |", "|---|---|---|"], table[:2]
    rows: dict[int, list[str]] = {}
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert cells[0].isdigit(), f"not a status row: {line}"
        assert int(cells[0]) not in rows, f"status {cells[0]} is listed twice"
        rows[int(cells[0])] = cells[1:]
    return rows


def test_every_crawler_code_has_its_row_with_the_codes_description() -> None:
    """Each row is exactly ``| <code> | `<name>` | <description from the code> |``, so the table
    says what `scrapy status` and `scrapy explain` print (``describe``)."""
    rows = status_rows()
    for status, description in CRAWLER_CODES.items():
        assert int(status) in rows, f"crawler code {int(status)} ({status.name}) is not in the README's table"
        assert rows[int(status)] == [f"`{status.name.lower()}`", description], (
            f"README row of {int(status)} differs from the code (searchcrawl/rules/status_codes.py)"
        )
        assert describe(int(status)) == description


def test_the_status_table_lists_no_code_the_crawler_does_not_have() -> None:
    unknown = set(status_rows()) - {int(status) for status in CRAWLER_CODES}
    assert not unknown, f"the README lists crawler codes the code does not have: {sorted(unknown)}"


# ---------------------------------------------------------------------------------------------
# source keys


def test_every_source_key_is_in_the_reference() -> None:
    reference = section(README, "Source file reference")
    for key in SourceSettings.model_fields:
        assert f"| `{key}` |" in reference, f"source key {key!r} is not in the source file reference"


@pytest.mark.parametrize("example", re.findall(r"^```toml\n(.*?)^```", README, re.M | re.S))
def test_every_toml_example_is_a_valid_source_file(example: str, tmp_path: Path) -> None:
    settings = SourceSettings.model_validate(tomllib.loads(example))
    if settings.type != "web":  # its type's table too, by its agent's own model
        path = tmp_path / "example.toml"
        path.write_text(example, encoding="utf-8")
        load_source(SourceFile("example", str(path), path))


def test_the_readmes_agent_is_the_tested_one() -> None:
    code = re.findall(r"^```python\n(.*?)^```", section(README, "Agents of your own"), re.M | re.S)
    assert len(code) == 1 and code[0].strip() in (ROOT / "tests/agents/example_agent.py").read_text(encoding="utf-8")


def test_the_dovecot_setup_is_the_tested_one(tmp_path: Path) -> None:
    """Every line of the IMAP section's Dovecot configuration is one the tests' server runs with
    (tests/mail_server.py), its paths there."""
    from tests.mail_server import CRAWLER, dovecot_config

    blocks = re.findall(r"^```dovecot\n(.*?)^```", section(README, "IMAP servers"), re.M | re.S)
    assert len(blocks) == 1
    paths = {"/etc/dovecot/": f"{tmp_path}/", "/var/vmail-public": f"{tmp_path}/public", "/var/vmail/": f"{tmp_path}/mail/"}
    paths["/var/lib/dovecot/"] = f"{tmp_path}/state/"
    running = set(dovecot_config(tmp_path, 143, 993).splitlines())
    for line in blocks[0].splitlines():
        for documented, tested in paths.items():
            line = line.replace(documented, tested)
        assert line in running, line
    assert f"/etc/dovecot/global-acl   * user={CRAWLER} lra" in section(README, "IMAP servers")


# ---------------------------------------------------------------------------------------------
# paths and modules named in the README

# A path of the tree: a file (with a suffix) or a folder (with a trailing slash), under one of the
# project's top-level folders, not part of a longer path (`~/.cache/searchcrawl/...`) or a URL.
PATH = re.compile(r"(?<![\w/.~<>-])((?:searchcrawl|solr|deploy|tests)/[\w./-]*)")
MODULE = re.compile(r"\bsearchcrawl(?:\.\w+)+")


def named_paths() -> set[str]:
    paths = set()
    for match in PATH.finditer(README):
        path = match.group(1).rstrip(".")
        if path.endswith("/") or Path(path).suffix:
            paths.add(path)
    return paths


def test_the_readme_names_paths() -> None:
    """The check below has something to check: the code map names the packages and modules."""
    paths = named_paths()
    assert "searchcrawl/rules/" in paths and "searchcrawl/rules/lifecycle.py" in paths


@pytest.mark.parametrize("path", sorted(named_paths()))
def test_every_path_in_the_readme_exists(path: str) -> None:
    target = ROOT / path
    assert target.is_dir() if path.endswith("/") else target.is_file(), f"the manual names {path}, which does not exist"


def test_every_module_path_in_the_code_map_exists() -> None:
    """A module named by its file name alone in the code map (`spider.py` under `searchcrawl/crawl/`)
    exists in that package (or one of its subpackages)."""
    code_map = section(README, "Code map")
    for entry in re.findall(r"^- \*\*`(searchcrawl/[\w/]+/)`\*\*(.*?)(?=^- |\Z)", code_map, re.M | re.S):
        package, text = entry
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", text):
            if name.startswith(("searchcrawl/", "solr/")):
                continue  # a full path, checked above
            found = list((ROOT / package).rglob(name.rstrip("/")))
            assert found, f"the code map names {name} under {package}, which has no such module"


def test_the_code_map_names_every_module() -> None:
    """Every module of the package is named in its folder's entry of the code map (a newcomer finds
    each one there), and no two modules share a file name (issue 22: a layout that reads)."""
    code_map = section(README, "Code map")
    entries = dict(re.findall(r"^- \*\*`(searchcrawl/[\w/]+/)`\*\*(.*?)(?=^- |\Z)", code_map, re.M | re.S))
    modules = [
        path.relative_to(ROOT)
        for path in (ROOT / "searchcrawl").rglob("*.py")
        if path.name != "__init__.py" and "migrations" not in path.parts and path.parent.name != "searchcrawl"
    ]
    for module in modules:
        package = f"{module.parts[0]}/{module.parts[1]}/"
        assert package in entries, f"the code map has no entry for {package}"
        assert re.search(rf"\b{re.escape(module.stem)}\b", entries[package]), f"the code map does not name {module}"
    names = [module.name for module in modules]
    assert sorted({name for name in names if names.count(name) > 1}) == []


def dotted_names() -> set[str]:
    names = set()
    for span in re.findall(r"`([^`\n]+)`", prose(README)):
        names.update(MODULE.findall(span))
    return names - {kind.group for kind in (AGENTS, SPIDERS, URL_REWRITERS)}  # entry point groups: names, not modules


@pytest.mark.parametrize("name", sorted(dotted_names()))
def test_every_dotted_name_in_the_readme_exists(name: str) -> None:
    """`searchcrawl.crawl.spider.SourceSpider`: the longest importable prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            assert hasattr(target, attribute), f"the manual names {name}: {attribute!r} not found"
            target = getattr(target, attribute)
        return
    pytest.fail(f"the manual names {name}, which cannot be imported")


# ---------------------------------------------------------------------------------------------
# links


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(prose(path.read_text(encoding="utf-8"))):
        anchor = base = slug(heading[1])
        number = 0
        while anchor in found:  # a repeated heading gets -1, -2, ...
            number += 1
            anchor = f"{base}-{number}"
        found.add(anchor)
    return found


def links() -> list[tuple[str, str]]:
    found = []
    for manual in MANUALS:
        text = prose((ROOT / manual).read_text(encoding="utf-8"))
        found += [(manual, target) for target in re.findall(r"\]\(([^)\s]+)\)", text)]
    return found


@pytest.mark.parametrize(("manual", "target"), links())
def test_every_link_between_the_manuals_resolves(manual: str, target: str) -> None:
    if re.match(r"[a-z]+:", target):
        return  # a web address
    file, _, anchor = target.partition("#")
    path = (ROOT / manual).parent / file if file else ROOT / manual
    assert path.exists(), f"{manual} links to {target}: {path.relative_to(ROOT)} does not exist"
    if anchor:
        assert anchor in anchors(path), f"{manual} links to {target}: no such heading"


def test_every_readme_anchor_named_in_the_tree_resolves() -> None:
    """A link into a manual by file and anchor, written anywhere in the project's code, tests or
    deploy files (docstrings, systemd units, scripts), names a heading that exists."""
    for path in [*ROOT.glob("searchcrawl/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("deploy/*")]:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for file, anchor in re.findall(r"((?:[\w.-]+/)*(?:README|docs/[\w-]+)\.md)#([\w-]+)", text):
            target = ROOT / file
            if not target.exists():
                target = path.parent / file
            assert anchor in anchors(target), f"{path.relative_to(ROOT)} names {file}#{anchor}: no such heading"


def test_the_readme_and_its_pages_link_both_ways() -> None:
    """The README (the front door) links to every page of docs/, and every page links back to it."""
    front = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(front.splitlines()) < 150, "the README is the front door: what it is, two commands, a map"
    for page in PAGES:
        assert f"]({page})" in front, f"the README does not link to {page}"
        assert "](../README.md)" in (ROOT / page).read_text(encoding="utf-8"), f"{page} does not link back"
