"""searchcrawl.content.convert.tika_client: documents through a real Tika server (the run's, started
by scrapy tika start's code): text of every format of the textract corpus, metadata, embedded
documents, limits; and what a failing server does (unreachable, 5xx, too slow, busy)."""

from __future__ import annotations

import socket
import threading
import time
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from searchcrawl.content.convert import ConversionError, ConverterUnavailable, TikaConverter
from searchcrawl.content.convert.tika_client import CONTENT, converted_from_rmeta
from tests.benchmarks.converters import CORPUS, FORMATS, share_found
from tests.conftest import free_port, unpack


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return unpack(CORPUS.name, tmp_path_factory.mktemp("textract")) / "textract-tests" / "tests"


@pytest.fixture(scope="module")
def tika(tika_url: str) -> TikaConverter:
    return TikaConverter(tika_url)


# --- the answer of /rmeta, as plain logic -------------------------------------------------------


def test_rmeta_text_metadata_and_embedded_parts() -> None:
    parts = [
        {
            "Content-Type": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "dc:title": "Report",
            "dc:creator": ["Ann", "Bob"],
            "meta:keyword": "alpha; beta",
            "dcterms:created": "2024-05-06T07:08:09Z",
            "dcterms:modified": "0001-01-01T00:00:00Z",  # .NET's empty date: no date, not year 1
            "xmpTPg:NPages": "12",
            "custom:Department": "Legal",
            "X-TIKA:parse_time_millis": "5",
            "X-TIKA:content": "\n\nBody text\n\nattached.txt\n\n/docProps/thumbnail.jpeg\n",
        },
        {"resourceName": "attached.txt", "X-TIKA:content": "attachment words\n"},
        {"resourceName": "/docProps/thumbnail.jpeg", "embeddedResourceType": "THUMBNAIL", "X-TIKA:content": "thumb"},
    ]
    converted = converted_from_rmeta(parts)
    assert converted.text == "Body text\n\nattachment words"  # names of embedded parts and thumbnails left out
    assert converted.kind == "docx"
    assert converted.metadata == {
        "title": "Report",
        "author": "Ann",
        "keywords": ["alpha", "beta"],
        "created": "2024-05-06T07:08:09Z",
        "pages": "12",
    }
    assert converted.properties["custom:department"] == "Legal"
    assert converted.properties["dc:creator"] == "Ann, Bob"
    assert "x-tika:parse_time_millis" not in converted.properties


def test_the_title_tika_writes_before_the_text_is_not_text() -> None:
    """Issue 53: Tika's text begins with the document's title (its answer's XHTML <title>), so a
    file of pictures had its title for text, the same as every other one of that title. Taken out
    once: a heading that repeats the title is the document's own."""
    title_only = converted_from_rmeta([{"dc:title": "PowerPoint Presentation", CONTENT: "\n\n\nPowerPoint Presentation\n\n"}])
    assert (title_only.text, title_only.metadata["title"]) == ("", "PowerPoint Presentation")
    heading = converted_from_rmeta(
        [{"dc:title": "Annual report", CONTENT: "\n\nAnnual report\n\n\nAnnual report\nRevenue grew."}]
    )
    assert heading.text == "Annual report\nRevenue grew."
    other = converted_from_rmeta([{"dc:title": "Annual", CONTENT: "Annual report of 2024\n"}])
    assert other.text == "Annual report of 2024"  # a line that merely begins with the title stays


@pytest.mark.parametrize(
    ("exception", "status"),
    [
        ("org.apache.tika.exception.EncryptedDocumentException: bad password", "encrypted"),
        ("java.io.IOException: Error: End-of-File, expected line", "corrupt"),
        ("org.apache.tika.exception.TikaMemoryLimitException: too much", "too_large"),
    ],
)
def test_a_container_that_failed_without_text(exception: str, status: str) -> None:
    with pytest.raises(ConversionError) as raised:
        converted_from_rmeta([{"X-TIKA:EXCEPTION:container_exception": exception + "\n\tat x.y(z.java:1)"}])
    assert raised.value.status == status
    assert "\n" not in str(raised.value)


def test_a_container_that_failed_after_some_text_is_kept_with_a_warning() -> None:
    parts = [
        {
            "X-TIKA:EXCEPTION:container_exception": "java.io.IOException: truncated\n\tat a.b(c.java:1)",
            "X-TIKA:content": "the start",
        }
    ]
    converted = converted_from_rmeta(parts)
    assert (converted.text, converted.warning) == ("the start", "partly converted: java.io.IOException: truncated")


