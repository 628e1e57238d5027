"""The benchmark's synthetic site: N HTML pages of 20-60 KB with 20-50 links each, a few PDFs,
served from disk by nginx (Last-Modified and ETag on every file, If-Modified-Since and
If-None-Match answered with 304), so that the server is never what limits a crawl.

Pages are made from a fixed random seed: the same N gives the same site. Page i lives at
/p/<i // 1000>/<i>.html and links to pages 20i+1 ... 20i+20 (so every page is reachable, at most
five links deep from page 0 for N = 100,000), then to random pages up to its link count.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from searchcrawl.dev.solr_runner import free_port

WORDS = (
    "search index crawler document intranet policy report budget project meeting customer product "
    "service network server storage backup release support contract invoice training safety quality "
    "engineering design review schedule planning analysis research finance marketing sales legal "
    "security access account manual guide handbook process standard template archive library"
).split()
BRANCHING = 20
PDF_EVERY = 500  # one PDF per this many pages
CHANGED_SHARE = 0.05


def paragraphs(rng: random.Random, count: int = 300) -> list[str]:
    """A pool of ~1 KB paragraphs pages are assembled from (fast to build at N = 100,000)."""
    pool = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(140, 190))]
        pool.append(" ".join(words).capitalize() + ".")
    return pool


def page_path(number: int) -> str:
    return f"p/{number // 1000}/{number}.html"


# Real pages of this size are mostly markup: in the shared corpora, the Sphinx site's and the Nutch
# site's pages of 20-60 KB carry 12.3% and 13.6% visible text (lxml, scripts and styles dropped)
# and 20.4 and 18.4 elements per KB. Pages here are alike (12.6% text, 20.2 elements per KB): a
# head with inline CSS and JavaScript, a sidebar of links, and sections whose prose alternates with
# syntax-highlighted code (a span per token) and member tables, as Sphinx and Javadoc write them.
# The crawler's parsing and extraction and Solr's indexing all depend on this.
TEXT_SHARE = 0.11  # prose and code text; sidebar and headings bring the page to about 13%
HEAD = (
    '<link rel="stylesheet" href="/_static/basic.css" type="text/css"><link rel="stylesheet" '
    'href="/_static/pygments.css" type="text/css"><link rel="index" title="Index" href="/genindex.html">'
    "<style>"
    + "".join(
        f".rst-content .section-{n} > .highlight pre, div.body .toctree-l{n % 4} a.reference.internal"
        f"{{margin:0 0 {n % 7}px {n % 5}em;padding:.{n % 9}em 1em;border-left:{n % 3}px solid #e1e4e5;"
        f"font-family:SFMono-Regular,Menlo,Monaco,Consolas,monospace;color:#{n * 2654435761 % 0xFFFFFF:06x}}}"
        for n in range(24)
    )
    + "</style>"
    '<script>var DOCUMENTATION_OPTIONS={URL_ROOT:"../",VERSION:"2026.11",LANGUAGE:"en",COLLAPSE_INDEX:false,'
    'BUILDER:"html",FILE_SUFFIX:".html",LINK_SUFFIX:".html",HAS_SOURCE:true,SOURCELINK_SUFFIX:".txt",'
    'NAVIGATION_WITH_KEYS:false};document.addEventListener("DOMContentLoaded",function(){var t=document.'
    'querySelectorAll("div.highlight pre");for(var i=0;i<t.length;i++){t[i].setAttribute("tabindex","0")}});'
    "</script>"
)
TOKEN_CLASSES = ("n", "o", "p", "k", "nb", "mi", "s1", "nf", "kn", "nn", "w")


def code_block(rng: random.Random, lines: int) -> tuple[str, int]:
    """A Pygments-style highlighted block (every token in its own span) and its length in text."""
    rows, text = [], 0
    for _ in range(lines):
        words = [rng.choice(WORDS)[: rng.randint(1, 6)] for _ in range(rng.randint(3, 8))]
        text += 4 + sum(len(word) + 1 for word in words)
        rows.append(
            '<span class="gp">&gt;&gt;&gt; </span>'
            + '<span class="o">.</span>'.join(f'<span class="{rng.choice(TOKEN_CLASSES)}">{word}</span>' for word in words)
        )
    return (
        '<div class="highlight-python notranslate"><div class="highlight"><pre><span></span>'
        + "\n".join(rows)
        + "</pre></div></div>"
    ), text


def member_table(rng: random.Random, rows: int) -> tuple[str, int]:
    """A Javadoc-style member summary: long ids and titles, few elements, little text."""
    cells, text = [], 0
    for _ in range(rows):
        name = "".join(word.title() for word in rng.sample(WORDS, 2))
        package = ".".join(rng.sample(WORDS, 4))
        text += 12 + 2 * len(name)
        cells.append(
            f'<tr class="altColor" id="i{rng.randrange(10**6)}"><td class="colFirst"><code>static {name}</code>'
            f'</td><th class="colSecond" scope="row"><code><span class="memberNameLink" title="method in '
            f'class org.example.{package}.{name}" id="{package}.{name}-java.lang.String-int-">{name}</span>'
            f"</code></th></tr>"
        )
    return '<table class="memberSummary" summary="Method Summary table">' + "".join(cells) + "</table>", text


def page_html(number: int, total: int, pool: list[str], rng: random.Random, revision: int = 0) -> str:
    links = [child for child in range(BRANCHING * number + 1, BRANCHING * number + BRANCHING + 1) if child < total]
    wanted = rng.randint(20, 50)
    while len(links) < min(wanted, total - 1):
        other = rng.randrange(total)
        if other != number:
            links.append(other)
    size = rng.randint(20_000, 60_000)
    title = f"{WORDS[number % len(WORDS)].title()} page {number}"
    anchors = "".join(
        f'<li class="toctree-l{1 + link % 3}"><a class="reference internal" href="/{page_path(link)}">'
        f"{WORDS[link % len(WORDS)]} {link}</a></li>"
        for link in links
    )
    if number % PDF_EVERY == 0:
        anchors += (
            f'<li class="toctree-l1"><a class="reference download internal" download="" '
            f'href="/pdf/{number // PDF_EVERY}.pdf">report {number // PDF_EVERY}</a></li>'
        )
    body = [f"<p>Page {number}, revision {revision}: {' '.join(rng.choice(WORDS) for _ in range(30))}.</p>"]
    text, length, section = len(body[0]), len(body[0]) + len(HEAD) + len(anchors) + 1200, 0
    while length < size:
        if text < TEXT_SHARE * length:  # prose until the page has its share of text, then code
            paragraph = rng.choice(pool)[: rng.randint(200, 1000)]
            section += 1
            block = (
                f'<div class="section" id="s{section}"><h2>{paragraph[:24]}<a class="headerlink" '
                f'href="#s{section}" title="Permalink to this headline">¶</a></h2><p>{paragraph}</p></div>'
            )
            text += len(paragraph) + 25
        else:
            block, code_text = (code_block if rng.random() < 0.5 else member_table)(rng, rng.randint(4, 12))
            text += code_text
        body.append(block)
        length += len(block)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f'<meta name="description" content="Synthetic page {number} for the searchcrawl benchmark">'
        f'<meta name="keywords" content="benchmark,{WORDS[number % len(WORDS)]}">{HEAD}</head>'
        f'<body><div class="document"><div class="sphinxsidebar" role="navigation"><h3>Contents</h3>'
        f'<ul class="current">{anchors}</ul><div id="searchbox" role="search"><form class="search" '
        f'action="/search.html" method="get"><input type="text" name="q" aria-labelledby="searchlabel">'
        f'<input type="submit" value="Go"></form></div></div><div class="body" role="main">'
        f'<h1>{title}<a class="headerlink" href="#top" title="Permalink to this headline">¶</a></h1>'
        f'{"".join(body)}</div></div><div class="footer">&#169; 2026 searchcrawl benchmark. '
        f'Created using <a href="https://www.sphinx-doc.org/">Sphinx</a>.</div></body></html>'
    )


def pdf_bytes(text: str) -> bytes:
    """A small valid PDF with one page of text (built by hand: no writer library needed)."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


