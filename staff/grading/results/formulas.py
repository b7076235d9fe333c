"""Formulas on a feedback page as MathML, written into the page, so they show offline.

A feedback page is one HTML file a student opens from the LMS or their disk, often without a network:
nbconvert's pages load MathJax from a CDN, which offline leaves every formula as raw TeX. Here each
``$...$``, ``$$...$$``, ``\\(...\\)`` and ``\\[...\\]`` in a rendered markdown cell's text (never in
``code``, ``pre`` or ``math``) becomes MathML (latex2mathml), which browsers draw without a script
(MathML Core: Chromium 109+, Firefox, Safari). A formula it cannot convert stays as its TeX.

What is between dollars may be a student's: latex2mathml's own serialiser writes ``\\text{<img ...>}``
and ``\\href``/``\\style``/``\\class`` through as markup and attributes. So its element tree is taken
instead, every element checked against MathML's names, every attribute against the presentational ones
(no ``href``, ``style``, ``class``, ``id`` or handler), and serialised with the text escaped.
"""

from __future__ import annotations

import html
import re
from xml.etree.ElementTree import Element, tostring

from latex2mathml.converter import convert_to_element

#: Elements whose text is never a formula.
_SKIP = frozenset({"code", "pre", "script", "style", "math", "textarea", "kbd", "samp"})
_TAG = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*?(/?)>", re.S)
#: Display first, then inline (MathJax's order and delimiters, ``\\$`` an escaped dollar).
_MATH = re.compile(
    r"(?<!\\)\$\$(?P<d1>.+?)(?<!\\)\$\$|\\\[(?P<d2>.+?)\\\]|\\\((?P<i1>.+?)\\\)|(?<![\\$])\$(?P<i2>[^$]+?)(?<!\\)\$",
    re.S,
)


#: MathML's presentation elements (MathML Core and what latex2mathml writes).
ELEMENTS = frozenset(
    "math mrow mi mn mo ms mtext mspace msub msup msubsup munder mover munderover mfrac msqrt mroot "
    "mstyle merror mpadded mphantom menclose mtable mtr mtd mlabeledtr maligngroup malignmark "
    "mmultiscripts mprescripts none semantics annotation".split()
)
#: Attributes that only lay a formula out.
ATTRIBUTES = frozenset(
    "xmlns display displaystyle scriptlevel mathvariant mathsize stretchy fence separator accent "
    "accentunder columnalign columnspacing columnlines rowalign rowspacing rowlines frame framespacing "
    "equalrows equalcolumns lspace rspace minsize maxsize movablelimits largeop symmetric form width "
    "height depth voffset linethickness notation open close align columnspan rowspan".split()
)


class Unsafe(ValueError):
    """An element latex2mathml made that is not a MathML presentation element."""


def _checked(element: Element) -> Element:
    for node in element.iter():
        if node.tag not in ELEMENTS:
            raise Unsafe(node.tag)
        for name in [a for a in node.attrib if a not in ATTRIBUTES]:
            del node.attrib[name]
        # latex2mathml keeps characters as entity text (``&#x000B7;``) and unescapes its whole output
        # afterwards; here the characters themselves, escaped with everything else by tostring
        node.text = html.unescape(node.text) if node.text else node.text
        node.tail = html.unescape(node.tail) if node.tail else node.tail
    return element


def _formula(match: re.Match) -> str:
    display = match.group("d1") or match.group("d2")
    tex = html.unescape(display or match.group("i1") or match.group("i2"))
    try:
        element = convert_to_element(tex.strip(), display="block" if display else "inline")
        return tostring(_checked(element), encoding="unicode")
    except Exception:  # noqa: BLE001 (latex2mathml raises many kinds): the TeX stays as it was written
        return match.group(0)


def _text(text: str) -> str:
    return (
        _MATH.sub(_formula, text).replace("\\$", "$")
        if "$" in text or "\\(" in text or "\\[" in text
        else text
    )


def mathml(page: str) -> str:
    """``page`` (HTML) with every formula in its text as MathML (a Jinja filter of the feedback template)."""
    out, skipping, pos = [], 0, 0
    for tag in _TAG.finditer(page):
        out.append(page[pos : tag.start()] if skipping else _text(page[pos : tag.start()]))
        name = (tag.group(2) or "").lower()
        if name in _SKIP and not tag.group(3):
            skipping = max(0, skipping + (-1 if tag.group(1) else 1))
        out.append(tag.group(0))
        pos = tag.end()
    out.append(page[pos:] if skipping else _text(page[pos:]))
    return "".join(out)
