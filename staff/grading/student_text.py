"""What a student wrote, as inert text on a staff page: one helper, :func:`inert_html`.

Whatever a student controls reaches staff pages quoted: a flag names their grade id, a
``getattr`` string or a cell (:mod:`staff.grading.integrity`); the report and the similarity
page name their student id and files; the grading page shows their outputs. Escaping ``<`` and
``&`` is enough for an HTML file, not for the formgrader's grading page: nbgrader renders a
markdown cell there with nbconvert's markdown2html and no sanitizer after it, and a blank line ends
an HTML block, after which markdown is parsed again (``![x](/hub/logout)`` becomes an image the
TA's browser fetches with their cookies, ``[a](http://...)`` a link, a bare URL a link too).

So :func:`inert_html` writes every ASCII character other than a letter, a digit or a space as a
numeric character reference (``[`` as ``&#91;``): no HTML, markdown or formula delimiter is left
in the source, whatever parses it (inside an HTML block, a paragraph, an attribute's quotes), and
the browser still shows the very characters. Line breaks and other control characters cannot end
a block either: a newline is shown as ``↵``, a tab as ``⇥``, and every other control character as
its code point (``⟨U+001B⟩``), as are the invisible characters that reorder or hide text
(bidirectional overrides, zero-width characters, line and paragraph separators, lone surrogates,
which would also fail the page's UTF-8); these symbols are in the fonts a page falls back on
(DejaVu), where Unicode's control pictures (``␊``) are not. A long text is
cut (with ``…`` and its full length). Only in ``lines=True`` mode (text shown in a ``<pre>``:
outputs, code) do newlines and tabs stay, as character references, so a line break never reaches
the markdown parser as one.

MathJax reads the page's text, not its source: put the text in an element whose class includes
``tex2jax_ignore`` (:data:`NO_MATH`) where the page typesets formulas.
"""

from __future__ import annotations

import unicodedata

#: Characters of a flag, a reason's item or a name shown before it is cut.
LIMIT = 300

#: The class that keeps MathJax (2, the formgrader's; 3's name too) away from a text.
NO_MATH = "tex2jax_ignore mathjax_ignore"

#: Categories shown as their code point: controls, format characters (bidirectional overrides,
#: zero-width ones), surrogates, line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: What a line break and a tab look like on one line.
_SHOWN = {"\n": "\u21b5", "\t": "\u21e5"}  # ↵ ⇥


def _code_point(char: str) -> str:
    return f"\u27e8U+{ord(char):04X}\u27e9"  # ⟨U+202E⟩


def _char(char: str, lines: bool) -> str:
    code = ord(char)
    if code < 128:
        if char.isalnum() or char == " ":
            return char
        if char in _SHOWN:
            return f"&#{code};" if lines else _SHOWN[char]
        if code < 32 or code == 127:
            return _code_point(char)
        return f"&#{code};"
    if unicodedata.category(char) in _HIDDEN:
        return _code_point(char)
    return char


def inert_html(value: object, limit: int | None = LIMIT, *, lines: bool = False) -> str:
    """``value`` as HTML that shows its text and nothing else, wherever it is put: an element's
    text, a quoted attribute, a markdown cell's HTML block, a markdown paragraph. At most ``limit``
    characters (None: all), then ``…`` and the full length; one line unless ``lines``."""
    text = value if isinstance(value, str) else str(value)
    if lines:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    cut = ""
    if limit is not None and len(text) > limit:
        cut = f"\u2026 ({len(text):,} characters)"
        text = text[:limit]
    return "".join(_char(c, lines) for c in text) + cut
