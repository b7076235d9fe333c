"""The integrity scan's flags on the TA's grading page, beside the cell each one names, as text:
each panel rendered by nbconvert's markdown2html as nbgrader's grading page renders a markdown cell
(no sanitizer after it), hostile and fuzzed flags included. In Chromium: tests/e2e/test_formgrader.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import nbformat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown import markdown2html_mistune

from staff.course_dir import CourseDir
from staff.grading.review import integrity_panel
from staff.grading.review.integrity_panel import AddIntegrityFlags, panel
from staff.grading.status import Outcome, save_status
from staff.grading.student_text import LIMIT

#: What a student could put into a grade id, a getattr string or a cell's name, to be drawn on a
#: TA's page: a blank line ending the panel's HTML block, then markdown and HTML of every kind.
HOSTILE = (
    "softmax\r\n\n\u2028\u202eevil\u200b \x00\x1b[31m\x7f\ud800 ![x](/hub/logout) [a](http://example.invalid/a)"
    " <img src=x onerror=alert(1)> <script>window.bad = 1</script> `code` *em* __strong__"
    " http://example.invalid/b www.example.invalid <http://example.invalid/c> $\\href{/logout}{x}$"
    "\n\n    indented\n# heading\n</li></ul></div><a href=/logout>x</a><!-- x --> &lt;b&gt; &#60;i&#62;"
)


class Rendered(HTMLParser):
    """What the browser would build from an HTML fragment: every element (tag, attributes) in
    order, and the text of each ``<li>`` and ``<strong>`` with character references decoded."""

    def __init__(self, fragment: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.texts: dict[str, list[str]] = {"li": [], "strong": []}
        self._open: list[str] = []
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in self.texts:
            self.texts[tag].append("")
            self._open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open:
            self.texts[self._open[-1]][-1] += data

    def handle_comment(self, data):
        self.elements.append(("!--", {}))


def renderings(cell: nbformat.NotebookNode) -> list[Rendered]:
    """The cell as nbgrader's grading page renders it (HTMLExporter's markdown2html, which the
    formgrade template calls: mistune with nbconvert's math and renderer), and as nbconvert's
    ``markdown2html_mistune`` filter does."""
    return [
        Rendered(HTMLExporter().markdown2html({"cell": cell, "resources": {}}, cell.source)),
        Rendered(markdown2html_mistune(cell.source)),
    ]


def _undo(shown: str) -> str:
    """The text a panel shows, with its visible stand-ins (``↵``, ``⇥``, ``⟨U+202E⟩``) put back."""
    shown = shown.replace("\u21b5", "\n").replace("\u21e5", "\t")
    return re.sub("\u27e8U\\+([0-9A-F]{4,6})\u27e9", lambda m: chr(int(m[1], 16)), shown)


def assert_only_text(cell: nbformat.NotebookNode, flags: list[str], where: str | None) -> None:
    """The panel's own elements and nothing else, whatever the flags hold; each flag (and the cell's
    name) shown whole as one line of text, or its first LIMIT characters and its length."""
    items = min(len(flags), integrity_panel.SHOWN) + (len(flags) > integrity_panel.SHOWN)
    for rendered in renderings(cell):
        tags = [tag for tag, _ in rendered.elements]
        assert tags == ["div", "strong", "ul"] + ["li"] * items, tags
        assert [attrs for _, attrs in rendered.elements[1:]] == [{}] * (len(tags) - 1)
        assert rendered.elements[0][1] == {
            "class": "alert alert-warning integrity-flags tex2jax_ignore mathjax_ignore"
        }
        for flag, shown in zip(flags[: integrity_panel.SHOWN], rendered.texts["li"]):
            assert "\n" not in shown and "\r" not in shown and _undo(shown) == _cut(flag)
        (heading,) = rendered.texts["strong"]
        assert (
            _undo(heading)
            == f"For review ({'the whole submission' if where is None else f'cell {_cut(where)}'})"
        )


def _cut(text: str) -> str:
    return text if len(text) <= LIMIT else f"{text[:LIMIT]}\u2026 ({len(text):,} characters)"


def _page(tmp_path, outcome):
    course = CourseDir(tmp_path)
    (tmp_path / "source").mkdir(parents=True)
    folder = course.autograded / "doejane" / "01_attention"
    folder.mkdir(parents=True)
    save_status(course, [outcome])
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("def softmax(x): ...", metadata={"nbgrader": {"grade_id": "softmax"}}),
            nbformat.v4.new_code_cell("check()", metadata={"nbgrader": {"grade_id": "test_softmax_hidden"}}),
        ]
    )
    resources = {
        "assignment_id": "01_attention",
        "notebook_id": "01_attention",
        "metadata": {"path": str(folder)},
    }
    return AddIntegrityFlags().preprocess(nb, resources)[0]


def test_flags_go_beside_their_cell_as_text_and_the_rest_on_top(tmp_path):
    flags = [
        "softmax: library: uses torch.softmax (line 3): an implementation of exercise 1 (Softmax), which asks "
        "for the student's own",
        "cell 9: imports <b>socket</b> (network) (line 1)",
    ]
    nb = _page(tmp_path, Outcome("doejane", "01_attention", "flagged", "for manual review", 1.0, flags))
    sources = [c.source for c in nb.cells]
    assert sources[2] == "def softmax(x): ..." and sources[4] == "check()" and len(sources) == 5
    # first, what it waits for and where a TA decides (staff/grading/review/flag_review.py)
    assert "<strong>Held</strong>" in sources[0]
    assert 'href="../../course/flags/01_attention/doejane"' in sources[0]
    assert_only_text(nb.cells[1], [flags[1]], None)
    assert_only_text(nb.cells[3], [flags[0]], "softmax")
    (top,) = renderings(nb.cells[1])[0].texts["li"]
    assert top == "cell 9: imports <b>socket</b> (network) (line 1)", "the student's tag, as text"


def test_hostile_flags_and_names_are_text_through_markdown2html():
    """A blank line, markdown images and links, HTML, a script, backticks, emphasis, formulas,
    control and invisible characters, in a flag and in the cell's name: no element is made of them."""
    flags = [HOSTILE, f"cell 3: {HOSTILE}", "x" * 5_000]
    cell = panel(flags, HOSTILE)
    assert "\n\n" not in cell.source, "one HTML block: no blank line ends it"
    assert_only_text(cell, flags, HOSTILE)
    for rendered in renderings(cell):
        (flag, *_) = rendered.texts["li"]
        assert "![x](/hub/logout)" in flag and "<script>window.bad = 1</script>" in flag
        assert "softmax\u27e8U+000D\u27e9\u21b5\u21b5\u27e8U+2028\u27e9\u27e8U+202E\u27e9evil" in flag, (
            "breaks and overrides shown"
        )
        assert rendered.texts["li"][2].endswith("\u2026 (5,000 characters)")


