"""Nothing a student wrote runs in a TA's browser.

nbgrader's grading page renders a student's markdown (the free-text answers, and any cell they
add) as raw HTML, and its template shows outputs of the graded run (``text/html``, SVG,
JavaScript) as they are. A ``<script>`` or an ``<img onerror=...>`` in an answer would run in the
TA's logged-in Jupyter session, which can run code on the grading server. Two seams close it:

* outputs: ``c.HTMLExporter.sanitize_html = True`` in ``nbgrader_config.py`` (nbconvert's own
  sanitizer for HTML, markdown and SVG outputs; JavaScript outputs are dropped);
* markdown: :class:`SanitizeMarkdown`, the first preprocessor of the formgrader's template
  (``jupyter/nbconvert/templates/formgrade/conf.json``), renders each markdown cell the way the
  page would, then keeps only harmless tags and attributes (bleach, which nbconvert's sanitizer
  uses too). Rendering first keeps formulas and code intact (``$j < i$`` stays a formula); the
  page's own markdown pass leaves the cleaned HTML as it is. The course's own additions (model
  answers, the submitted outputs) come after it and are built from escaped text.
"""
from __future__ import annotations

from functools import lru_cache
from html import escape

import bleach
import nbformat
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor

from staff.grading.model_answers import grading_page_source

#: What a rendered answer may contain: text formatting, lists, tables, code, links and images.
TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
        "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
        "thead", "tr", "ul"}
ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "*": ["class"]}
PROTOCOLS = {"http", "https", "mailto", "data"}  # never javascript:


def clean(markdown: str, attachments: dict | None = None) -> str:
    """A markdown cell's source as HTML with nothing that can run (its attachments, such as the
    architecture diagram, embedded as ``data:`` images, as the page's own markdown filter does)."""
    try:
        rendered = MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments or {})).render(markdown)
    except Exception:  # e.g. an image of a missing attachment: shown as text, not an error page for the TA
        rendered = f"<pre>{escape(markdown)}</pre>"
    html = bleach.clean(rendered, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=True)
    # a blank line would end the HTML block and hand the rest back to markdown
    return "<div>" + "\n".join(line for line in html.splitlines() if line.strip()) + "</div>"


@lru_cache(maxsize=32)
def _course_text(path: str, mtime_ns: int) -> frozenset[str]:
    """The markdown the course wrote: every markdown cell of the source notebook."""
    return frozenset(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


class SanitizeMarkdown(Preprocessor):
    """Cleans every markdown cell whose text is not the course's own (answers, cells a student
    added or changed): rendering and cleaning the instructions too doubled the page's time."""

    enabled = True

    def preprocess(self, nb, resources):
        page = grading_page_source(resources, self.log, "course text (every cell cleaned)")
        ours = _course_text(str(page[2]), page[2].stat().st_mtime_ns) if page else frozenset()
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source not in ours:
                cell.source = clean(cell.source, cell.get("attachments"))
        return nb, resources
