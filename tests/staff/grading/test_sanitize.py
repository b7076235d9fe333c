"""Nothing a student wrote runs in a TA's browser (staff/grading/sanitize.py): a graded notebook with
a hostile free-text answer and hostile outputs, rendered by nbgrader's real ``formgrade`` template
with the course's nbgrader_config.py, as the formgrader's SubmissionHandler does."""
from __future__ import annotations

import re

import nbformat
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader.handlers import template_path
from traitlets.config.loader import PyFileConfigLoader

from course.settings import ROOT
from staff.grading import formgrader

ANSWER = ("My answer: $j < i$ and `a<b` hold. <script>alert('answer')</script> <img src=x onerror=alert('img')>\n\n"
          "<a href=\"javascript:alert('link')\">click</a> <iframe src=\"https://evil.example\"></iframe> **bold**")
OUTPUTS = [
    nbformat.v4.new_output("display_data", data={"text/html": "<script>alert('html')</script><b>table</b>",
                                                 "text/plain": "table"}),
    nbformat.v4.new_output("display_data", data={"application/javascript": "alert('js')", "text/plain": "js"}),
    nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg onload=\"alert('svg')\"></svg>"}),
    nbformat.v4.new_output("display_data", data={"text/markdown": "[x](javascript:alert('md')) <script>alert(1)</script>"}),
]


def test_a_hostile_answer_and_outputs_render_as_text_in_the_formgrader(tmp_path, monkeypatch):
    answer = nbformat.v4.new_markdown_cell(ANSWER, id="q_values")
    answer.metadata.nbgrader = {"grade_id": "q_values", "solution": True, "grade": True, "locked": False,
                                "points": 2, "schema_version": 3}
    code = nbformat.v4.new_code_cell("show()", id="plot", outputs=OUTPUTS)
    broken = nbformat.v4.new_markdown_cell("A figure I never attached: ![mine](attachment:missing.png)", id="extra")
    nb = nbformat.v4.new_notebook(cells=[answer, code, broken])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    path = tmp_path / "graded.ipynb"
    nbformat.write(nb, path)

    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))  # as make formgrader sets it
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.HTMLExporter.sanitize_html is True
    exporter = HTMLExporter(config=config, template_name="formgrade", extra_template_basedirs=[template_path])
    page, _ = exporter.from_filename(str(path), resources={"base_url": "", "index": 0, "total": 1})

    body = page[page.index("text_cell_render"):]  # the notebook's cells (the page's own controls come before)
    tags = re.findall(r"<[a-zA-Z][^>]*>", body)  # what the browser parses as markup (escaped text is not)
    assert not [t for t in tags if re.search(r"\son\w+\s*=|javascript:|^<iframe|^<svg", t, re.I)], "an active tag"
    assert not re.findall(r"<script[^>]*>[^<]*alert", body), "a student's script"
    # what the student meant is still there, formulas and code intact, and harmless HTML of an output
    assert "$j &lt; i$" in body and "<code>a&lt;b</code>" in body and "<strong>bold</strong>" in body
    assert "<b>table</b>" in body
    assert "A figure I never attached" in body  # a broken attachment shows as text, not an error page
