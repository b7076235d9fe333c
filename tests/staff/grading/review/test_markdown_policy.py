"""The TA's page shows only what the course vouches for (staff/grading/review/markdown_policy.py): each hostile
input alone and the legitimate ones (attachments, markdown formatting, formulas, code, tables), then
a graded notebook with a hostile free-text answer and hostile outputs, rendered by nbgrader's real
``formgrade`` template with the course's nbgrader_config.py, as the formgrader's SubmissionHandler
does, and by its ``feedback`` template. In Chromium: tests/e2e/test_formgrader.py."""

from __future__ import annotations

import base64
import io
import re

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from nbgrader.server_extensions.formgrader.handlers import template_path
from traitlets.config.loader import PyFileConfigLoader

from course.settings import ROOT
from staff.grading.review import formgrader, markdown_policy

ANSWER = (
    "My answer: $j < i$ and `a<b` hold. <script>alert('answer')</script> <img src=x onerror=alert('img')>\n\n"
    '<a href="javascript:alert(\'link\')">click</a> <iframe src="https://evil.example"></iframe> **bold**'
)
#: An answer dressed up as the page: a full-page overlay and a fake "As submitted" box in the
#: page's own Bootstrap classes, ids of the page's score boxes, and inline styles.
DRESSED = (
    '<div class="modal-backdrop fade in" style="position:fixed;top:0;left:0;right:0;bottom:0;z-index:9999">'
    'x</div>\n<details class="panel panel-info submitted-outputs" open data-grade-id="q_cls">'
    '<summary class="panel-heading">As submitted (the student\'s own run)</summary>'
    '<div class="panel-body" id="q_cls">All correct.</div></details>'
)
#: Images that would make a request: a GET with a side effect in the TA's session, a third party's
#: tracking pixel, a protocol-relative host, files of the server, and types that are not pictures.
REQUESTS = [
    '<img src="/hub/logout">',
    '<img src="../../logout">',
    '<img src="logout">',
    '<img src="http://example.invalid/track.png">',
    '<img src="https://example.invalid/t.gif">',
    '<img src="//example.invalid/t.png">',
    '<img src="files/secret.png">',
    '<img src="data:image/svg+xml;base64,PHN2Zy8+">',
    '<img src="data:text/html;base64,PGI+">',
    '<img srcset="http://example.invalid/a.png 1x">',
    '<a href="/hub/logout">log out</a>',
    '<a href="data:text/html,hi">x</a>',
    '<video src="http://example.invalid/v.mp4"></video>',
    '<link rel="stylesheet" href="http://example.invalid/s.css">',
    '<object data="/logout"></object>',
    '<form action="/hub/logout"><button>go</button></form>',
    '<base href="http://example.invalid/">',
    '<div style="background:url(/hub/logout)">x</div>',
    '<svg><image href="/hub/logout"/></svg>',
]


def _png(width: int = 12, height: int = 6) -> str:
    from matplotlib.figure import Figure

    fig, out = Figure(figsize=(width / 10, height / 10), dpi=10), io.BytesIO()
    fig.savefig(out, format="png")
    return base64.b64encode(out.getvalue()).decode()


def _tags(html: str) -> list[str]:
    return re.findall(r"<[a-zA-Z][^>]*>", html)  # what the browser parses as markup (escaped text is not)


def test_nothing_of_the_students_markup_runs_or_dresses_up_as_the_page():
    html = markdown_policy.clean(f"{ANSWER}\n\n{DRESSED}")
    assert not [
        t
        for t in _tags(html)
        if re.search(
            r"\s(on\w+|class|style|id|data-[\w-]+)\s*=|javascript:|^<(iframe|script|details|summary)", t, re.I
        )
    ]
    assert "alert('answer')" not in html  # a script's text goes with it
    assert (
        "As submitted (the student's own run)" in html and "All correct." in html
    )  # the words stay, as text
    assert "$j &lt; i$" in html and "<code>a&lt;b</code>" in html and "<strong>bold</strong>" in html


@pytest.mark.parametrize("markup", REQUESTS)
def test_no_image_link_or_resource_that_makes_a_request(markup):
    for html in (
        markdown_policy.clean(f"Look: {markup}"),
        markdown_policy.clean_html(markup),
    ):  # an answer, an output
        assert not re.search(r"(src|href|srcset|action|data|style)\s*=", html, re.I), html


