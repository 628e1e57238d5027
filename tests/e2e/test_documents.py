"""Documents: character sets, languages, attribute mapping across sources, description fallback,
main text; and a site linking to documents of every supported kind, crawled into Solr."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from searchcrawl.content.charsets import choose_encoding
from searchcrawl.content.extract import mapped_attributes, typed_value
from searchcrawl.content.language_detection import detect_language
from searchcrawl.dev.tika_runner import DevTika
from tests.conftest import TEST_JVM_OPTIONS, free_port, solr_docs, wait_for


@pytest.mark.parametrize(
    ("content_type", "body", "default", "expected"),
    [
        ("text/html", "café".encode("cp1252"), "windows-1252", "cp1252"),  # nothing declared: the source's default
        ("text/html", "café".encode(), None, None),  # nothing declared, no default: Scrapy detects
        ("text/html; charset=iso-8859-1", "café".encode(), None, "utf-8"),  # UTF-8 labelled Latin-1
        ("text/html; charset=utf-8", "café".encode("cp1252"), None, "cp1252"),  # Latin-1 labelled UTF-8
        ("text/html; charset=iso-8859-1", b"\xef\xbb\xbf" + "café".encode(), None, "utf-8"),  # the BOM wins
        ("text/html; charset=koi8-r", "привет".encode("koi8-r"), "windows-1252", None),  # declared and right
    ],
)
def test_choose_encoding(content_type, body, default, expected) -> None:
    assert choose_encoding(content_type, body, default) == expected


def test_language_detection_and_typed_attributes() -> None:
    assert detect_language("Dies ist ein deutscher Satz über das Wetter in Berlin und München.") == "de"
    assert detect_language("short") is None
    assert typed_value("42", "int") == 42 and typed_value("yes", "boolean") is True
    assert typed_value("2024-05-01", "date") == "2024-05-01T00:00:00Z"
    assert typed_value("a, b", "strings") == ["a", "b"]
    found = mapped_attributes(
        {"revision": "7", "dept": "Legal", "writer": "Ann", "pages": "many"},
        {"revision": "version", "dept": "department", "writer": "author", "pages": "pages"},
        {"version": "int", "pages": "int"},
    )
    assert found == {"version_i": 7, "department_s": "Legal", "author": "Ann"}  # 'many' is not an int: left out


def page(title: str, body: str, head: str = "") -> str:
    return f"<html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


def test_charsets_mapping_fallback_and_main_text(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    root.mkdir()
    links = "".join(
        f'<a href="{p}">{p}</a> ' for p in ["latin.html", "bom.html", "mislabelled.html", "deutsch.html", "noisy.html"]
    )
    (root / "index.html").write_text(page("home", links))
    (root / "latin.html").write_bytes(page("Crème brûlée", "<p>Café crème, déjà vu.</p>").encode("cp1252"))
    (root / "bom.html").write_bytes(b"\xef\xbb\xbf" + page("BOM", "<p>Smörgåsbord</p>").encode("utf-8"))
    (root / "deutsch.html").write_text(
        page(
            "Wetter",
            "<p>Dies ist ein deutscher Satz über das Wetter in Berlin und München.</p>",
            head='<meta name="revision" content="12"><meta name="dept" content="Legal">',
        )
    )
    (root / "noisy.html").write_text(
        page(
            "Noisy",
            "<nav>Home | Products | About us | Contact</nav><article><p>"
            + "The actual article text about enterprise search crawling. " * 12
            + "</p></article><footer>Last updated 21 November 2026</footer>",
        )
    )
    site = serve(root)
    site.responses["/mislabelled.html"] = (
        200,
        {"Content-Type": "text/html; charset=iso-8859-1"},
        page("Mislabelled", "<p>naïve façade</p>").encode("utf-8"),
    )
    first = f"docs-{uuid.uuid4().hex[:8]}"
    project.source(
        first,
        f'''seeds = ["{site.url}index.html"]
default_charset = "windows-1252"
description_fallback = true
main_text = true
attributes = {{ revision = "version", dept = "department" }}
search_attributes = {{ version = "int" }}
''',
    )
    assert project.scrapy("crawl", first).returncode == 0
    docs = {doc["id"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, first)}
    assert docs["latin.html"]["title"] == "Crème brûlée" and "déjà vu" in docs["latin.html"]["content"]
    assert "Smörgåsbord" in docs["bom.html"]["content"]
    assert "naïve façade" in docs["mislabelled.html"]["content"]
    assert docs["deutsch.html"]["language"] == "de"  # detected: nothing declares it
    assert docs["deutsch.html"]["version_i"] == 12 and docs["deutsch.html"]["department_s"] == "Legal"
    assert docs["deutsch.html"]["description"].startswith("Dies ist ein deutscher Satz")  # body-text fallback
    noisy = docs["noisy.html"]["content"]
    assert "actual article text" in noisy and "About us" not in noisy  # boilerplate stripped

    # a second source maps its own attribute name onto the same search attribute
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "index.html").write_text(page("Other", "<p>Another source</p>", head='<meta name="rev" content="12">'))
    other_site = serve(other_root)
    second = f"docs2-{uuid.uuid4().hex[:8]}"
    project.source(
        second,
        f'seeds = ["{other_site.url}index.html"]\nattributes = {{ rev = "version" }}\n'
        'search_attributes = { version = "int" }\n',
    )
    assert project.scrapy("crawl", second).returncode == 0
    hits = solr.search("version_i:12", fq=f'source:("{first}" OR "{second}")', rows=10, fl="id,source")
    assert {doc["source"] for doc in hits} == {first, second}


def test_checksum_over_main_text_ignores_a_changed_footer(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    root.mkdir()
    article = "<article><p>" + "A long article about crawling intranets with care. " * 12 + "</p></article>"
    (root / "index.html").write_text(page("Article", article + "<footer>Updated 1 January</footer>"))
    site = serve(root)
    name = f"footer-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nchecksum_of = "main_text"\nmodified_when = ["checksum"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    version = solr_docs(solr, name)[0]["_version_"]
    (root / "index.html").write_text(page("Article", article + "<footer>Updated 2 February</footer>"))
    assert project.scrapy("crawl", name).returncode == 0
    assert solr_docs(solr, name)[0]["_version_"] == version  # not re-indexed


def test_scope_and_result_filters_in_a_crawl(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    (root / "print").mkdir(parents=True)
    (root / "hub.html").write_text(page("hub", '<a href="leaf.html">leaf</a>'))
    (root / "leaf.html").write_text(page("leaf", "<p>" + "a leaf page long enough to pass the length filter " * 3 + "</p>"))
    (root / "print" / "a.html").write_text(page("print", "<p>print version</p>"))
    (root / "data.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (root / "tiny.html").write_text(page("t", "x"))
    links = "".join(f'<a href="{p}">{p}</a> ' for p in ["hub.html", "print/a.html", "data.zip", "tiny.html"])
    (root / "index.html").write_text(page("home", "<p>" + "the home page of this small site " * 5 + "</p>" + links))
    site = serve(root)
    name = f"filters-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f'''seeds = ["{site.url}index.html"]

[filters.scope]
exclude_urls = ["*/print/*"]
exclude_file_names = ["*.zip"]

[filters.result]
exclude_urls = ["*/hub.html"]
min_length = 120
''',
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    indexed = {doc["id"].rsplit("/", 1)[1] for doc in solr_docs(solr, name)}
    assert indexed == {"index.html", "leaf.html"}  # hub: result-filtered, but its link was followed
    paths = site.paths()
    assert "/print/a.html" not in paths and "/data.zip" not in paths  # scope filters: never fetched
    assert "/hub.html" in paths and "/leaf.html" in paths
    table = project.table()
    assert table.get(name, site.url + "print/a.html")["reason"] == 'scope filter exclude_urls "*/print/*"'
    assert table.get(name, site.url + "hub.html")["status"] == 908
    assert "result filter min_length 120" in table.get(name, site.url + "tiny.html")["reason"]


FORMATS = ("pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "rtf", "doc", "xls", "ppt")


@pytest.mark.parametrize("converter", ["python", "tika"])
def test_a_site_of_office_documents(project, serve, tmp_path, solr, request, converter: str) -> None:
    """Every supported kind, from the textract corpus, crawled into Solr and searchable, by the
    Python converters and by a Tika server; a corrupt PDF and a 200 MB file get their status and
    the crawl goes on."""
    from tests.conftest import unpack

    corpus = unpack("textract-tests.tar.xz", tmp_path / "corpus")
    formats = FORMATS + (("epub", "eml", "msg") if converter == "tika" else ())  # formats only Tika reads
    files = {fmt: next(corpus.rglob(f"standardized_text.{fmt}"), None) for fmt in formats}
    root = tmp_path / "site"
    root.mkdir()
    links = []
    for fmt, path in files.items():
        if path is not None:
            (root / f"fox.{fmt}").write_bytes(path.read_bytes())
            links.append(f"fox.{fmt}")
    pdf = (root / "fox.pdf").read_bytes()
    (root / "corrupt.pdf").write_bytes(pdf[: len(pdf) // 3])
    with open(root / "huge.txt", "wb") as huge:  # 200 MB, sparse on disk
        huge.truncate(200 * 1024 * 1024)
    links += ["corrupt.pdf", "huge.txt"]
    (root / "index.html").write_text(page("documents", "".join(f'<a href="{link}">{link}</a> ' for link in links)))
    site = serve(root)
    name = f"office-{uuid.uuid4().hex[:8]}"
    # The files all hold the same sentence: with the checksum over their text they would be
    # duplicates of one another (indexed once); over their raw bytes each is its own document.
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_download_bytes = 52428800\nchecksum_of = "raw"\n')
    tika = {"SEARCHCRAWL_TIKA_URL": request.getfixturevalue("tika_url")} if converter == "tika" else {}
    result = project.scrapy("crawl", name, **tika)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = {doc["id"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, name)}
    for fmt, path in files.items():
        if path is None:
            continue
        doc = docs.get(f"fox.{fmt}")
        assert doc is not None, f"{fmt} not indexed: {project.table().get(name, site.url + 'fox.' + fmt)}"
        assert "quick brown fox" in " ".join(doc["content"].lower().split()), fmt
    hits = solr.search('"quick brown fox"', fq=f'source:"{name}"', rows=50, fl="id")
    indexed = len([p for p in files.values() if p is not None])
    table = project.table()
    assert table.get(name, site.url + "huge.txt")["status"] == 922
    pdf = docs["fox.pdf"]  # the document's own metadata, as attributes
    assert (pdf["title"], pdf["document_kind_s"]) == ("standardized_text", "pdf")
    corrupt = table.get(name, site.url + "corrupt.pdf")
    if converter == "python":
        assert corrupt["status"] == 921
        assert len(hits) == indexed
    else:  # Tika (PDFBox) recovers the text of the PDF's first third, silently: indexed
        assert corrupt["state"] == "indexed", corrupt
        assert "corrupt.pdf" in docs and len(hits) == 1 + indexed
        assert (pdf["author"], pdf["page_count_i"]) == ("Dean Malmgren", 1) and pdf["created_dt"].startswith("2014-08-25")


def write_docx(path: Path, text: str) -> None:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    document.save(str(path))


@pytest.mark.slow
def test_tika_stopped_in_the_middle_of_a_crawl_and_started_again(project, serve, tmp_path, solr) -> None:
    """Documents whose converter went away mid-crawl: status 926, their indexed version kept, no
    failure counted; the crawl finishes; with Tika back, the next crawl indexes them."""
    tika = DevTika(tmp_path / "tika", free_port())  # its own: the run's Tika serves other tests
    tika.java_tool_options = TEST_JVM_OPTIONS  # as the run's: it starts twice here
    tika_env = {"SEARCHCRAWL_TIKA_URL": tika.start()}
    try:
        root = tmp_path / "site"
        root.mkdir()
        names = [f"doc{n:02}.docx" for n in range(12)]
        for n, doc in enumerate(names):
            write_docx(root / doc, f"first version of document {n}")
        (root / "index.html").write_text(page("docs", "".join(f'<a href="{doc}">{doc}</a> ' for doc in names)))
        site = serve(root)
        name = f"tikaout-{uuid.uuid4().hex[:8]}"
        seeds = f'seeds = ["{site.url}index.html"]\n'
        project.source(name, seeds)
        assert project.scrapy("crawl", name, **tika_env).returncode == 0
        assert {doc["content"] for doc in solr_docs(solr, name) if doc["url"].endswith(".docx")} == {
            f"first version of document {n}" for n in range(12)
        }
        for n, doc in enumerate(names):
            first = (root / doc).stat().st_mtime
            write_docx(root / doc, f"second version of document {n}")
            os.utime(root / doc, (first + 2, first + 2))  # a new Last-Modified second (HTTP dates have 1 s resolution)
        site.requests.clear()
        # this crawl only is slow (half a second a request, one at a time): Tika stops in its middle
        project.source(name, seeds + "delay = 0.5\nconcurrent_per_site = 1\n")
        crawl = project.popen("crawl", name, **tika_env)
        wait_for(lambda: sum(path.endswith(".docx") for path in site.paths()) >= 4, what="four documents fetched")
        tika.stop()  # in the middle of the crawl
        output, _ = crawl.communicate(timeout=300)
        assert crawl.returncode == 0, (output or "")[-3000:]
        table = project.table()
        rows = {doc: table.get(name, site.url + doc) for doc in names}
        content = {doc["url"].rsplit("/", 1)[1]: doc["content"] for doc in solr_docs(solr, name)}
        unavailable = [doc for doc, row in rows.items() if row["status"] == 926]
        assert unavailable and len(unavailable) < len(names), {doc: row["status"] for doc, row in rows.items()}
        for doc in unavailable:  # nothing lost: the first version stays searchable, nothing counted
            assert (rows[doc]["state"], rows[doc]["failures"]) == ("indexed", 0), rows[doc]
            assert content[doc].startswith("first version"), content[doc]
            assert rows[doc]["reason"].startswith("Tika unreachable")
        for doc in set(names) - set(unavailable):
            assert content[doc].startswith("second version"), content[doc]
        tika.start()
        project.source(name, seeds)
        assert project.scrapy("crawl", name, **tika_env).returncode == 0
        table = project.table()
        assert {table.get(name, site.url + doc)["status"] for doc in unavailable} == {200}  # converted now
        assert {table.get(name, site.url + doc)["status"] for doc in set(names) - set(unavailable)} == {912}
        assert {doc["content"] for doc in solr_docs(solr, name) if doc["url"].endswith(".docx")} == {
            f"second version of document {n}" for n in range(12)
        }
    finally:
        tika.stop()


@pytest.mark.slow
def test_ocr_of_a_scanned_pdf_and_images_in_a_crawl(project, serve, tmp_path, solr, tika_url) -> None:
    """A source with ocr = true: the textract corpus's scanned PDF and its images are searchable
    by their text; the same files in a source without OCR are indexed by name, not as duplicates
    of one another for their empty text."""
    from tests.benchmarks.converters import share_found
    from tests.conftest import unpack

    corpus = unpack("textract-tests.tar.xz", tmp_path / "corpus") / "textract-tests" / "tests"
    root = tmp_path / "site"
    root.mkdir()
    files = {
        "scan.pdf": corpus / "pdf" / "ocr_text.pdf",
        "fox.png": corpus / "png" / "standardized_text.png",
        "fox.jpg": corpus / "jpg" / "standardized_text.jpg",
        "fox.gif": corpus / "gif" / "standardized_text.gif",
        "fox.tiff": corpus / "tiff" / "standardized_text.tiff",
    }
    for name, path in files.items():
        (root / name).write_bytes(path.read_bytes())
    (root / "index.html").write_text(page("scans", "".join(f'<a href="{name}">{name}</a> ' for name in files)))
    site = serve(root)
    with_ocr, without = f"ocr-{uuid.uuid4().hex[:8]}", f"noocr-{uuid.uuid4().hex[:8]}"
    project.source(with_ocr, f'seeds = ["{site.url}index.html"]\nocr = true\nocr_languages = ["eng", "deu"]\n')
    project.source(without, f'seeds = ["{site.url}index.html"]\n')
    for name in (with_ocr, without):
        result = project.scrapy("crawl", name, SEARCHCRAWL_TIKA_URL=tika_url)
        assert result.returncode == 0, result.stderr[-3000:]
    read = {doc["url"].rsplit("/", 1)[1]: doc.get("content", "") for doc in solr_docs(solr, with_ocr)}
    expected = (corpus / "pdf" / "ocr_text.txt").read_text(encoding="utf-8")
    share = share_found(expected, read["scan.pdf"])
    print(f"\nOCR of the scanned PDF: {share:.1%} of the expected words")
    assert share >= 0.8, read["scan.pdf"][:500]
    rows = {name: project.table().get(with_ocr, site.url + name) for name in files}
    assert set(read) == set(files) | {"index.html"}, {name: (row["status"], row["reason"]) for name, row in rows.items()}
    for image in ("fox.png", "fox.jpg", "fox.gif", "fox.tiff"):
        assert "quick brown fox" in " ".join(read[image].lower().split()), read[image]
    unread = {doc["url"].rsplit("/", 1)[1]: doc for doc in solr_docs(solr, without)}
    assert set(unread) == set(files) | {"index.html"}  # none is a duplicate of another
    assert all("content" not in unread[name] for name in ("fox.png", "fox.jpg", "fox.gif", "fox.tiff"))
    table = project.table()
    assert table.get(without, site.url + "fox.png")["reason"] == "indexed without text: its metadata and file name"
