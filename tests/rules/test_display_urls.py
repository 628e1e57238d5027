"""Display URLs: prefix and regex rules, and a folder path standing for its file URLs."""

from searchcrawl.rules.display_urls import DisplayUrlRule, DisplayUrls


def test_a_folder_prefix_maps_a_files_sources_documents() -> None:
    rules = DisplayUrls(
        [
            DisplayUrlRule(prefix="/srv/share docs/", replace="https://files.example.com/"),
            DisplayUrlRule(prefix="http://mirror.internal/", replace="https://docs.example.com/"),
        ]
    )
    assert rules.display_url("file:///srv/share%20docs/a/b.pdf") == "https://files.example.com/a/b.pdf"
    assert rules.display_url("file:///srv/other/b.pdf") == "file:///srv/other/b.pdf"
    assert rules.display_url("http://mirror.internal/x") == "https://docs.example.com/x"


def test_a_regex_rule_rewrites_the_first_match() -> None:
    rules = DisplayUrls([DisplayUrlRule(regex=r"^http://([a-z]+)\.internal/", replace=r"https://\1.example.com/")])
    assert rules.display_url("http://wiki.internal/page") == "https://wiki.example.com/page"
