"""One extractor per kind: bytes -> (text, raw metadata dict).

Errors propagate; convert() maps them to ConversionError statuses.
"""

from __future__ import annotations

import io
import logging
import os
import re
import warnings
import zipfile
from pathlib import Path

from lxml import etree

from searchcrawl.content.convert.core import SUBPROCESS_TIMEOUT, ConversionError, run_tool

# Parsers for untrusted XML: no entity expansion, no network, no huge trees.
_XML = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=False)


def _props(cp) -> dict:
    """OOXML core properties (python-docx / python-pptx / openpyxl) -> raw metadata."""

    def get(*names):
        return next((getattr(cp, n) for n in names if getattr(cp, n, None)), None)

    return {
        "title": get("title"),
        "author": get("author", "creator"),
        "subject": get("subject"),
        "keywords": get("keywords"),
        "created": get("created"),
        "modified": get("modified"),
        "language": get("language"),
    }


# --- PDF -------------------------------------------------------------------------------------


def pdf(body: bytes):
    """pypdf: pure Python, handles encryption (empty user password) and metadata in one place."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConversionError("encrypted", "PDF needs a password")
        pages = list(reader.pages)
    except FileNotDecryptedError:
        raise ConversionError("encrypted", "PDF needs a password") from None
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConversionError("corrupt", f"cannot read PDF: {exc}") from None
    if not pages:
        raise ConversionError("corrupt", "PDF has no pages")
    text = "\n\n".join(page.extract_text() or "" for page in pages)
    if not re.search(r"\w", text):
        text = ""  # no text layer (a scanned image?): OCR needs Tika; its metadata is still read
    meta: dict = {}
    info = reader.metadata
    if info:
        meta = {
            "title": info.title,
            "author": info.author,
            "subject": info.subject,
            "keywords": info.get("/Keywords"),
        }
        for key, attr in (("created", "creation_date"), ("modified", "modification_date")):
            try:
                meta[key] = getattr(info, attr)
            except Exception:  # unparsable date strings
                pass
    return text, meta


# --- OOXML -----------------------------------------------------------------------------------

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def _docx_text(element, out: list[str]) -> None:
    """Walk the body in order: runs, tabs, breaks, paragraph and cell ends (skip VML fallbacks
    that duplicate text boxes)."""
    tag = element.tag
    if tag == _MC_FALLBACK:
        return
    if tag == _W + "t" and element.text:
        out.append(element.text)
    elif tag == _W + "tab":
        out.append("\t")
    elif tag in (_W + "br", _W + "cr"):
        out.append("\n")
    for child in element:
        _docx_text(child, out)
    if tag == _W + "p":
        out.append("\n")
    elif tag == _W + "tc":  # cells end with a tab, rows with a newline
        while out and out[-1] == "\n":
            out.pop()
        out.append("\t")
    elif tag == _W + "tr" and out and out[-1] == "\t":
        out[-1] = "\n"


_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _docx_header_footer_parts(document, kind: str) -> list:
    """The document's header or footer parts (``kind``), in the order its sections name them,
    each once (a section linked to the previous one names none; first-page and even-page ones
    are parts of their own)."""
    parts: list = []
    for section in document.element.body.iter(_W + "sectPr"):
        for reference in section.iter(_W + kind + "Reference"):
            part = document.part.related_parts.get(reference.get(_R_ID))
            if part is not None and part not in parts:
                parts.append(part)
    return parts


def docx(body: bytes):
    """The headers' text, the body's, then the footers' (as Tika and other extractors give them:
    a letterhead or a document number is often only there)."""
    import docx as python_docx

    document = python_docx.Document(io.BytesIO(body))
    out: list[str] = []
    for part in _docx_header_footer_parts(document, "header"):
        _docx_text(part.element, out)
    _docx_text(document.element.body, out)
    for part in _docx_header_footer_parts(document, "footer"):
        _docx_text(part.element, out)
    return "".join(out), _props(document.core_properties)


def xlsx(body: bytes):
    """openpyxl in read-only mode streams rows instead of building the whole workbook."""
    import openpyxl

    with warnings.catch_warnings():  # "Unknown extension is not supported" and the like
        warnings.simplefilter("ignore")
        wb = openpyxl.load_workbook(io.BytesIO(body), read_only=True, data_only=True)
        try:
            lines = []
            for ws in wb.worksheets:
                if len(wb.worksheets) > 1:
                    lines.append(ws.title)
                for row in ws.iter_rows(values_only=True):
                    cells = ["" if v is None else str(v) for v in row]
                    if any(cells):
                        lines.append("\t".join(cells).rstrip("\t"))
                lines.append("")
            return "\n".join(lines), _props(wb.properties)
        finally:
            wb.close()


def _pptx_shape_text(shape, out: list[str]) -> None:
    if shape.shape_type == 6:  # MSO_SHAPE_TYPE.GROUP
        for sub in shape.shapes:
            _pptx_shape_text(sub, out)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        out.append(shape.text_frame.text)
    elif getattr(shape, "has_table", False) and shape.has_table:
        for row in shape.table.rows:
            out.append("\t".join(cell.text for cell in row.cells))


def pptx(body: bytes):
    import pptx as python_pptx

    prs = python_pptx.Presentation(io.BytesIO(body))
    out: list[str] = []
    for slide in prs.slides:
        for shape in slide.shapes:
            _pptx_shape_text(shape, out)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            out.append(slide.notes_slide.notes_text_frame.text)
        out.append("")
    return "\n".join(out), _props(prs.core_properties)


# --- OpenDocument ----------------------------------------------------------------------------
# ODF is plain XML in a zip; lxml (already a dependency) reads it faster than odfpy's DOM.

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
_SKIP = {_TEXT + "tracked-changes", _OFFICE + "annotation", _TEXT + "note-citation"}


def _odf_text(element, out: list[str]) -> None:
    tag = element.tag
    if tag in _SKIP:
        pass
    elif tag == _TEXT + "s":
        out.append(" " * int(element.get(_TEXT + "c", "1") or 1))
    elif tag == _TEXT + "tab":
        out.append("\t")
    elif tag == _TEXT + "line-break":
        out.append("\n")
    else:
        if element.text:
            out.append(element.text)
        for child in element:
            _odf_text(child, out)
        if tag in (_TEXT + "p", _TEXT + "h"):
            out.append("\n")
        elif tag == _TABLE + "table-cell":  # cells end with a tab, rows with a newline
            while out and out[-1] == "\n":
                out.pop()
            out.append("\t")
        elif tag == _TABLE + "table-row":
            if out and out[-1] == "\t":
                out[-1] = "\n"
            else:
                out.append("\n")
    if element.tail and element.getparent() is not None:
        out.append(element.tail)


def odf(body: bytes):
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        names = set(zf.namelist())
        if "META-INF/manifest.xml" in names:
            manifest = etree.fromstring(zf.read("META-INF/manifest.xml"), _XML)
            if manifest.find(f".//{_MANIFEST}encryption-data") is not None:
                raise ConversionError("encrypted", "password-protected OpenDocument file")
        content = etree.fromstring(zf.read("content.xml"), _XML)
        meta_xml = etree.fromstring(zf.read("meta.xml"), _XML) if "meta.xml" in names else None
    body_el = content.find(_OFFICE + "body")
    out: list[str] = []
    for child in body_el if body_el is not None else []:
        if child.text:
            out.append(child.text)
        for sub in child:
            _odf_text(sub, out)
    text = "".join(out)
    text = re.sub(r"\t+\n", "\n", text)  # trailing empty cells
    meta: dict = {}
    if meta_xml is not None:

        def first(*tags):
            for t in tags:
                el = meta_xml.find(f".//{t}")
                if el is not None and el.text:
                    return el.text
            return None

        meta = {
            "title": first(_DC + "title"),
            "author": first(_DC + "creator", _META + "initial-creator"),
            "subject": first(_DC + "subject"),
            "keywords": [el.text for el in meta_xml.iter(_META + "keyword") if el.text],
            "created": first(_META + "creation-date"),
            "modified": first(_DC + "date"),
            "language": first(_DC + "language"),
        }
    return text, meta


# --- RTF ---------------------------------------------------------------------------------------

_RTF_INFO = re.compile(rb"\{\\(title|author|subject|keywords)\s+((?:[^{}\\]|\\[^{}])*)\}")
_RTF_DATE = re.compile(rb"\{\\(creatim|revtim)((?:\\[a-z]+\d+)+)\s*\}")


def rtf(body: bytes):
    from striprtf.striprtf import rtf_to_text

    text = rtf_to_text(body.decode("latin-1"), errors="replace")
    meta: dict = {}
    for key, value in _RTF_INFO.findall(body[:65536]):
        meta[key.decode()] = rtf_to_text("{\\rtf1 " + value.decode("latin-1") + "}", errors="replace")
    for key, value in _RTF_DATE.findall(body[:65536]):
        parts = dict(re.findall(r"\\([a-z]+)(\d+)", value.decode()))
        try:
            from datetime import datetime

            when = datetime(
                int(parts["yr"]),
                int(parts["mo"]),
                int(parts["dy"]),
                int(parts.get("hr", 0)),
                int(parts.get("min", 0)),
                int(parts.get("sec", 0)),
            )
        except (KeyError, ValueError):
            continue
        meta["created" if key == b"creatim" else "modified"] = when
    return text, meta


# --- Legacy Office (OLE2) ----------------------------------------------------------------------


def _ole_meta(body: bytes) -> dict:
    """Title, author, ... from the OLE SummaryInformation stream (doc, xls, ppt)."""
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(body)) as ole:  # bytes under 1536 would be a file name
            m = ole.get_metadata()
    except Exception:
        return {}
    codepage = (m.codepage or 1252) & 0xFFFF  # olefile reads it as a signed 16-bit value
    codec = {1200: "utf-16-le", 65001: "utf-8"}.get(codepage, f"cp{codepage}")

    def dec(value):
        if isinstance(value, bytes):
            try:
                return value.decode(codec, "replace").strip("\x00")
            except LookupError:
                return value.decode("cp1252", "replace").strip("\x00")
        return value

    return {
        "title": dec(m.title),
        "author": dec(m.author),
        "subject": dec(m.subject),
        "keywords": dec(m.keywords),
        "created": m.create_time,
        "modified": m.last_saved_time,
    }


def doc(body: bytes):
    """antiword (Debian package antiword); catdoc as a fallback for files antiword refuses."""
    code, out, err = run_tool(["antiword", "-m", "UTF-8.txt", "-w", "0"], body, ".doc")
    if code != 0 or not out.strip():
        if "encrypt" in err.lower():
            raise ConversionError("encrypted", "password-protected Word document")
        code2, out2, err2 = run_tool(["catdoc", "-d", "utf-8", "-w"], body, ".doc")
        if code2 != 0:
            raise ConversionError("corrupt", f"antiword: {err.strip()[:200]}; catdoc: {err2.strip()[:200]}")
        out = out2
    return out, _ole_meta(body)


def ppt(body: bytes):
    """catppt (Debian package catdoc) when it can; it reads only some PowerPoint 97 files, so the
    others are turned into PPTX by LibreOffice (headless) and read like one."""
    code, out, err = run_tool(["catppt", "-d", "utf-8"], body, ".ppt")
    if code == 0 and out.strip():
        return out, _ole_meta(body)
    text, _meta = pptx(soffice_convert(body, ".ppt", "pptx"))
    return text, _ole_meta(body)


def soffice_convert(body: bytes, suffix: str, target: str) -> bytes:
    """Convert a legacy office file with LibreOffice, in a profile of its own (so that workers
    converting at once do not share one)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="searchcrawl-soffice-") as work:
        source = Path(work) / f"document{suffix}"
        source.write_bytes(body)
        command = [
            "soffice",
            "--headless",
            "--norestore",
            f"-env:UserInstallation=file://{work}/profile",
            "--convert-to",
            target,
            "--outdir",
            f"{work}/out",
            str(source),
        ]
        try:
            subprocess.run(
                command, check=False, capture_output=True, timeout=SUBPROCESS_TIMEOUT, env={**os.environ, "LC_ALL": "C.UTF-8"}
            )
        except FileNotFoundError:
            raise ConversionError("unsupported", "LibreOffice (soffice) is not installed") from None
        except subprocess.TimeoutExpired:
            raise ConversionError("timeout", f"LibreOffice took over {SUBPROCESS_TIMEOUT}s") from None
        converted = Path(work) / "out" / f"document.{target}"
        if not converted.exists():
            raise ConversionError("corrupt", f"LibreOffice could not read this {suffix} file")
        return converted.read_bytes()


