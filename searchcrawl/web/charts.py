"""Charts drawn on the server: plain functions, data in, SVG text out (issue 60).

The administration pages plot a source's runs and a run's progress (web/pictures.py says what).
The SVG is put inline in the page, so it needs no route, no script and no second request, and
the pages keep their Content-Security-Policy (``default-src 'none'; script-src 'none';
style-src 'self'``): that policy refuses inline styles, ``style=`` attributes included, so
every colour, width and font here is an SVG presentation attribute (``fill=``, ``stroke=``,
``font-size=``), which CSP does not govern, and nothing is ever a ``<style>`` or ``<script>``.
pygal was considered: it draws SVG on the server too, but its charts are styled by a ``<style>``
element and made interactive by a script, both of which the policy blocks (and it would be a
dependency for some 300 lines).

Every text (titles, labels, legend, which can come from a source's name) is escaped and
stripped of characters XML does not allow, so a label such as ``</svg><script>`` is text. The
number of points drawn is bounded (``MAX_POINTS`` per line, ``MAX_BARS`` bars): a longer series
is thinned to each bucket's lowest and highest point, so a peak stays visible.

Readable in a screenshot and by people who do not tell red from green: the Okabe-Ito palette
(dark enough on white), each line its own dash pattern and a label at its end, each stack its
own hatch pattern, a legend, 13 px text; and for screen readers ``role="img"``, a ``<title>``
and a ``<desc>`` saying the latest values.

The words the charts say themselves ("No data yet", the description) are in the page's language,
and their numbers and times are written its way (system/translations.py: the request's language,
English outside one); the titles and labels come translated from the caller (pictures.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from unicodedata import east_asian_width

from babel.dates import format_skeleton, format_time, get_datetime_format
from babel.numbers import format_compact_decimal, format_decimal, format_scientific
from markupsafe import Markup

from searchcrawl.system import translations
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext

MAX_POINTS = 240  # points drawn per line: a longer series is thinned (``downsample``)
MAX_BARS = 60  # bars drawn: the latest are kept
LABEL_CHARS = 60  # a title, label or category longer than this is cut
# Okabe and Ito's palette for colour-blind readers, without its yellow (too light on white)
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
DASHES = ("", "8 4", "2 3", "10 3 2 3", "4 4", "1 2", "12 6")
HATCHES = ("", "M0,6 L6,0", "M0,0 L6,6", "M3,0 L3,6", "M0,3 L6,3", "M0,6 L6,0 M0,0 L6,6", "")
TEXT = "#222222"
AXIS = "#555555"
GRID = "#dddddd"
FONT = "sans-serif"
FONT_SIZE = 13
WIDTH, HEIGHT = 720, 280
TIME_STEPS = (  # seconds between ticks of a time axis, the first giving at most ``ticks``
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
    86400, 172800, 604800, 1209600, 2592000, 7776000, 15552000, 31536000,
)  # fmt: skip
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_ids = count(1)


@dataclass(frozen=True)
class Series:
    """One line (x, y points; x seconds since the epoch on a time axis) or one stack of bars
    (``points``' y values, one per category)."""

    label: str
    points: Sequence[tuple[float, float]]


def text(value: object, limit: int = LABEL_CHARS) -> str:
    """``value`` as SVG text or attribute: cut to ``limit`` characters, characters XML refuses
    dropped, markup characters escaped (quotes too: it may stand in an attribute)."""
    words = _NOT_XML.sub("", str(value))
    if len(words) > limit:
        words = words[: limit - 1] + "…"
    return words.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;")


def number(value: float) -> str:
    """A count or rate as a label, as the page's language writes numbers: 1,234; from 10,000 on its
    short form where it has one (12.5K, 3.4M; 3,4 Mio.; 1.2万), else the whole number (12.500); a
    rate with one decimal, a fraction with two significant digits. Past the short forms' largest
    (trillions) in scientific notation (1.7E20): Babel's short form raises on such a number, and
    a chart must draw whatever its series hold; a value that is no number is a dash."""
    locale = translations.current().locale
    if not math.isfinite(value):
        return "–"
    size = abs(value)
    if size >= 1e15:
        return format_scientific(value, format="#.#E0", locale=locale)
    if size >= 1e4:
        short = format_compact_decimal(value, format_type="short", fraction_digits=1, locale=locale)
        return short if any(char.isalpha() for char in short) else translations.number(round(value))
    if value == int(value):
        return translations.number(int(value))
    return translations.number(value, 1) if size >= 1 else format_decimal(value, format="@#", locale=locale)


def nice_ticks(low: float, high: float, ticks: int = 5, integer: bool = False) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten
    (whole steps for counts, ``integer``)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    if high <= low:
        high = low + 1
    raw = (high - low) / max(ticks, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(power * m for m in (1, 2, 2.5, 5, 10) if power * m >= raw)
    if integer and step < 1:
        step = 1.0
    elif integer and step != int(step):  # 2.5: 5
        step = 5.0
    first = math.floor(low / step) * step
    values = []
    value = first
    while value < high + step * 0.999:
        values.append(round(value, 10))
        value += step
    return values


def time_ticks(low: float, high: float, ticks: int = 6) -> tuple[list[float], str]:
    """Ticks of a time axis (seconds since the epoch) at a round step, and what their labels show,
    as a strftime format names it (``time_label`` writes it the page's language's way)."""
    span = max(high - low, 1)
    step = next((step for step in TIME_STEPS if span / step <= ticks), TIME_STEPS[-1])
    first = math.ceil(low / step) * step  # round in UTC: whole minutes, hours, days
    values = [float(first + n * step) for n in range(int((high - first) // step) + 1)]
    if step < 60:
        format_ = "%H:%M:%S"
    elif step < 86400:
        format_ = "%H:%M" if span < 86400 else "%m-%d %H:%M"
    else:
        format_ = "%Y-%m-%d"
    return values or [low], format_


def time_label(moment: float, format_: str) -> str:
    """A time axis' label: in UTC, as the runs table keeps times and the pages show them, with what
    ``format_`` (time_ticks') shows, in the page language's order, separators and clock: the time
    with its seconds, without them, the day (month and day) and time, or the date."""
    when = datetime.fromtimestamp(moment, UTC)
    locale = translations.current().locale
    if format_ == "%H:%M:%S":
        return format_time(when, "medium", tzinfo=UTC, locale=locale)
    if format_ == "%H:%M":
        return format_time(when, "short", tzinfo=UTC, locale=locale)
    if format_ == "%Y-%m-%d":
        return format_skeleton("yMd", when, tzinfo=UTC, locale=locale)
    day = format_skeleton("Md", when, tzinfo=UTC, locale=locale)
    time = format_time(when, "short", tzinfo=UTC, locale=locale)
    return str(get_datetime_format("short", locale=locale)).replace("{1}", day).replace("{0}", time)


def downsample(points: Sequence[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    """At most ``limit`` points (at least 4): in ``limit // 2`` buckets of consecutive points,
    each bucket's lowest and highest, in their order; the first and last points are kept."""
    finite = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    limit = max(limit, 4)
    if len(finite) <= limit:
        return finite
    buckets = (limit - 2) // 2
    inner = finite[1:-1]
    kept = [finite[0]]
    for index in range(buckets):
        bucket = inner[index * len(inner) // buckets : (index + 1) * len(inner) // buckets]
        if not bucket:
            continue
        low = min(range(len(bucket)), key=lambda i: bucket[i][1])
        high = max(range(len(bucket)), key=lambda i: bucket[i][1])
        kept.extend(bucket[i] for i in sorted({low, high}))
    kept.append(finite[-1])
    return kept


def _open(title: str, desc: str, width: int, height: int) -> tuple[str, list[str]]:
    key = f"chart{next(_ids)}"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="{key}-title {key}-desc" '
        f'font-family="{FONT}" font-size="{FONT_SIZE}" fill="{TEXT}">',
        f'<title id="{key}-title">{text(title)}</title><desc id="{key}-desc">{text(desc, 1000)}</desc>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="12" y="20" font-size="15" font-weight="bold">{text(title)}</text>',
    ]
    return key, parts


def _empty(parts: list[str], width: int, height: int) -> Markup:
    said = text(_("No data yet"))
    parts.append(f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" fill="{AXIS}">{said}</text></svg>')
    return Markup("".join(parts))


def _legend(parts: list[str], labels: Sequence[str], x: float, y: float, swatch: str, key: str) -> None:
    """The legend, in one row above the plot: a swatch (a line's dash, a bar's hatch) per label."""
    for index, label in enumerate(labels):
        colour = COLOURS[index % len(COLOURS)]
        if swatch == "line":
            dash = DASHES[index % len(DASHES)]
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            parts.append(
                f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 24:.1f}" y2="{y - 4:.1f}" stroke="{colour}" stroke-width="3"{dashed}/>'
            )
        else:
            parts.append(
                f'<rect x="{x:.1f}" y="{y - 11:.1f}" width="20" height="12" fill="{_fill(key, index)}" stroke="{colour}"/>'
            )
        shown = text(label, 28)
        parts.append(f'<text x="{x + 30:.1f}" y="{y:.1f}">{shown}</text>')
        x += 44 + 7.5 * len(label[:28])


def _width(label: str) -> float:
    """About how wide ``label`` is drawn, in pixels: a wide (CJK) character a font size, another 0.6 of it."""
    return sum(FONT_SIZE if east_asian_width(char) in "WF" else FONT_SIZE * 0.6 for char in label)


def _fill(key: str, index: int) -> str:
    return f"url(#{key}-hatch{index})" if HATCHES[index % len(HATCHES)] else COLOURS[index % len(COLOURS)]


def _y_axis(
    parts: list[str], ticks: list[float], left: float, right: float, y_of: Callable[[float], float], y_label: str
) -> None:
    for value in ticks:
        y = y_of(value)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{text(number(value))}</text>')
    if y_label:  # along the axis, turned
        middle = (y_of(ticks[0]) + y_of(ticks[-1])) / 2
        parts.append(
            f'<text x="{-middle:.1f}" y="14" transform="rotate(-90)" text-anchor="middle" fill="{AXIS}" '
            f'font-size="12">{text(y_label, 24)}</text>'
        )


def _x_labels(x_low: float, x_high: float, time_axis: bool) -> list[tuple[float, str]]:
    """The x axis's ticks within its range, with their labels (times, or numbers)."""
    if time_axis:
        x_ticks, format_ = time_ticks(x_low, x_high)
        return [(x, time_label(x, format_)) for x in x_ticks if x_low <= x <= x_high]
    return [(x, number(x)) for x in nice_ticks(x_low, x_high, 6) if x_low <= x <= x_high]


def _x_axis(parts: list[str], labels: list[tuple[float, str]], x_of: Callable[[float], float], bottom: float) -> None:
    """Every tick a line; a label at every tick whose label fits (a language's may be long)."""
    if len(labels) > 1:
        gap = abs(x_of(labels[1][0]) - x_of(labels[0][0]))
        every = max(1, math.ceil((max(_width(label) for _x, label in labels) + 8) / max(gap, 1.0)))
    else:
        every = 1
    for index, (x, label) in enumerate(labels):
        parts.append(f'<line x1="{x_of(x):.1f}" y1="{bottom}" x2="{x_of(x):.1f}" y2="{bottom + 5}" stroke="{AXIS}"/>')
        if index % every == 0:
            parts.append(f'<text x="{x_of(x):.1f}" y="{bottom + 19}" text-anchor="middle">{text(label)}</text>')


def _lines(
    parts: list[str],
    lines: list[tuple[str, list[tuple[float, float]]]],
    x_of: Callable[[float], float],
    y_of: Callable[[float], float],
    right: float,
) -> None:
    """Each series as a line of its colour and dash (a dot when it is one point), its name at its
    end (moved down from another's), so no colour need be told apart."""
    ends: list[float] = []
    for index, (label, points) in enumerate(lines):
        colour, dash = COLOURS[index % len(COLOURS)], DASHES[index % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in points)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2.5" stroke-linejoin="round"{dashed}/>'
        )
        if len(points) == 1:
            parts.append(f'<circle cx="{x_of(points[0][0]):.1f}" cy="{y_of(points[0][1]):.1f}" r="4" fill="{colour}"/>')
        end = y_of(points[-1][1]) + 4
        while any(abs(end - other) < FONT_SIZE + 1 for other in ends):
            end += FONT_SIZE + 1
        ends.append(end)
        parts.append(f'<text x="{right + 6}" y="{end:.1f}" fill="{colour}">{text(label, 18)}</text>')


def line_chart(
    title: str,
    series: Sequence[Series],
    y_label: str = "",
    time_axis: bool = True,
    integer: bool = False,
    width: int = WIDTH,
    height: int = HEIGHT,
    max_points: int = MAX_POINTS,
) -> Markup:
    """Lines over a time axis (x: seconds since the epoch) or a number axis; y from 0 up
    (whole ticks for counts: ``integer``)."""
    lines = [(item.label, downsample(item.points, max_points)) for item in series[: len(COLOURS)]]
    lines = [(label, points) for label, points in lines if points]
    desc = "; ".join(
        _("%(label)s: %(value)s at the latest", label=label, value=number(points[-1][1])) for label, points in lines
    ) or _("no data yet")
    key, parts = _open(title, desc, width, height)
    if not lines:
        return _empty(parts, width, height)
    left, right, top, bottom = 72.0, width - 130.0, 60.0, height - 34.0
    xs = [x for _label, points in lines for x, _y in points]
    ys = [y for _label, points in lines for _x, y in points]
    x_low, x_high = min(xs), max(xs)
    if x_high == x_low:  # one point: in the middle, an hour either side on a time axis
        x_low, x_high = x_low - (3600 if time_axis else 1), x_high + (3600 if time_axis else 1)
    y_ticks = nice_ticks(min(0.0, min(ys)), max(ys) if max(ys) > 0 else 1.0, integer=integer)
    y_low, y_high = y_ticks[0], y_ticks[-1]

    def x_of(x: float) -> float:
        return left + (x - x_low) * (right - left) / (x_high - x_low)

    def y_of(y: float) -> float:
        return bottom - (y - y_low) * (bottom - top) / (y_high - y_low)

    _legend(parts, [label for label, _points in lines], left, 42, "line", key)
    _y_axis(parts, y_ticks, left, right, y_of, y_label)
    _x_axis(parts, _x_labels(x_low, x_high, time_axis), x_of, bottom)
    parts.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{AXIS}"/>')
    _lines(parts, lines, x_of, y_of, right)
    parts.append("</svg>")
    return Markup("".join(parts))


def _hatches(parts: list[str], key: str, count: int) -> None:
    """The hatch patterns of ``count`` stacked series (each its own, so no colour need be told apart)."""
    parts.append("<defs>")
    for index in range(count):
        hatch = HATCHES[index % len(HATCHES)]
        if hatch:
            colour = COLOURS[index % len(COLOURS)]
            parts.append(
                f'<pattern id="{key}-hatch{index}" width="6" height="6" patternUnits="userSpaceOnUse">'
                f'<rect width="6" height="6" fill="{colour}" fill-opacity="0.35"/>'
                f'<path d="{hatch}" stroke="{colour}" stroke-width="1.5"/></pattern>'
            )
    parts.append("</defs>")


def _stacks(series: Sequence[Series], max_bars: int) -> list[tuple[str, list[float]]]:
    """Each series' label and its y per category (the last ``max_bars``; a negative or non-finite
    y drawn as 0), as many series as there are colours."""
    return [
        (item.label, [max(0.0, y) if math.isfinite(y) else 0.0 for _x, y in list(item.points)[-max_bars:]])
        for item in series[: len(COLOURS)]
    ]


def _bars_description(categories: list[str], stacks: list[tuple[str, list[float]]]) -> str:
    """The chart's ``<desc>``: how many bars, and each series' latest value."""
    latest = ", ".join(f"{label} {number(values[-1])}" for label, values in stacks if values)
    if not categories or not latest:
        return _("no data yet")
    return ngettext(
        "%(count)s bar; the latest (%(category)s): %(values)s",
        "%(count)s bars; the latest (%(category)s): %(values)s",
        len(categories),
        count=translations.number(len(categories)),
        category=categories[-1],
        values=latest,
    )


def _bars(
    parts: list[str],
    categories: list[str],
    stacks: list[tuple[str, list[float]]],
    key: str,
    y_of: Callable[[float], float],
    left: float,
    right: float,
    bottom: float,
) -> None:
    """One bar per category, its series stacked from 0 up, each its hatch; the category labels
    that fit under them (the latest always)."""
    slot = (right - left) / len(categories)
    bar = min(48.0, max(2.0, slot * 0.7))
    every = max(1, math.ceil(len(categories) / ((right - left) / 60)))  # category labels that fit
    for i, category in enumerate(categories):
        x = left + i * slot + (slot - bar) / 2
        base = 0.0
        for index, (_label, values) in enumerate(stacks):
            value = values[i] if i < len(values) else 0.0
            if value <= 0:
                continue
            y0, y1 = y_of(base), y_of(base + value)
            parts.append(
                f'<rect x="{x:.1f}" y="{y1:.1f}" width="{bar:.1f}" height="{max(y0 - y1, 0.5):.1f}" '
                f'fill="{_fill(key, index)}" stroke="{COLOURS[index % len(COLOURS)]}" stroke-width="1"/>'
            )
            base += value
        if (len(categories) - 1 - i) % every == 0:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{bottom + 19}" text-anchor="middle">{text(category, 12)}</text>')


def stacked_bars(
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    y_label: str = "",
    width: int = WIDTH,
    height: int = HEIGHT,
    max_bars: int = MAX_BARS,
) -> Markup:
    """One bar per category (the last ``max_bars``), its series stacked, each with its hatch;
    a series' points give its y per category (x is ignored)."""
    categories = list(categories)[-max_bars:]
    stacks = _stacks(series, max_bars)
    key, parts = _open(title, _bars_description(categories, stacks), width, height)
    if not categories:
        return _empty(parts, width, height)
    _hatches(parts, key, len(stacks))
    left, right, top, bottom = 72.0, width - 16.0, 60.0, height - 34.0
    totals = [sum(values[i] for _label, values in stacks if i < len(values)) for i in range(len(categories))]
    y_ticks = nice_ticks(0.0, max(totals) if max(totals) > 0 else 1.0, integer=True)
    y_high = y_ticks[-1]

    def y_of(y: float) -> float:
        return bottom - y * (bottom - top) / y_high

    _legend(parts, [label for label, _values in stacks], left, 42, "bar", key)
    _y_axis(parts, y_ticks, left, right, y_of, y_label)
    _bars(parts, categories, stacks, key, y_of, left, right, bottom)
    parts.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{AXIS}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