def test_hostile_page_counts_are_left_out() -> None:
    assert "pages" not in converted_from_rmeta([{"xmpTPg:NPages": "99999999999", "X-TIKA:content": "x"}]).metadata
    assert "pages" not in converted_from_rmeta([{"xmpTPg:NPages": "-3", "X-TIKA:content": "x"}]).metadata
    assert "pages" not in converted_from_rmeta([{"xmpTPg:NPages": "\u00b2", "X-TIKA:content": "x"}]).metadata


# --- a real Tika server -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_of_the_textract_corpus(corpus: Path, tika: TikaConverter, fmt: str) -> None:
    """The expected words of each format's raw_text document (as multisets, as test_convert does)."""
    source = corpus / fmt / f"raw_text.{fmt}"
    converted = tika.convert(source.read_bytes(), None, source.name)
    share = share_found((corpus / fmt / "raw_text.txt").read_text(encoding="utf-8"), converted.text)
    # xls: Tika writes numbers as Excel displays them ("1.5E+7"), the expected text as stored
    assert share >= (0.9 if fmt == "xls" else 0.99), (fmt, share, converted.text[:300])


@pytest.mark.parametrize("fmt", ["mp3", "ogg", "wav", "ps"])
def test_the_corpus_formats_without_text_for_tika(corpus: Path, tika: TikaConverter, fmt: str) -> None:
    """Speech (textract transcribed it) and PostScript (Tika has no text parser for it): converted
    without error and without their expected text; the crawl indexes them by name and metadata."""
    source = corpus / fmt / f"raw_text.{fmt}"
    converted = tika.convert(source.read_bytes(), None, source.name)
    assert converted.kind.startswith(("audio/", "application/postscript")), converted.kind
    assert share_found((corpus / fmt / "raw_text.txt").read_text(encoding="utf-8"), converted.text) < 0.5


def test_metadata_of_real_documents(corpus: Path, tika: TikaConverter) -> None:
    xlsx = tika.convert((corpus / "xlsx" / "raw_text.xlsx").read_bytes())
    assert xlsx.metadata["author"] == "John Walkenbach"
    assert xlsx.metadata["subject"] == "Excel 2007 Bible"
    assert xlsx.properties["dc:creator"] == "John Walkenbach"
    pdf = tika.convert((corpus / "pdf" / "raw_text.pdf").read_bytes(), "application/pdf", "raw_text.pdf")
    assert (pdf.kind, pdf.metadata["title"], pdf.metadata["pages"]) == ("pdf", "i_heart_word", "2")


def test_an_attachment_is_converted_with_its_message(tika: TikaConverter) -> None:
    message = EmailMessage()
    message["Subject"] = "Quarterly figures"
    message["From"] = "ann@example.com"
    message.set_content("See the attached note.")
    message.add_attachment(b"the attachment says zanzibar", maintype="text", subtype="plain", filename="note.txt")
    converted = tika.convert(message.as_bytes(), "message/rfc822", "figures.eml")
    assert "See the attached note." in converted.text
    assert "the attachment says zanzibar" in converted.text
    assert converted.metadata["title"] == "Quarterly figures"


def test_the_write_limit_keeps_the_start(tika_url: str) -> None:
    text = " ".join(f"word{n}" for n in range(20000)).encode()
    converted = TikaConverter(tika_url, write_limit=1000).convert(text, "text/plain", "long.txt")
    assert converted.text.startswith("word0 word1")
    assert 900 <= len(converted.text) <= 1000


def zip_of(members: dict[str, bytes | int]) -> bytes:
    """A zip of these members: bytes as they are, or an int: that many MB of NUL bytes (a bomb of
    100 MB is 100 KB)."""
    import io
    import zipfile

    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                if isinstance(content, bytes):
                    member.write(content)
                    continue
                for _ in range(content):
                    member.write(bytes(2**20))
    return data.getvalue()


