"""The Content-Security-Policy of the TA's pages (staff/grading/review/csp.py): on the grading page rendered
by nbgrader's real ``formgrade`` template with the course's additions, the page's own scripts are
allowed and nothing else; the server extension sends it for formgrader pages only; the hub sends
its own. In Chromium, with the header as served: tests/e2e/test_formgrader.py and test_hub.py."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import nbformat
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader.handlers import template_path
from tornado import web
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from traitlets.config.loader import PyFileConfigLoader

from course import paths
from staff.grading.review import csp, formgrader, hub, model_answers

STUDENT_SCRIPT = "window.hostile = 1"


def _directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d}


def _grading_page(tmp_path, monkeypatch) -> bytes:
    """A submission's grading page as nbgrader's SubmissionHandler renders it (a student's script in
    an output the sanitizer would have removed, to see that the policy would not run it either)."""
    answer = nbformat.v4.new_markdown_cell("Because $a < b$.", id="q")
    answer.metadata.nbgrader = {
        "grade_id": "q",
        "solution": True,
        "grade": True,
        "locked": False,
        "points": 1,
        "schema_version": 3,
    }
    nb = nbformat.v4.new_notebook(cells=[answer])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nbformat.write(nb, tmp_path / "graded.ipynb")
    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(paths.ROOT)).load_config()
    exporter = HTMLExporter(config=config, template_name="formgrade", extra_template_basedirs=[template_path])
    page, _ = exporter.from_filename(
        str(tmp_path / "graded.ipynb"),
        resources={
            "base_url": "/services/course",
            "index": 0,
            "total": 1,
            "submission_id": "abc",
            "assignment_id": "a",
            "notebook_id": "graded",
            "student": "s",
            "last_name": "L",
            "first_name": "F",
            "notebook_path": "/x",
        },
    )
    return page.replace("</body>", f"<script>{STUDENT_SCRIPT}</script></body>").encode()


def test_the_grading_page_runs_its_own_scripts_and_no_other(tmp_path, monkeypatch):
    page = _grading_page(tmp_path, monkeypatch)
    policy = _directives(csp.page_policy(page, "/api/security/csp-report"))
    scripts = policy["script-src"]
    assert "'unsafe-inline'" not in scripts and "'none'" not in scripts
    inline = [
        body
        for attributes, body in re.findall(rb"<script\b([^>]*)>(.*?)</script>", page, re.S)
        if b"src=" not in attributes and b"x-mathjax-config" not in attributes
    ]
    assert len(inline) >= 4  # nbgrader's variables and name toggle, MathJax's loader, the conflict check
    allowed = {body for body in inline if csp.sha256(body) in scripts}
    assert allowed == set(inline) - {STUDENT_SCRIPT.encode()}, "every script of the page's own, nothing else"
    assert any(b"Backbone.sync" in body for body in allowed), "the conflict check (in the page's body)"
    model_answers_state = model_answers.SCRIPT.removeprefix("<script>").removesuffix("</script>")
    assert csp.sha256(model_answers_state) in scripts  # added among the cells with the model answers
    for handler in re.findall(rb'\son\w+="([^"]*)"', page):  # nbgrader's eye that shows the student's name
        assert csp.sha256(handler) in scripts and "'unsafe-hashes'" in scripts
    assert policy["img-src"] == ["'self'", "data:"] and policy["connect-src"] == ["'self'"]
    for directive, value in (
        ("object-src", ["'none'"]),
        ("base-uri", ["'self'"]),
        ("form-action", ["'self'"]),
        ("frame-ancestors", ["'self'"]),
        ("default-src", ["'self'"]),
    ):
        assert policy[directive] == value, directive


def test_the_server_sends_it_for_formgrader_pages_and_a_policy_for_every_other():
    class Page(web.RequestHandler):
        def get(self):
            self.write(
                "<!DOCTYPE html><html><head><script>var base_url = '';</script></head><body></body></html>"
            )

        def set_default_headers(self):  # as jupyter_server's handlers send the settings' policy
            self.set_header("Content-Security-Policy", self.settings["headers"]["Content-Security-Policy"])

    async def fetch() -> dict[str, tuple[int, str]]:
        app = web.Application(
            [(r"/base/formgrader/page", Page), (r"/base/lab", Page)], compress_response=True
        )
        csp._load_jupyter_server_extension(
            SimpleNamespace(base_url="/base/", web_app=app, log=logging.getLogger())
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = HTTPServer(app)
        server.listen(port, "127.0.0.1")
        try:
            client, got = AsyncHTTPClient(), {}
            for path in ("formgrader/page", "lab"):
                first = await client.fetch(f"http://127.0.0.1:{port}/base/{path}")
                # the browser asking again for its copy (a TA back on a page): 304, no body
                again = await client.fetch(
                    f"http://127.0.0.1:{port}/base/{path}",
                    raise_error=False,
                    headers={"If-None-Match": first.headers["Etag"]},
                )
                got[path] = first.headers.get("Content-Security-Policy", "")
                got[f"{path} again"] = (again.code, again.headers.get("Content-Security-Policy"))
            return got
        finally:
            server.stop()

    # a loop of its own, in a thread of its own: an earlier test in this worker (Playwright's sync API)
    # may have left this thread's event loop running
    with ThreadPoolExecutor(1) as thread:
        headers = thread.submit(asyncio.run, fetch()).result(timeout=60)
    page = _directives(headers["formgrader/page"])
    assert csp.sha256("var base_url = '';") in page["script-src"] and page["report-uri"] == [
        "/base/api/security/csp-report"
    ]
    assert headers["formgrader/page again"] == (304, None), "the browser's copy keeps its page's policy"
    assert headers["lab"] == csp.server_policy("/base/api/security/csp-report")
    assert headers["lab again"] == (304, headers["lab"])
    assert "'unsafe-inline'" in _directives(csp.server_policy("/r"))["script-src"]  # JupyterLab's own pages


def test_the_hub_sends_a_policy_of_its_own():
    config = PyFileConfigLoader(hub.CONFIG.name, path=str(paths.ROOT)).load_config()
    policy = _directives(config.JupyterHub.tornado_settings["headers"]["Content-Security-Policy"])
    assert policy["img-src"] == ["'self'", "data:"] and policy["object-src"] == ["'none'"]
    assert policy["connect-src"] == ["'self'"] and policy["form-action"] == ["'self'"]
    assert policy["report-uri"] == ["/hub/security/csp-report"]