def xls(body: bytes):
    import xlrd

    try:
        book = xlrd.open_workbook(file_contents=body, on_demand=True)
    except xlrd.XLRDError as exc:
        if "encrypt" in str(exc).lower():
            raise ConversionError("encrypted", "password-protected Excel workbook") from None
        raise
    lines = []
    for sheet in book.sheets():
        if book.nsheets > 1:
            lines.append(sheet.name)
        for r in range(sheet.nrows):
            cells = [str(v) if v not in ("", None) else "" for v in sheet.row_values(r)]
            if any(cells):
                lines.append("\t".join(cells).rstrip("\t"))
        lines.append("")
    book.release_resources()
    return "\n".join(lines), _ole_meta(body)


# --- Plain text --------------------------------------------------------------------------------


def txt(body: bytes):
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, "replace"), {}
    try:
        return body.decode("utf-8"), {}
    except UnicodeDecodeError:
        return body.decode("cp1252", "replace"), {}


EXTRACTORS = {
    "pdf": pdf,
    "docx": docx,
    "xlsx": xlsx,
    "pptx": pptx,
    "odt": odf,
    "ods": odf,
    "odp": odf,
    "rtf": rtf,
    "doc": doc,
    "xls": xls,
    "ppt": ppt,
    "txt": txt,
}
