"""The TA's page shows only what the course vouches for: nothing a student wrote runs, fetches,
or looks like the page's own in a TA's browser.

nbgrader's grading page renders a student's markdown (the free-text answers, and any cell they
add) as raw HTML, and its template shows outputs of the graded run (``text/html``, SVG,
JavaScript) as they are. A ``<script>`` or an ``<img onerror=...>`` would run in the TA's
logged-in Jupyter session, which can run code on the grading server; an ``<img src="/hub/logout">``
is fetched with the TA's cookies (any GET endpoint fires); an image from another host tells it
when a TA opened the page; Bootstrap's classes (``modal-backdrop``, ``panel ...``) let an answer
cover the page or pass for the course's own boxes ("As submitted", "Model answer"). The policy,
one for every seam (:func:`clean_html`):

* only text formatting, lists, tables, code, links (``http``, ``https``, ``mailto``) and images;
* no ``class``, ``style`` or ``id`` at all (nothing can collide with the page's own), no event
  handler, no relative URL;
* an image only from the cell's own attachments (``attachment:`` in markdown or in an ``<img>``,
  embedded as ``data:`` as nbconvert does) or a ``data:image/png|jpeg|gif`` URI: never a request.

The seams: :class:`SanitizeCells`, first preprocessor of the formgrader's template
(``jupyter/nbconvert/templates/formgrade/conf.json``) and one of ``generate_feedback``'s
(``nbgrader_config.py``), renders each markdown cell the way the page would (so ``$j < i$`` stays a
formula) and cleans it; it also drops output metadata the template turns into URLs (a PNG's
``filenames``) or frames (``isolated`` HTML). Outputs go through nbconvert's sanitizer
(``c.HTMLExporter.sanitize_html``: JavaScript dropped) whose ``clean_html`` filter is this module's
(``c.HTMLExporter.filters``). The course's own additions (model answers, submitted outputs, the
conflict check) come after it and are built from escaped text. The page's Content-Security-Policy
(:mod:`csp`) backs all this up. nh3 (Rust's ammonia) cleans: bleach is deprecated upstream.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape
from pathlib import Path

import nbformat
import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from staff.grading.review.model_answers import grading_page_source, source_notebook

#: What a rendered answer may contain: text formatting, lists, tables, code, links and images.
TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "del",
    "div",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title", "width", "height"}}
LINKS = {"http", "https", "mailto"}  # never javascript:, data: or a relative URL
#: The image types an ``<img>`` may show, inline only (what Jupyter pastes into an attachment).
IMAGES = ("image/png", "image/jpeg", "image/gif")
_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=\s]+")
_ATTACHMENT = "attachment:"
#: nbconvert's heading anchors (a relative link, so they would be left as a bare "¶").
_ANCHOR = re.compile(r'<a class="anchor-link" href="#[^"]*">¶</a>')


def images(attachments: dict | None) -> dict:
    """A cell's attachments as the images it may show: PNG, JPEG and GIF only (an attachment with
    none of them is dropped, so a reference to it is a missing one)."""
    kept = {
        name: {kind: data for kind, data in (bundle or {}).items() if kind in IMAGES}
        for name, bundle in (attachments or {}).items()
    }
    return {name: bundle for name, bundle in kept.items() if bundle}


def _attribute_filter(attachments: dict):
    def keep(tag: str, attribute: str, value: str) -> str | None:
        if tag == "img" and attribute == "src":
            if value.startswith(_ATTACHMENT):  # an <img> the student wrote naming an attachment
                bundle = attachments.get(value[len(_ATTACHMENT) :], {})
                value = next((f"data:{kind};base64,{bundle[kind]}" for kind in IMAGES if kind in bundle), "")
            return value if _IMAGE.fullmatch(value) else None
        if tag == "a" and attribute == "href":
            return value if value.split(":", 1)[0].strip().lower() in LINKS else None
        if attribute in ("width", "height"):
            return value if value.isdigit() else None
        return value

    return keep


def clean_html(html, attachments: dict | None = None) -> str:
    """HTML a student's notebook carries, reduced to the policy above. Also nbconvert's
    ``clean_html`` filter for outputs and raw cells (``c.HTMLExporter.filters``)."""
    html = html.decode() if isinstance(html, bytes) else str(html)
    return nh3.clean(
        _ANCHOR.sub("", html),
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=LINKS | {"data", "attachment"},
        url_relative="deny",
        attribute_filter=_attribute_filter(images(attachments)),
    )


def clean(markdown: str, attachments: dict | None = None) -> str:
    """A markdown cell's source as HTML under the policy (its attachments, such as the
    architecture diagram, embedded as ``data:`` images, as the page's own markdown filter does)."""
    kept = images(attachments)
    try:
        renderer = IPythonRenderer(escape=False, exclude_anchor_links=True, attachments=kept)
        rendered = MarkdownWithMath(renderer=renderer).render(markdown)
    except Exception:  # e.g. an image of a missing attachment: shown as text, not an error page for the TA
        rendered = f"<pre>{escape(markdown)}</pre>"
    html = clean_html(rendered, kept)
    # a blank line would end the HTML block and hand the rest back to markdown
    return "<div>" + "\n".join(line for line in html.splitlines() if line.strip()) + "</div>"


@lru_cache(maxsize=32)
def _course_text(path: str, mtime_ns: int) -> frozenset[str]:
    """The markdown the course wrote: every markdown cell of the source notebook."""
    return frozenset(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def _source_of(resources: dict, log) -> Path | None:
    """The source notebook of the page being made: the formgrader's grading page, or feedback
    (nbgrader's ``resources["nbgrader"]``)."""
    page = grading_page_source(resources, log, "course text (every cell cleaned)")
    if page:
        return page[2]
    info, folder = resources.get("nbgrader") or {}, (resources.get("metadata") or {}).get("path")
    if info.get("assignment") and info.get("notebook") and folder:
        return source_notebook(Path(folder).resolve(), info["assignment"], info["notebook"])
    return None


class SanitizeCells(Preprocessor):
    """Cleans every markdown cell whose text is not the course's own (answers, cells a student
    added or changed: rendering and cleaning the instructions too doubled the page's time), and
    drops the output metadata nbconvert's templates turn into a URL or a frame."""

    enabled = Bool(True)  # on wherever it is listed (a trait: conf.json passes ``enabled`` too)

    def preprocess(self, nb, resources):
        source = _source_of(resources, self.log)
        ours = _course_text(str(source), source.stat().st_mtime_ns) if source else frozenset()
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source not in ours:
                cell.source = clean(cell.source, cell.get("attachments"))
            for output in cell.get("outputs", []):
                metadata = output.get("metadata", {})
                metadata.pop("filenames", None)  # <img src="{{ filenames['image/png'] }}">
                for kind in metadata.values():
                    if isinstance(kind, dict):
                        kind.pop("isolated", None)  # <iframe src="data:text/html;...">
        return nb, resources
