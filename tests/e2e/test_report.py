"""The instructor report (`make report`, reports/report.html) as an instructor reads it in Chromium
on a laptop: the page fits a 1,280-px window, every graded sample is a row of the scores table,
which filters by assignment and status and sorts on a click, and each submission to look at lists
its reasons one per line, the first few shown and the rest folded with their count."""

from __future__ import annotations

import pytest

from staff import course_dir
from staff.authoring import samples
from staff.grading.results import report
from staff.grading.status import load_status

pytestmark = pytest.mark.notebooks


@pytest.fixture(scope="module")
def page(browser, graded_course, tmp_path_factory):
    written = report.write_report(graded_course, tmp_path_factory.mktemp("report"))
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto(written.as_uri())
    yield tab
    tab.close()


def _visible(page, column: int) -> list[str]:
    return page.eval_on_selector_all(
        f"#scores tbody tr:not([hidden]) td:nth-child({column})", "cells => cells.map(c => c.textContent)"
    )


def test_the_report_fits_the_window_and_lists_every_sample(page):
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    rows = set(zip(_visible(page, 1), _visible(page, 2), strict=True))
    wanted = {(s.assignment, s.student) for a in course_dir.assignments() for s in samples.load(a)}
    assert wanted <= rows and len(rows) == len(_visible(page, 1))


def test_the_scores_filter_by_assignment_and_status_and_sort_on_a_click(page, graded_course):
    page.select_option("#by-assignment", "03_visualising_attention")
    assert set(_visible(page, 1)) == {"03_visualising_attention"}
    assert page.inner_text("#shown") == str(len(samples.load("03_visualising_attention")))
    page.click("#scores th:nth-child(4)")  # automatic points, ascending
    points = [float(p) for p in _visible(page, 4)]
    assert points == sorted(points) and len(set(points)) > 1
    page.click("#scores th:nth-child(4)")  # and descending
    assert [float(p) for p in _visible(page, 4)] == sorted(points, reverse=True)
    page.select_option("#by-status", "flagged")
    flagged = {
        s
        for (s, a), o in load_status(graded_course).items()
        if a == "03_visualising_attention" and o["status"] == "flagged"
    }
    assert set(_visible(page, 2)) == flagged and flagged
    page.select_option("#by-assignment", "")
    page.select_option("#by-status", "")
    assert int(page.inner_text("#shown")) == page.locator("#scores tbody tr").count()


def test_each_submission_to_look_at_lists_its_reasons_and_folds_the_rest(page, graded_course):
    status = load_status(graded_course)
    many = status[("zero_work_tricks", "01_attention")]
    items = report.reason_items(many["reason"])
    assert len(items) > report.FIRST_REASONS + 1  # it takes each shortcut
    row = page.locator("#attention tbody tr", has_text="zero_work_tricks").filter(has_text="01_attention")
    assert row.locator("td:nth-child(4) > ul > li").count() == report.FIRST_REASONS
    assert row.locator("summary").inner_text() == f"{len(items) - report.FIRST_REASONS} more"
    assert row.locator("details li").count() == len(items) - report.FIRST_REASONS
    # whole items, never cut mid-word: every flag the grader stored is one of the listed reasons
    assert many["flags"] and set(many["flags"]) <= set(items)
    looked_at = {(o["assignment"], o["student"]) for o in status.values() if o["status"] != "graded"}
    listed = page.eval_on_selector_all(
        "#attention tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[1].textContent])"
    )
    assert {tuple(r) for r in listed} == looked_at