def test_the_cells_own_attachments_show_as_data_images():
    png = _png()
    attachments = {"plot.png": {"image/png": png}, "drawing.svg": {"image/svg+xml": "PHN2Zy8+"}}
    # As Jupyter writes a pasted image, and as an <img> naming it (JupyterLab shows both).
    html = markdown_policy.clean(
        'Mine: ![my plot](attachment:plot.png "the plot")\n\n'
        '<img src="attachment:plot.png" width="300" height="1e9;x" alt="sized">',
        attachments,
    )
    assert html.count(f'src="data:image/png;base64,{png}"') == 2
    assert 'alt="my plot"' in html and 'title="the plot"' in html and 'width="300"' in html
    assert "height" not in html
    # a data: image written out is one too; an SVG attachment (which can hold anything) is not shown
    assert f'src="data:image/png;base64,{png}"' in markdown_policy.clean(f"![x](data:image/png;base64,{png})")
    assert "src=" not in markdown_policy.clean('<img src="attachment:drawing.svg">', attachments)
    # an attachment that is not there: the answer as text, not an error page for the TA
    assert "never attached" in markdown_policy.clean(
        "I never attached ![it](attachment:gone.png)", attachments
    )


def test_markdown_formulas_code_and_tables_stay():
    source = (
        "# Why it scales\n\nThe *scores* grow like $\\sqrt{d_k}$:\n\n$$\\mathrm{softmax}(QK^T/\\sqrt{d_k})V$$\n\n"
        "1. first\n2. second\n\n> quoted\n\n```python\nif a < b:\n    print(a)\n```\n\n"
        "| heads | time |\n|---|--:|\n| 12 | 3.5 s |\n\n[the paper](https://arxiv.org/abs/1706.03762) and "
        "H<sub>2</sub>O, x<sup>2</sup>, ~~no~~"
    )
    html = markdown_policy.clean(source)
    for part in (
        "<h1>Why it scales</h1>",
        "<em>scores</em>",
        "$\\sqrt{d_k}$",
        "$$\\mathrm{softmax}(QK^T/\\sqrt{d_k})V$$",
        "<ol>",
        "<li>second</li>",
        "<blockquote>",
        "<th>heads</th>",
        "<td>3.5 s</td>",
        '<a href="https://arxiv.org/abs/1706.03762" rel="noopener noreferrer">the paper</a>',
        "<sub>2</sub>",
        "<sup>2</sup>",
        "<del>no</del>",
    ):
        assert part in html, (part, html)
    code = re.sub(r"<[^>]+>", "", html.split("<pre>")[1].split("</pre>")[0])
    assert code.strip() == "if a &lt; b:\n    print(a)"
    assert "¶" not in html, "no heading anchors (a link to an id the page does not have)"
    assert html.startswith("<div>") and "\n\n" not in html  # one HTML block for the page's own markdown pass


def _page(tmp_path, monkeypatch, template: str, cells, preprocess: bool = False) -> str:
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    path = tmp_path / "graded.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setenv("JUPYTER_PATH", str(formgrader.JUPYTER_DATA))  # as make formgrader sets it
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.HTMLExporter.sanitize_html is True
    bootstrap = (
        f"{template_path}/../static/node_modules/bootstrap/dist/css"  # feedback inlines it (as nbgrader sets)
    )
    exporter = HTMLExporter(
        config=config,
        template_name=template,
        extra_template_basedirs=[template_path],
        extra_template_paths=[bootstrap],
    )
    if preprocess:  # generate_feedback runs its preprocessors (nbgrader_config.py) through the exporter
        assert "staff.grading.review.markdown_policy.SanitizeCells" in config.GenerateFeedback.preprocessors
        exporter.register_preprocessor(markdown_policy.SanitizeCells, enabled=True)
    resources = {
        "base_url": "",
        "index": 0,
        "total": 1,  # the formgrader's, then generate_feedback's
        "nbgrader": {"notebook": "graded", "score": 0.0, "max_score": 2.0, "late_penalty": 0.0},
    }
    page, _ = exporter.from_filename(str(path), resources=resources)
    return page[
        page.index("text_cell_render") :
    ]  # the notebook's cells (the page's own controls come before)


