"""A student's feedback page as they read it: one HTML file opened from disk in Chromium with no
network, in a 1,280-pixel window. It fits the window (the wide architecture diagram scaled), a failed
check's long line wraps, the formulas are drawn (MathML written into the page: no MathJax, no CDN),
and the page asks for nothing outside itself. A held submission's page says it is under review."""

from __future__ import annotations

import pytest

from staff.grading.gradebook import flag_decisions
from staff.grading.results import feedback

pytestmark = pytest.mark.notebooks

ASSIGNMENT, PARTIAL = "01_attention", "partial"  # 13.25 of 23: failed checks with long reasons


@pytest.fixture(scope="module")
def offline(browser, graded_course):
    feedback.feedback([ASSIGNMENT], course=graded_course)
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.asked = []

    def only_the_file(route):
        tab.asked.append(route.request.url)
        if route.request.url.startswith(("file:", "data:")):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    tab.route("**/*", only_the_file)
    yield tab
    tab.close()


def _open(tab, course, student: str) -> None:
    tab.goto((course.feedback / student / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri())
    tab.wait_for_load_state("load")


def test_a_partial_credit_page_reads_offline_fits_the_window_and_draws_its_formulas(offline, graded_course):
    _open(offline, graded_course, PARTIAL)
    assert offline.evaluate("document.documentElement.scrollWidth") <= 1280
    assert "(Score: 13.25 / " in offline.inner_text("h4")
    # every line of a check or of code wraps inside its box: none runs off to the right
    overflowing = offline.evaluate(
        """[...document.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1)
            .map(p => p.innerText.slice(0, 80))"""
    )
    assert not overflowing, overflowing
    failed = offline.evaluate(
        "[...document.querySelectorAll('pre')].map(p => p.innerText).filter(t => t.includes('✗'))"
    )
    assert failed, "the partial sample's page shows its failed checks"
    formulas = offline.evaluate(
        """[...document.querySelectorAll('math')].map(m => { const r = m.getBoundingClientRect();
            return [r.width, r.height]; })"""
    )
    assert len(formulas) >= 10 and all(w > 0 and h > 0 for w, h in formulas), formulas[:5]
    text = offline.inner_text("body")
    assert "\\sqrt" not in text and "\\frac" not in text and "$d_k$" not in text, "no formula left as TeX"
    assert all(url.startswith(("file:", "data:")) for url in offline.asked), [
        u for u in offline.asked if not u.startswith(("file:", "data:"))
    ]
    assert not offline.evaluate("typeof MathJax !== 'undefined'")


def test_a_held_page_says_under_review_and_shows_no_points(offline, graded_course):
    held = sorted(s for s, a in flag_decisions.held(graded_course) if a == ASSIGNMENT)
    assert held
    _open(offline, graded_course, held[0])
    assert offline.inner_text("h4").endswith("(under review: no score yet)")
    body = offline.inner_text("body")
    assert "Under review." in body and "Score" not in body and "✓" not in body
