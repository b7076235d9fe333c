"""What a student wrote, made inert for a staff page (staff/grading/student_text.py): text in every
place a page puts it (an HTML block of a markdown cell, a markdown paragraph, an attribute, an HTML
file), and the instructor report's reasons through it. The grading page's flags:
tests/staff/grading/review/test_integrity_panel.py."""

from __future__ import annotations

import html

import pytest
from nbconvert.filters.markdown import markdown2html_mistune

from staff.grading.results import report
from staff.grading.student_text import LIMIT, inert_html

HOSTILE = (
    "a\n\n![x](/hub/logout) [l](http://example.invalid) <img src=x onerror=alert(1)> <script>s()</script>"
    " `c` *em* _em_ http://example.invalid/b www.example.invalid $x$ \\(y\\) \"q' & \u202e \x00"
)


@pytest.mark.parametrize(
    "wrap",
    [
        lambda text: f"<div>\n<p>{text}</p>\n</div>",  # an HTML block, as the grading page's panels
        lambda text: f"Flagged: {text}",  # a markdown paragraph
        lambda text: f'<div title="{text}">\nx\n</div>',  # a quoted attribute
        lambda text: f"<div title='{text}'>\nx\n</div>",
    ],
)
def test_inert_text_makes_no_element_wherever_markdown2html_meets_it(wrap):
    rendered = markdown2html_mistune(wrap(inert_html(HOSTILE)))
    # (formulas stay text in the source: MathJax reads the page, kept off by the class NO_MATH)
    for made in ("<img", "<a ", "<script", "<em>", "<code>", "<strong>", "<br", "<math"):
        assert made not in rendered, (made, rendered)
    assert rendered.count("<p>") <= 1 and "\n\n" not in inert_html(HOSTILE)
    shown = html.unescape(rendered)
    assert "![x](/hub/logout) [l](http://example.invalid) <img src=x onerror=alert(1)>" in shown
    assert "a\u21b5\u21b5!" in shown and "\u27e8U+202E\u27e9 \u27e8U+0000\u27e9" in shown, (
        "breaks and controls shown"
    )


def test_a_long_text_is_cut_with_its_length_and_lines_kept_only_when_asked():
    assert inert_html("y" * 1000) == "y" * LIMIT + "\u2026 (1,000 characters)"
    assert inert_html("y" * 1000, None) == "y" * 1000
    assert inert_html("a\r\nb\tc", None, lines=True) == "a&#10;b&#9;c"
    assert inert_html("a\r\nb\tc") == "a\u27e8U+000D\u27e9\u21b5b\u21e5c"
    assert inert_html("caf\u00e9 \u00fcber x_1") == "caf\u00e9 \u00fcber x&#95;1"  # letters stay letters
    assert inert_html("\ud800").encode() == "\u27e8U+D800\u27e9".encode(), (
        "a lone surrogate cannot break UTF-8"
    )


def test_the_reports_reasons_are_text_cut_at_a_length():
    reasons = report._reasons_html(f"for manual review: {HOSTILE}; cell 3: {'z' * 5000}")
    shown = html.unescape(reasons)
    assert "<img" not in reasons and "<script" not in reasons and reasons.count("<li>") == 2
    assert "<img src=x onerror=alert(1)>" in shown and "\u2026 (5,008 characters)" in shown