def _hostile_notebook(png: str) -> list:
    answer = nbformat.v4.new_markdown_cell(
        f"{ANSWER}\n\n{DRESSED}\n\n{' '.join(REQUESTS)}\n\n![mine](attachment:plot.png)", id="q_values"
    )
    answer.attachments = {"plot.png": {"image/png": png}}
    answer.metadata.nbgrader = {
        "grade_id": "q_values",
        "solution": True,
        "grade": True,
        "locked": False,
        "points": 2,
        "schema_version": 3,
        "score": 1.0,
    }  # (feedback shows the score)
    outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": f"<script>alert('html')</script><b>table</b>{DRESSED}" + "".join(REQUESTS),
                "text/plain": "table",
            },
        ),
        nbformat.v4.new_output(
            "display_data", data={"application/javascript": "alert('js')", "text/plain": "js"}
        ),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg onload=\"alert('svg')\"></svg>"}),
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/markdown": "[x](javascript:alert('md')) <script>alert(1)</script>"
                ' ![t](http://example.invalid/track.png) <div class="modal">m</div>'
            },
        ),
        # metadata a kernel can set (display(..., metadata=...)) that the template turns into markup
        nbformat.v4.new_output(
            "display_data", data={"image/png": png}, metadata={"filenames": {"image/png": "/hub/logout"}}
        ),
        nbformat.v4.new_output(
            "display_data", data={"text/html": "<b>framed</b>"}, metadata={"text/html": {"isolated": True}}
        ),
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": "<table><thead><tr><th>a</th></tr></thead>"
                "<tbody><tr><td>1</td></tr></tbody></table>"
            },
        ),
    ]
    code = nbformat.v4.new_code_cell("show()", id="plot", outputs=outputs)
    raw = nbformat.v4.new_raw_cell(DRESSED + '<img src="/hub/logout">', id="raw")
    broken = nbformat.v4.new_markdown_cell(
        "A figure I never attached: ![mine](attachment:missing.png)", id="extra"
    )
    return [answer, code, raw, broken]


@pytest.mark.parametrize("template", ["formgrade", "feedback"])
def test_a_hostile_answer_and_outputs_render_harmless_in_the_formgrader_and_feedback(
    tmp_path, monkeypatch, template
):
    png = _png()
    body = _page(tmp_path, monkeypatch, template, _hostile_notebook(png), preprocess=template == "feedback")
    tags = _tags(body)
    active = r"\son\w+\s*=|javascript:|^<(iframe|svg|script|object|video|link|form|base)\b"
    assert not [t for t in tags if re.search(active, t, re.I)], "an active tag"
    assert not re.findall(r"<script[^>]*>[^<]*alert", body), "a student's script"
    assert "alert('js')" not in body
    # every image is inline data, every link leaves for http(s)
    assert not [t for t in tags if re.search(r"\ssrc=\"(?!data:image/(png|jpeg|gif|svg\+xml);base64,)", t)], (
        "a request"
    )
    assert not [t for t in tags if re.search(r"\shref=\"(?!https?:)", t)]
    # nothing in the page's own classes or ids, no inline style (the template's own elements have
    # them, so: none of the student's)
    for word in (
        "modal-backdrop",
        "submitted-outputs",
        "panel-info",
        '"modal"',
        'id="q_cls"',
        "position:fixed",
    ):
        assert word not in body, word
    assert "isolated-iframe" not in body
    # what the student meant is still there: formulas and code intact, their attachment, harmless
    # HTML of an output (a table too), and a broken attachment as text
    assert "$j &lt; i$" in body and "<code>a&lt;b</code>" in body and "<strong>bold</strong>" in body
    assert f'src="data:image/png;base64,{png}"' in body and "<b>table</b>" in body and "<b>framed</b>" in body
    assert "<th>a</th>" in body and "<td>1</td>" in body
    assert "A figure I never attached" in body


def test_the_course_text_is_left_as_the_course_wrote_it(tmp_path, monkeypatch):
    """Only what the student wrote is cleaned: a markdown cell equal to the source notebook's is the
    course's own (its instructions, their HTML and links), on the grading page and in feedback."""
    own = '<details class="hint"><summary>Hint</summary>See <a href="#part-2">part 2</a>.</details>'
    source = tmp_path / "course" / "source" / "01_attention" / "01_attention.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(own)]), source)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(own), nbformat.v4.new_markdown_cell(own + " ")]
    )
    folder = tmp_path / "course" / "autograded" / "s" / "01_attention"
    formgrader_page = {
        "assignment_id": "01_attention",
        "notebook_id": "01_attention",
        "metadata": {"path": str(folder)},
    }
    feedback = {
        "nbgrader": {"assignment": "01_attention", "notebook": "01_attention"},
        "metadata": {"path": str(folder)},
    }
    for resources in (formgrader_page, feedback):
        cleaned, _ = markdown_policy.SanitizeCells().preprocess(nbformat.from_dict(nb), resources)
        assert cleaned.cells[0].source == own
        assert "class" not in cleaned.cells[1].source and "href" not in cleaned.cells[1].source
