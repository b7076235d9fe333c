"""Formulas on feedback pages as MathML (staff/grading/results/formulas.py): drawn without a script,
and what a student writes between dollars is never markup, attribute or link of theirs."""

from __future__ import annotations

import html
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from staff.grading.results.formulas import ATTRIBUTES, ELEMENTS, mathml


def test_every_formula_in_text_becomes_mathml_and_code_stays_as_written():
    page = mathml(
        "<p>The score $q_i \\cdot k_j / \\sqrt{d_k}$, $$\\sum_i x_i$$ and \\(a &lt; b\\); "
        "it costs \\$5.</p><pre>$x$</pre><code>$y$</code>"
    )
    assert page.count("<math") == 3 and 'display="block"' in page and "<msqrt>" in page
    assert "<mo>&lt;</mo>" in page, "a < in a formula stays a character"
    assert page.endswith("it costs $5.</p><pre>$x$</pre><code>$y$</code>")


def test_a_students_tex_makes_no_markup_link_or_style():
    page = mathml(
        "<p>$\\text{&lt;img src=x onerror=alert(1)&gt;}$ $\\href{javascript:alert(1)}{x}$ "
        "$\\style{color:red}{x}$ $\\class{evil}{y}$ $\\unknowncommand{$</p>"
    )
    assert "<img" not in page and "<mtext>&lt;img\xa0src=x\xa0onerror=alert(1)&gt;</mtext>" in page
    assert "href" not in page and "style=" not in page and "class=" not in page


_TEX = st.lists(
    st.sampled_from(
        ["\\text{", "}", "{", "<", ">", "&", '"', "'", "\\href{", "javascript:", "\\style{", "\\class{",
         "x", "_", "^", "\\frac", "\\sqrt", "<script>", "</math>", "<img src=x>", "\\\\", "\\(", "\\)", "$"]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_TEX)
def test_whatever_is_between_dollars_only_mathml_comes_out(tex):
    page = mathml(f"<p>${html.escape(tex)}$</p>")  # as the markdown renderer leaves a student's text
    tags = _Tags()
    tags.feed(page)
    assert {name for name, _ in tags.found} <= ELEMENTS | {"p"}, (tex, page)
    assert {a for _, attrs in tags.found for a, _ in attrs} <= ATTRIBUTES, (tex, page)


class _Tags(HTMLParser):
    """Every element and its attributes, as a browser's parser sees them."""

    def __init__(self):
        super().__init__()
        self.found = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))