def test_a_zip_bomb_of_nul_bytes_is_not_text(tika: TikaConverter) -> None:
    """Issue 53: Tika read a zip of 100 MB of NUL bytes named .txt as 5 million U+FFFD, indexed as
    its text. Garbled text (mostly U+FFFD) is not text: the status the Python converters give it
    ('not_text', 921); a real member of the same archive keeps its text."""
    with pytest.raises(ConversionError) as raised:
        tika.convert(zip_of({"nul.txt": 100}), None, "bomb.zip")
    assert raised.value.status == "not_text" and "U+FFFD" in str(raised.value)
    mixed = tika.convert(zip_of({"readme.txt": b"The archive's real readme, in words.", "nul.txt": 20}), None, "mixed.zip")
    assert "real readme" in mixed.text and "\ufffd" not in mixed.text


def test_garbled_parts_of_an_rmeta_answer() -> None:
    garbage = {"resourceName": "nul.txt", CONTENT: "\ufffd" * 1000 + "\n" * 500 + "ok"}
    with pytest.raises(ConversionError) as raised:
        converted_from_rmeta([{CONTENT: "\n\n"}, garbage])
    assert (raised.value.status, str(raised.value)) == (
        "not_text",
        "1000 of its 1502 characters are U+FFFD: binary data read as text",
    )
    kept = converted_from_rmeta([{CONTENT: "A few \ufffd damaged \ufffd words stay text."}, garbage])
    assert kept.text == "A few \ufffd damaged \ufffd words stay text."


def test_a_body_over_the_limit_is_refused_before_sending() -> None:
    converter = TikaConverter(f"http://127.0.0.1:{free_port()}/", max_bytes=10)
    with pytest.raises(ConversionError) as raised:
        converter.convert(b"x" * 11)
    assert raised.value.status == "too_large"


def test_corrupt_and_unreadable_documents(tika: TikaConverter) -> None:
    with pytest.raises(ConversionError) as raised:
        tika.convert(b"%PDF-1.4\n" + bytes(range(256)) * 8, "application/pdf", "broken.pdf")
    assert raised.value.status == "corrupt"


# --- a failing server ---------------------------------------------------------------------------


class _Fake(BaseHTTPRequestHandler):
    """A Tika that answers ``status`` after ``delay`` seconds (or drops the first connection),
    answers /version when ``version``, and counts requests, and requests in flight. With
    ``reach``, a document is answered only once ``reach`` have been in flight together (or 10 s
    have passed): a test of a concurrency limit sees it reached whenever the client allows it,
    however loaded the machine (answers of a fixed slowness overlap by chance only: issue 99)."""

    status = 200
    delay = 0.0
    reach = 0
    version = False
    drop_first = False
    answer = b'[{"X-TIKA:content": "fake text", "Content-Type": "text/plain"}]'
    lock = threading.Lock()
    changed = threading.Condition(lock)
    in_flight = 0
    most = 0
    puts = 0
    headers_seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not type(self).version:
            self.send_error(501)
            return
        self.send_response(200)
        self.send_header("Content-Length", "16")
        self.end_headers()
        self.wfile.write(b"Apache Tika fake")

    def do_PUT(self) -> None:  # noqa: N802 - http.server's name
        cls = type(self)
        with cls.changed:
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
            cls.puts += 1
            cls.headers_seen.append(dict(self.headers))
            drop = cls.drop_first and cls.puts == 1
            cls.changed.notify_all()
        done = False

        def finished() -> None:
            # Counted out before the answer goes: the client may send its next document as soon as
            # it has read this answer, before this thread runs again.
            nonlocal done
            if not done:
                done = True
                with cls.lock:
                    cls.in_flight -= 1

        try:
            self.rfile.read(int(self.headers["Content-Length"]))
            if drop:  # the parser died under it
                finished()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            with cls.changed:
                cls.changed.wait_for(lambda: cls.most >= cls.reach, timeout=10)
            time.sleep(cls.delay)
            body = cls.answer
            finished()
            self.send_response(cls.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the time-limit test)
        finally:
            finished()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_tika():
    def start(status: int = 200, delay: float = 0.0, **options: object) -> str:
        lock = threading.Lock()
        handler = type(
            "Handler",
            (_Fake,),
            {"status": status, "delay": delay, "lock": lock, "changed": threading.Condition(lock), "headers_seen": [], **options},
        )
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        start.handler = handler  # type: ignore[attr-defined]
        return f"http://127.0.0.1:{server.server_address[1]}/"

    servers: list[ThreadingHTTPServer] = []
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_an_unreachable_server_is_unavailable_not_a_bad_document() -> None:
    with pytest.raises(ConverterUnavailable, match="unreachable"):
        TikaConverter(f"http://127.0.0.1:{free_port()}/").convert(b"%PDF-1.4 x", "application/pdf")


