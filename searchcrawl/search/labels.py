"""What the search page calls a facet value: a document type by name, a language by name.

Solr holds what the crawl found (``application/vnd.openxmlformats-officedocument...``, ``de``);
a searcher reads "Word", "German". The tables are here and nowhere else: a type or language
they do not name is shown as indexed (its MIME type, its code), never hidden. Two types that a
searcher would both call "Word" get labels of their own ("Word", "Word 97-2003"), since each is a
value of the type facet that can be chosen on its own.
"""

from __future__ import annotations

from searchcrawl.system.translations import N_

# MIME type (as indexed: lower case, no parameters) -> label
TYPE_LABELS = {
    "text/html": N_("Web page"),
    "application/xhtml+xml": N_("Web page (XHTML)"),
    "application/pdf": N_("PDF"),
    "application/x-pdf": N_("PDF (x-pdf)"),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": N_("Word"),
    "application/msword": N_("Word 97-2003"),
    "application/vnd.ms-word.document.macroenabled.12": N_("Word with macros"),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": N_("Excel"),
    "application/vnd.ms-excel": N_("Excel 97-2003"),
    "application/vnd.ms-excel.sheet.macroenabled.12": N_("Excel with macros"),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": N_("PowerPoint"),
    "application/vnd.ms-powerpoint": N_("PowerPoint 97-2003"),
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": N_("PowerPoint with macros"),
    "application/vnd.oasis.opendocument.text": N_("OpenDocument text"),
    "application/vnd.oasis.opendocument.spreadsheet": N_("OpenDocument spreadsheet"),
    "application/vnd.oasis.opendocument.presentation": N_("OpenDocument presentation"),
    "application/rtf": N_("Rich Text"),
    "text/rtf": N_("Rich Text (text/rtf)"),
    "text/plain": N_("Text"),
    "text/csv": N_("CSV"),
    "text/markdown": N_("Markdown"),
    "application/xml": N_("XML"),
    "text/xml": N_("XML (text/xml)"),
    "application/json": N_("JSON"),
    "application/ld+json": N_("JSON-LD"),
    "message/rfc822": N_("Mail"),
    "application/vnd.ms-outlook": N_("Outlook message"),
    "application/epub+zip": N_("EPUB"),
    "application/zip": N_("ZIP archive"),
    "image/jpeg": N_("JPEG image"),
    "image/png": N_("PNG image"),
    "image/gif": N_("GIF image"),
    "image/tiff": N_("TIFF image"),
    "image/webp": N_("WebP image"),
    "image/svg+xml": N_("SVG image"),
    "image/bmp": N_("BMP image"),
}

# ISO 639 code -> English name: every language py3langid 0.4 detects, and other common codes of
# <html lang> and Content-Language
LANGUAGE_NAMES = {
    "ace": "Acehnese", "af": "Afrikaans", "am": "Amharic", "an": "Aragonese", "ar": "Arabic", "ary": "Moroccan Arabic",
    "arz": "Egyptian Arabic", "as": "Assamese", "az": "Azerbaijani", "ba": "Bashkir", "bcl": "Central Bikol",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "br": "Breton", "bs": "Bosnian", "ca": "Catalan",
    "crh": "Crimean Tatar", "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "dz": "Dzongkha",
    "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian", "eu": "Basque",
    "ext": "Extremaduran", "fa": "Persian", "fi": "Finnish", "fo": "Faroese", "fr": "French",
    "fuv": "Nigerian Fulfulde", "fy": "Western Frisian", "ga": "Irish", "gcf": "Guadeloupean Creole",
    "gcr": "Guianese Creole", "gd": "Scottish Gaelic", "gl": "Galician", "gom": "Goan Konkani", "grc": "Ancient Greek",
    "gu": "Gujarati", "gug": "Paraguayan Guaraní", "guw": "Gun", "ha": "Hausa", "hbo": "Ancient Hebrew", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "ig": "Igbo", "is": "Icelandic", "it": "Italian", "ja": "Japanese", "jv": "Javanese", "ka": "Georgian",
    "kab": "Kabyle", "kik": "Kikuyu", "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "ku": "Kurdish",
    "ky": "Kyrgyz", "la": "Latin", "lb": "Luxembourgish", "lg": "Ganda", "lij": "Ligurian", "ln": "Lingala",
    "lo": "Lao", "lt": "Lithuanian", "ltg": "Latgalian", "lv": "Latvian", "mg": "Malagasy", "mk": "Macedonian",
    "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "ms": "Malay", "mt": "Maltese", "my": "Burmese",
    "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian Nynorsk", "no": "Norwegian", "nso": "Northern Sotho",
    "oc": "Occitan", "om": "Oromo", "or": "Odia", "pa": "Punjabi", "pcm": "Nigerian Pidgin", "pl": "Polish",
    "ps": "Pashto", "pt": "Portuguese", "qu": "Quechua", "ro": "Romanian", "ru": "Russian", "rw": "Kinyarwanda",
    "sa": "Sanskrit", "sdh": "Southern Kurdish", "se": "Northern Sami", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "sn": "Shona", "so": "Somali", "sq": "Albanian", "sr": "Serbian", "st": "Southern Sotho",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tg": "Tajik", "th": "Thai", "tk": "Turkmen",
    "tl": "Tagalog", "tr": "Turkish", "tt": "Tatar", "ug": "Uyghur", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek",
    "uzs": "Southern Uzbek", "vec": "Venetian", "vi": "Vietnamese", "vo": "Volapük", "wa": "Walloon",
    "wuu": "Wu Chinese", "xh": "Xhosa", "yo": "Yoruba", "yue": "Cantonese", "zh": "Chinese", "zu": "Zulu",
    "zxx": "No linguistic content", "nb": "Norwegian Bokmål", "fil": "Filipino", "gn": "Guarani", "ff": "Fula",
    "ki": "Kikuyu", "ti": "Tigrinya", "kok": "Konkani", "mi": "Māori", "sm": "Samoan", "to": "Tongan", "fj": "Fijian",
    "haw": "Hawaiian", "iu": "Inuktitut", "kl": "Kalaallisut", "ii": "Sichuan Yi", "bo": "Tibetan", "ce": "Chechen",
    "cv": "Chuvash", "os": "Ossetic", "ab": "Abkhazian", "av": "Avaric", "ast": "Asturian", "sc": "Sardinian",
    "co": "Corsican", "rm": "Romansh", "fur": "Friulian", "li": "Limburgish", "hsb": "Upper Sorbian",
    "dsb": "Lower Sorbian", "csb": "Kashubian", "szl": "Silesian", "sh": "Serbo-Croatian",
}  # fmt: skip


def type_label(mimetype: str) -> str:
    """A document type by name ("PDF"); a type the table does not name, as indexed."""
    return TYPE_LABELS.get(mimetype.lower(), mimetype)


def language_label(code: str) -> str:
    """A language by name: ``de`` is "German", ``en-us`` "English (US)"; a code the table does
    not name, as indexed."""
    primary, _dash, rest = code.partition("-")
    name = LANGUAGE_NAMES.get(primary.lower())
    if name is None:
        return code
    if not rest:
        return name
    return f"{name} ({rest.upper() if len(rest) == 2 else rest})"


# facet parameter -> how its values are named (the others are shown as indexed)
FACET_LABELS = {"type": type_label, "lang": language_label}


def facet_label(name: str, value: str) -> str:
    """How the search page shows ``value`` of facet ``name`` (a parameter of request.FACETS)."""
    label = FACET_LABELS.get(name)
    return label(value) if label else value
