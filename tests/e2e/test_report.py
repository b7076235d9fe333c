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


def test_the_report_opens_with_a_summary_of_what_needs_doing(page, graded_course):
    from staff.grading.gradebook import flag_decisions

    head = page.inner_text("p")  # the first paragraph
    assert head.startswith("Written ") and " UTC from commit " in head and "unknown" not in head, head
    rows = page.eval_on_selector_all(
        "#summary tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    status, held = load_status(graded_course), flag_decisions.held(graded_course)
    for assignment in course_dir.assignments():
        row = next(r for r in rows if r[0] == assignment)
        mine = [o for (_, a), o in status.items() if a == assignment]
        assert int(row[1]) == len(mine)
        assert int(row[3]) == sum((o["student"], assignment) in held for o in mine)
        assert row[7].endswith(" %")
    assert rows[-1][0] == "all" and int(rows[-1][1].replace(",", "")) == len(status)


def test_each_listed_submission_links_its_grading_page_and_flags_and_sorts(page, graded_course):
    links = page.eval_on_selector_all(
        "#attention tbody tr",
        "rows => rows.map(r => [r.cells[1].textContent, r.cells[2].textContent, [...r.cells[5].querySelectorAll('a')].map(a => [a.textContent, a.getAttribute('href')])])",
    )
    assert links
    for student, state, anchors in links:
        named = dict(anchors)
        assert named["grading page"].startswith("http://127.0.0.1:8888/formgrader/submissions/"), (
            student,
            anchors,
        )
        assert ("decide on flags" in named) == (state == "flagged"), (student, anchors)
    page.click("#attention th:nth-child(2)")
    students = page.eval_on_selector_all(
        "#attention tbody tr td:nth-child(2)", "cells => cells.map(c => c.textContent)"
    )
    assert students == sorted(students, key=str.lower) or students == sorted(students)


def test_the_charts_stay_readable_at_2400_submissions(tmp_path):
    """A box per assignment for the grading time, never a bar per submission (2,400: 66,000 pixels)."""
    import struct
    import time

    assignments = [f"0{i}_a" for i in range(1, 7)]
    status = {
        (f"s{i}", a): {"student": f"s{i}", "assignment": a, "seconds": 5 + (i * 7) % 40, "status": "graded"}
        for i in range(400)
        for a in assignments
    }
    found = [report.Row(s, a, 10.0, 20.0, 0.0, None) for (s, a) in status]
    start = time.monotonic()
    figures = report._figures(found, status, {a: {"t": (3, 400)} for a in assignments}, assignments, tmp_path)
    assert time.monotonic() - start < 20
    for _, name in figures:
        width, height = struct.unpack(">II", (tmp_path / name).read_bytes()[16:24])  # the PNG's header
        assert width <= 1400 and height <= 1000, (name, width, height)