@pytest.mark.parametrize("status", [500, 503])
def test_a_failing_server_that_does_not_come_back_is_unavailable(fake_tika, status: int) -> None:
    with pytest.raises(ConverterUnavailable, match=f"HTTP {status}, and not back in 0.3s"):
        TikaConverter(fake_tika(status=status), recovery_wait=0.3).convert(b"data")


def test_a_document_that_fails_tika_twice_is_the_documents_fault(fake_tika) -> None:
    """Tika answers (its parser restarted) but fails on the document again: 921, not an outage."""
    url = fake_tika(status=500, version=True)
    with pytest.raises(ConversionError, match=r"failed on it twice \(HTTP 500, then HTTP 500\)") as raised:
        TikaConverter(url, recovery_wait=5).convert(b"data")
    assert raised.value.status == "crashed" and fake_tika.handler.puts == 2  # a counted, transient failure


def test_documents_failing_twice_in_a_row_are_taken_for_an_outage(fake_tika) -> None:
    converter = TikaConverter(fake_tika(status=500, version=True), recovery_wait=5)
    for _ in range(4):
        with pytest.raises(ConversionError):
            converter.convert(b"data")
    with pytest.raises(ConverterUnavailable, match="failed on 5 documents in a row"):
        converter.convert(b"data")


@pytest.mark.parametrize(("code", "status"), [(413, "too_large"), (415, "unsupported"), (400, "corrupt"), (422, "corrupt")])
def test_a_refused_request_is_the_documents(fake_tika, code: int, status: str) -> None:
    with pytest.raises(ConversionError) as raised:
        TikaConverter(fake_tika(status=code)).convert(b"data")
    assert raised.value.status == status


def test_the_sites_content_type_is_not_sent(fake_tika) -> None:
    """Tika would take it over its own detection; a hostile one (a CR inside) made requests raise."""
    url = fake_tika()
    TikaConverter(url).convert(b"%PDF-1.4", "application/x\ry", 'evil"\r\nX-Injected: 1.pdf')
    headers = fake_tika.handler.headers_seen[-1]
    assert headers["Content-Type"] == "application/octet-stream" and "X-Injected" not in headers
    assert headers["Content-Disposition"] == 'attachment; filename="evil___X-Injected: 1.pdf"'


def test_an_immense_answer_is_refused_while_it_is_read(fake_tika) -> None:
    converter = TikaConverter(fake_tika(answer=b'[{"X-TIKA:content": "' + b"x" * 300_000 + b'"}]'))
    converter.max_answer_bytes = 100_000
    with pytest.raises(ConversionError) as raised:
        converter.convert(b"data")
    assert raised.value.status == "too_large"


def test_a_connection_dropped_once_is_tried_again(fake_tika) -> None:
    url = fake_tika(drop_first=True, version=True)
    assert TikaConverter(url, recovery_wait=5).convert(b"data").text == "fake text"
    assert fake_tika.handler.puts == 2


def test_an_empty_answer_is_the_servers_fault(fake_tika) -> None:
    with pytest.raises(ConverterUnavailable, match="empty list"):
        TikaConverter(fake_tika(answer=b"[]"), recovery_wait=0.3).convert(b"data")


def test_no_password_of_the_tikas_url_in_a_reason() -> None:
    with pytest.raises(ConverterUnavailable) as raised:
        TikaConverter(f"http://user:s3cret@127.0.0.1:{free_port()}/").convert(b"data")
    assert "s3cret" not in str(raised.value) and "user" not in str(raised.value)


def test_a_document_slower_than_the_time_limit_times_out(fake_tika) -> None:
    with pytest.raises(ConversionError) as raised:
        TikaConverter(fake_tika(delay=2), timeout=0.5).convert(b"data")
    assert raised.value.status == "timeout"


def test_at_most_concurrency_documents_in_tika_at_once(fake_tika) -> None:
    url = fake_tika(reach=2)
    converter = TikaConverter(url, concurrency=2)
    threads = [threading.Thread(target=converter.convert, args=(b"data",)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake_tika.handler.most == 2
