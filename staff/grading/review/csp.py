"""The Content-Security-Policy of the pages TAs use: the formgrader's server (``make formgrader``,
the hub's formgrader service) and the hub's own pages. A second line behind :mod:`sanitize`: if
anything a student wrote ever reached a page, the browser would still fetch nothing from outside,
post no form elsewhere, load no plugin, and run no script the page did not bring.

- Every page of the formgrader's Jupyter server (JupyterLab too, which needs inline scripts and
  ``eval``): :func:`server_policy`, nothing from another origin (images ``'self'``, ``data:`` and
  ``blob:``; connections ``'self'``, which covers the kernels' websockets), no plugins, no
  ``<base>``, forms only to this server, framed only by itself (nbgrader's lab extension shows the
  formgrader in a JupyterLab tab).
- nbgrader's formgrader pages (``<base_url>formgrader/...``, the grading page showing students'
  answers and outputs): :func:`page_policy`, the same without ``'unsafe-inline'`` scripts. nbgrader's
  templates write their inline scripts before the notebook's cells (head, navigation bar), where
  nothing a student wrote is, so each of them is allowed by its SHA-256, computed as the page leaves
  the server (:class:`FormgraderPages`); among the cells only the course's own scripts
  (:data:`COURSE_SCRIPTS`). Event handlers likewise (``'unsafe-hashes'``: nbgrader's "Add new
  student...", the eye that shows a student's name). A ``<script>`` or ``onerror=`` in an answer
  does not run. ``'unsafe-eval'`` stays: MathJax 2 evaluates its configuration. Styles stay inline
  (MathJax, Bootstrap, JupyterLab set them).
- The hub (:func:`hub_policy`, set by :func:`hub.configure`): its login, sign-up and admin pages
  show no student work; the same origins, inline scripts allowed, framed by nothing.

Violations are reported to the server (``report-uri``), which logs them ("Content security
violation"): the browser tests count them.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re

from tornado.web import OutputTransform

from staff.grading.review import grade_conflicts, model_answers

#: The scripts the course adds among the grading page's cells: two TAs' saves of one grade, and the
#: model answers' open or closed state.
COURSE_SCRIPTS = (grade_conflicts.SCRIPT, model_answers.SCRIPT)

#: What every page may load and where it may send things (``about:``: MathJax 2 declares a font
#: there to time its web fonts; nothing is fetched).
COMMON = (
    "default-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self' data: about:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
)

_SCRIPT = re.compile(rb"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_HANDLER = re.compile(rb"""\son[a-z]+\s*=\s*("[^"]*"|'[^']*')""", re.IGNORECASE)
_SRC = re.compile(rb"\ssrc\s*=", re.IGNORECASE)


def _join(*directives: str) -> str:
    return "; ".join(directives)


def sha256(text: str | bytes) -> str:
    """A CSP source allowing the inline script (or, with ``'unsafe-hashes'``, handler) ``text``."""
    data = text.encode() if isinstance(text, str) else text
    return f"'sha256-{base64.b64encode(hashlib.sha256(data).digest()).decode()}'"


def server_policy(report_uri: str) -> str:
    """Every page of the formgrader's Jupyter server (JupyterLab, its API, files)."""
    return _join(
        *COMMON,
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "img-src 'self' data: blob:",
        "worker-src 'self' blob:",
        "frame-ancestors 'self'",
        f"report-uri {report_uri}",
    )


#: Where the grading page's notebook begins: before it, only nbgrader's template writes.
CELLS = b'id="notebook-container"'


def own_scripts(page: bytes) -> tuple[list[bytes], list[str]]:
    """The inline scripts and event handlers of a page before its notebook's cells (its template's:
    nothing a student wrote comes before them); all of a page without a notebook (it shows no
    student's work)."""
    template = page.split(CELLS, 1)[0]
    scripts = [body for attributes, body in _SCRIPT.findall(template) if not _SRC.search(attributes)]
    return scripts, [html.unescape(value[1:-1].decode()) for value in _HANDLER.findall(template)]


def page_policy(page: bytes, report_uri: str) -> str:
    """A formgrader page's policy: its scripts by hash (see the module's docstring)."""
    scripts, handlers = own_scripts(page)
    course = [script.removeprefix("<script>").removesuffix("</script>") for script in COURSE_SCRIPTS]
    allowed = " ".join(dict.fromkeys(sha256(s) for s in [*scripts, *course]))  # in order, once
    handlers = f" 'unsafe-hashes' {' '.join(dict.fromkeys(sha256(h) for h in handlers))}" if handlers else ""
    return _join(
        *COMMON,
        f"script-src 'self' 'unsafe-eval' {allowed}{handlers}",
        "img-src 'self' data:",
        "frame-ancestors 'self'",
        f"report-uri {report_uri}",
    )


def hub_policy(report_uri: str = "/hub/security/csp-report") -> str:
    """JupyterHub's own pages (login, sign-up, authorisation, admin): framed by nothing, as
    JupyterHub's default has it."""
    return _join(
        *COMMON,
        "script-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "frame-ancestors 'none'",
        f"report-uri {report_uri}",
    )


def _transform(prefix: str, report_uri: str) -> type[OutputTransform]:
    class FormgraderPages(OutputTransform):
        """Gives each HTML page under ``prefix`` (nbgrader's formgrader) :func:`page_policy`: the
        page is whole in its first chunk (nbgrader's handlers write it at once). A 304 (the page
        unchanged since the browser's copy) has no body to hash and sends no policy: the browser
        keeps its copy's, where the server's default would replace it."""

        def __init__(self, request):
            self.path = request.path

        def transform_first_chunk(self, status_code, headers, chunk, finishing):
            if self.path.startswith(prefix):
                if status_code == 304:
                    headers.pop("Content-Security-Policy", None)
                elif headers.get("Content-Type", "").startswith("text/html"):
                    headers["Content-Security-Policy"] = page_policy(chunk, report_uri)
            return status_code, headers, chunk

    return FormgraderPages


def _load_jupyter_server_extension(serverapp) -> None:
    """The formgrader's server: :func:`server_policy` for every page (replacing jupyter_server's and
    jupyterhub-singleuser's default), :func:`page_policy` for nbgrader's formgrader pages."""
    base = serverapp.base_url.rstrip("/") + "/"
    report_uri = f"{base}api/security/csp-report"
    app = serverapp.web_app
    app.settings.setdefault("headers", {})["Content-Security-Policy"] = server_policy(report_uri)
    # first: a compressing transform (if any) must see the policy's page, not its gzip
    app.transforms.insert(0, _transform(f"{base}formgrader", report_uri))
    serverapp.log.info(
        "formgrader: Content-Security-Policy on every page, formgrader pages' scripts by hash (%s)", __name__
    )