def test_many_flags_are_counted_and_the_first_shown():
    flags = [f"cell {i}: imports socket (network) (line 1)" for i in range(integrity_panel.SHOWN + 7)]
    cell = panel(flags, None)
    assert_only_text(cell, flags, None)
    rendered = renderings(cell)[0]
    assert rendered.texts["li"][-1] == "and 7 more, not shown here"
    assert f"({len(flags)} flags)" in markdown2html_mistune(cell.source)


#: Pieces a fuzzed flag is made of: markdown, HTML and formula syntax, line breaks, and any character
#: (but the panel's own stand-ins for invisible ones, so what is shown can be read back).
_PIECES = st.sampled_from(
    [
        "\n", "\n\n", "\r", "![x](/hub/logout)", "[a](http://x)", "<img src=x onerror=alert(1)>",
        "<script>", "</script>", "`", "```", "*", "_", "**", "~~", "$", "$$", "\\", "\\(", "http://x.y/z",
        "www.x.y", "<http://x>", "<", ">", "</div>", "</li>", "<!--", "-->", "<pre>", "&amp;", "&#60;",
        "    ", "# ", "> ", "- ", "1. ", "|", "---", "===", ":", "[^1]", "[a]: /logout", "\u2028", "\x00",
    ]
)  # fmt: skip
_ANY = st.text(
    st.characters(exclude_characters=["\u21b5", "\u21e5", "\u27e8", "\u27e9"]),
    max_size=8,
)
_FLAG = st.lists(st.one_of(_PIECES, _ANY), max_size=16).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flags=st.lists(_FLAG, min_size=1, max_size=4), where=st.one_of(st.none(), _FLAG))
def test_fuzzed_flags_never_make_an_element(flags, where):
    assert_only_text(panel(flags, where), flags, where)


def test_a_submission_flagged_by_the_judge_shows_the_reason_and_a_graded_one_nothing(tmp_path):
    reason = "for manual review: test cells recorded checks their tests do not make, so they score 0 (...)"
    nb = _page(tmp_path / "a", Outcome("doejane", "01_attention", "flagged", reason, 1.0, []))
    assert "recorded checks their tests do not make" in nb.cells[1].source and len(nb.cells) == 4
    nb = _page(tmp_path / "b", Outcome("doejane", "01_attention", "graded", "", 1.0, []))
    assert len(nb.cells) == 2


def test_every_preprocessor_the_grading_page_names_imports():
    """conf.json names classes by dotted path: a move or a typo would fail only on a TA's page."""
    import importlib
    import json

    from staff import course_dir

    conf = course_dir.ROOT / "staff/grading/review/jupyter/nbconvert/templates/formgrade/conf.json"
    named = [p["type"] for p in json.loads(conf.read_text())["preprocessors"].values()]
    assert "staff.grading.review.integrity_panel.AddIntegrityFlags" in named
    for dotted in named:
        module, _, name = dotted.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), dotted