@dataclass
class SyntheticSite:
    root: Path
    pages: int

    @property
    def documents(self) -> int:
        """Pages plus PDFs: what a crawl fetches and indexes."""
        return self.pages + len(range(0, self.pages, PDF_EVERY))

    def build(self) -> SyntheticSite:
        rng = random.Random(self.pages)
        pool = paragraphs(rng)
        for number in range(self.pages):
            path = self.root / page_path(number)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page_html(number, self.pages, pool, rng), encoding="utf-8")
        (self.root / "pdf").mkdir(exist_ok=True)
        for number in range(0, self.pages, PDF_EVERY):
            report = number // PDF_EVERY
            (self.root / "pdf" / f"{report}.pdf").write_bytes(pdf_bytes(f"Quarterly report {report} of the benchmark"))
        (self.root / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="ascii")
        return self

    def change(self, share: float = CHANGED_SHARE) -> int:
        """Rewrite every (1/share)-th page with new text (new Last-Modified and ETag); returns how many."""
        rng = random.Random(-self.pages)
        pool = paragraphs(rng, 50)
        step = max(1, round(1 / share))
        changed = 0
        for number in range(1, self.pages, step):
            path = self.root / page_path(number)
            path.write_text(page_html(number, self.pages, pool, rng, revision=1), encoding="utf-8")
            changed += 1
        return changed


NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
    types {{ text/html html; application/pdf pdf; text/plain txt; }}
    default_type application/octet-stream;
    log_format bench '$msec $status $body_bytes_sent $request_uri';
    access_log {work}/access.log bench;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path {work}/client;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
    }}
}}
"""


@dataclass
class Nginx:
    process: subprocess.Popen[bytes]
    port: int
    access_log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def _lines(self) -> list[str]:
        """The access log's lines: ``<epoch> <status> <bytes> <path>``."""
        return self.access_log.read_text(encoding="utf-8", errors="replace").splitlines()

    def arrivals(self, since: float = 0.0) -> list[tuple[float, int]]:
        """(time, status) of each request logged after ``since`` (epoch seconds)."""
        entries = []
        for line in self._lines():
            parts = line.split(" ", 2)
            if len(parts) >= 2 and float(parts[0]) >= since:
                entries.append((float(parts[0]), int(parts[1])))
        return entries

    def paths(self, since: float = 0.0) -> set[str]:
        """The distinct paths requested after ``since`` (a retried request counts once)."""
        found = set()
        for line in self._lines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and float(parts[0]) >= since:
                found.add(parts[3])
        return found

    def capacity(self, path: str, seconds: int = 3) -> float | None:
        """Requests/s the server answers for one page under wrk (2 threads, 32 connections)."""
        wrk = shutil.which("wrk")
        if wrk is None:
            return None
        output = subprocess.run(
            [wrk, "-t2", "-c32", f"-d{seconds}s", self.url + path], capture_output=True, text=True, check=True
        ).stdout
        found = re.search(r"Requests/sec:\s+([\d.]+)", output)
        return float(found.group(1)) if found else None


@contextmanager
def nginx(root: Path, work: Path) -> Iterator[Nginx]:
    """nginx (Debian's nginx-light) serving ``root`` on a free port of 127.0.0.1."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        raise SystemExit("nginx is not installed (apt-get install nginx-light); deploy/bootstrap.sh installs it")
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""  # files under root-only temp dirs
    (work / "nginx.conf").write_text(NGINX_CONF.format(work=work, root=root, port=port, user=user), encoding="utf-8")
    process = subprocess.Popen(
        [binary, "-c", str(work / "nginx.conf"), "-p", str(work), "-e", str(work / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):  # noqa: S310 - loopback
                    break
            except urllib.error.HTTPError:  # it answers (403: no index page)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"nginx did not start: {(work / 'error.log').read_text(errors='replace')[-2000:]}") from None
                time.sleep(0.1)
        yield Nginx(process, port, work / "access.log")
    finally:
        process.terminate()
        process.wait(timeout=10)
