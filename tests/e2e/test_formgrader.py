"""A TA grades free-text answers in nbgrader's formgrader, in real Chromium (Playwright driving
Debian's chromium), on the course graded once per run (every bundled sample, with names).

The flow: JupyterLab loads with nbgrader's extensions; the formgrader lists the assignments;
Manual Grading lists an assignment's submissions; the TA opens one that needs manual grading,
reads the free-text answer with the model answer from the source notebook under it (formgrader
only, never in feedback: tests/staff/grading/results/test_feedback.py), enters points and a comment, and
moves to the next student. The gradebook then holds those points, `grades.csv` shows them with
nothing pending, and re-grading the submission keeps them. Under an answer about the student's own
numbers, the outputs the student submitted for the cells the question names sit beside the graded
run's (staff/grading/review/submitted_outputs.py; hostile outputs: tests/staff/grading/review/test_submitted_outputs.py). Formulas render and nothing loads from
the internet. A student's HTML in an answer and in outputs neither runs, nor makes a request, nor
dresses up as the page, while a figure pasted into the answer shows (staff/grading/review/markdown_policy.py),
and every page sends a Content-Security-Policy that the whole flow never runs into (csp.py). The
integrity scan's flags, which quote what the student wrote, show as text beside their cell
(staff/grading/review/integrity_panel.py). Screenshots of each step go to the test's folder (and to ``--screenshots=DIR``:
`make screenshots` writes docs/ta.md's into docs/figures/).
"""

from __future__ import annotations

import base64
import csv
import io
import shutil

import nbformat
import pytest
from nbgrader.api import Gradebook

from course import paths
from staff import course_dir
from staff.grading import autograde
from staff.grading.execution import skipping
from staff.grading.results import export
from staff.grading.review import formgrader
from staff.grading.status import Outcome, save_status, status_file
from support import free_port

pytestmark = pytest.mark.notebooks
ASSIGNMENT = "02_distilbert"
STUDENT = "correct"  # the sample whose free-text answers are good ones
NAME = "Johnson, Katherine"  # its name in samples/roster.csv, as the formgrader lists it


def _model_answer_sentences(grade_id: str) -> list[str]:
    """The sentences of a question's model answer as the source notebook has them (markdown's code
    and emphasis marks dropped, as the page shows them), read here without the code under test."""
    cell = next(
        c
        for c in nbformat.read(course_dir.source_notebook(ASSIGNMENT), as_version=4).cells
        if course_dir.nbgrader(c).get("grade_id") == grade_id
    )
    solution = cell.source.split("BEGIN SOLUTION", 1)[1].split("\n", 1)[1].split("### END SOLUTION")[0]
    plain = solution.replace("`", "").replace("*", "")
    return [" ".join(s.split()) for s in plain.split(". ") if len(s.strip()) > 20]


@pytest.fixture(scope="module")
def server(browser, graded_course, tmp_path_factory):
    # The course's own configuration, as an instructor's course folder has it (its exchange, ...).
    shutil.copy2(paths.ROOT / "nbgrader_config.py", graded_course.root / "nbgrader_config.py")
    log = tmp_path_factory.mktemp("formgrader") / "jupyter.log"
    running = formgrader.start(graded_course, port=free_port(), log=log)
    yield running, log
    running.stop()


@pytest.fixture(scope="module")
def page(server, browser):
    running, _ = server
    tab = browser.new_page(viewport={"width": 1280, "height": 900})  # one tab: the TA's session
    tab.problems = []  # what a TA would see in the console: errors and failed requests
    tab.on("pageerror", lambda error: tab.problems.append(f"page error: {error}"))
    # A request the browser cancels when the TA moves to another page (net::ERR_ABORTED) is not a
    # problem; one that cannot be served (an internet address, offline) is.
    tab.on(
        "requestfailed",
        lambda request: (
            request.url.startswith("about:")
            or "ERR_ABORTED" in (request.failure or "")
            or tab.problems.append(f"request failed: {request.url} ({request.failure})")
        ),
    )
    # Requests under way: leaving JupyterLab while it still fetches its settings makes the server log
    # a StreamClosedError traceback (the browser hung up), which test_no_server_errors_while_grading
    # would rightly count; a test that leaves the lab first waits for them (_settle).
    tab.in_flight = set()
    tab.on("request", lambda request: tab.in_flight.add(request))
    tab.on("requestfinished", lambda request: tab.in_flight.discard(request))
    tab.on("requestfailed", lambda request: tab.in_flight.discard(request))
    tab.goto(running.page("lab"))  # logs in with the token (a cookie for every later page)
    yield tab
    tab.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("screenshots")
    wanted = request.config.getoption("screenshots")

    def shoot(tab, name: str):
        path = folder / f"formgrader-{name}.png"
        tab.screenshot(path=str(path))
        if wanted:
            shutil.copy2(path, f"{wanted}/{path.name}")

    return shoot


def _settle(tab, quiet_ms: int = 1000, timeout_ms: int = 60_000) -> None:
    """Wait until the page has had no request under way for `quiet_ms` (JupyterLab goes on
    fetching settings and lists after its panels show)."""
    quiet = waited = 0
    while quiet < quiet_ms:
        assert waited < timeout_ms, f"requests still under way: {[r.url for r in tab.in_flight]}"
        tab.wait_for_timeout(100)
        waited += 100
        quiet = 0 if tab.in_flight else quiet + 100


def test_jupyterlab_loads_nbgrader_extensions(page, shots):
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.get_by_text("Nbgrader", exact=True).first.wait_for(timeout=30_000)
    _settle(page)
    shots(page, "1-lab")


def test_formgrader_lists_the_assignments_with_their_submissions(page, server, shots):
    running = server[0]
    page.goto(f"{running.url}/formgrader/manage_assignments")
    page.wait_for_selector("text=02_distilbert", timeout=30_000)
    text = page.inner_text("body")
    for assignment in (
        "01_attention",
        "02_distilbert",
        "03_visualising_attention",
        "04_finetuning",
        "05_decoder",
        "06_training_decoders",
        "07_question_answering",
    ):
        assert assignment in text
    assert "{{" not in page.content()
    shots(page, "2-assignments")


def test_manage_students_shows_real_names(page, server):
    page.goto(f"{server[0].url}/formgrader/manage_students")
    page.wait_for_selector("text=Lovelace", timeout=30_000)
    assert "None, None" not in page.inner_text("body")


def test_ta_grades_a_free_text_answer_and_moves_on(page, server, graded_course, shots):
    running = server[0]
    page.goto(f"{running.url}/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}")
    page.wait_for_selector("table a", timeout=30_000)
    shots(page, "3-submissions")
    links = page.eval_on_selector_all(
        "table a", "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])"
    )
    href = next(h for text, h in links if text == NAME)  # the row's (hidden) name link
    page.problems.clear()  # what the grading page itself loads
    page.locator(f"table a[href='{href}']").first.click()  # "Submission #n", as a TA clicks it
    page.wait_for_selector("#q_cls", timeout=30_000)
    body = page.inner_text("body")
    assert "nearly every head keeps [CLS] on itself" in body, "the student's free-text answer is shown"
    # Under each free-text answer, its model answer from the source notebook, labelled, open, and
    # in the cell right after that answer's cell (the one holding its points box).
    for grade_id in ("q_cls", "q_padding"):
        after = page.evaluate(
            "id => { const next = document.getElementById(id).closest('.cell').nextElementSibling;"
            " const d = next && next.querySelector('details.model-answer');"
            " return d && [d.dataset.gradeId, d.open, d.querySelector('summary').innerText]; }",
            grade_id,
        )
        assert after and after[0] == grade_id and after[1] and after[2].startswith("Model answer"), after
        shown = page.locator(f"details.model-answer[data-grade-id={grade_id}] .panel-body")
        assert shown.is_visible()
        text = " ".join(shown.inner_text().split())
        sentences = _model_answer_sentences(grade_id)
        assert sentences and all(s in text for s in sentences), (grade_id, text[:300])
    assert "{{" not in page.content(), "no unfilled placeholder on the grading page"
    # Formulas are typeset by the server's own MathJax (no CDN), and nothing failed to load.
    page.wait_for_function(
        "window.MathJax && MathJax.Hub && document.querySelector('.MathJax')", timeout=30_000
    )
    assert not page.problems, page.problems
    # formgrade.js binds the score and comment boxes only once its grades and comments have been
    # fetched: a box filled before that is never saved (no PUT; seen on a loaded machine).
    page.wait_for_function(
        "formgrader.grades && formgrader.grades.loaded && formgrader.comments.loaded", timeout=30_000
    )
    with page.expect_response(lambda r: "/api/grade/" in r.url and r.request.method == "PUT"):
        page.fill("#q_cls", "3.5")
        page.press("#q_cls", "Tab")
    with page.expect_response(lambda r: "/api/comment/" in r.url and r.request.method == "PUT"):
        page.fill("#q_cls-comment", "Good on (a); (b) gives the two ratios but not why they differ.")
        page.press("#q_cls-comment", "Tab")
    with page.expect_response(lambda r: "/api/grade/" in r.url and r.request.method == "PUT"):
        page.fill("#q_padding", "2")
        page.press("#q_padding", "Tab")
    # Both answers with their model answers in view, the first just below the fixed navigation bar
    # (once formgrade.js has finished its 500 ms scroll to the focused box).
    page.wait_for_function("MathJax.loaded && !$('html, body').is(':animated')", timeout=30_000)
    page.evaluate(
        "window.scrollTo(0, document.getElementById('q_cls').closest('.cell')"
        ".getBoundingClientRect().top + window.scrollY - 70)"
    )
    page.wait_for_timeout(300)  # the fixed bar settles (a shot right after a scroll may catch it moving)
    shots(page, "4-graded")
    # A TA who has read a model answer closes it; it stays closed for the next students.
    page.click("details.model-answer[data-grade-id=q_padding] > summary")
    page.wait_for_function(
        f"localStorage.getItem('model-answer-open:{ASSIGNMENT}/{ASSIGNMENT}/q_padding') === '0'"
    )
    graded_url = page.url
    page.click("a:has-text('Next')")
    # The next student's submission (or, after the last one, the list it came from).
    page.wait_for_url(lambda url: url != graded_url and not url.rstrip("/").endswith("/next"), timeout=30_000)
    if "/formgrader/submissions/" in page.url:
        page.wait_for_selector("#q_cls", timeout=30_000)
        state = page.eval_on_selector_all(
            "details.model-answer", "ds => ds.map(d => [d.dataset.gradeId, d.open])"
        )
        assert dict(state) == {"q_cls": True, "q_padding": False}, state
    else:
        page.wait_for_selector("table a", timeout=30_000)
    shots(page, "5-next")

    with Gradebook(graded_course.db_url) as gb:
        assert gb.find_grade("q_cls", ASSIGNMENT, ASSIGNMENT, STUDENT).manual_score == 3.5
        assert gb.find_grade("q_padding", ASSIGNMENT, ASSIGNMENT, STUDENT).manual_score == 2
        comment = gb.find_comment("q_cls", ASSIGNMENT, ASSIGNMENT, STUDENT).manual_comment
        assert comment.startswith("Good on (a)")

    with export.export(graded_course).open() as f:
        row = next(
            r for r in csv.DictReader(f) if (r["student_id"], r["assignment"]) == (STUDENT, ASSIGNMENT)
        )
    assert float(row["manual_pending"]) == 0.0 and float(row["raw_score"]) == 44 + 5.5

    outcome = autograde.grade_one(graded_course, STUDENT, ASSIGNMENT, autograde.Limits())
    assert outcome.status == "graded"
    with Gradebook(graded_course.db_url) as gb:
        assert gb.find_grade("q_cls", ASSIGNMENT, ASSIGNMENT, STUDENT).manual_score == 3.5
        assert gb.find_submission(ASSIGNMENT, STUDENT).score == 44 + 5.5


#: Assignments whose questions refer to cells (course.refers_to): each question and the cell it reads.
#: 05's timing and 06's generated text and attention figure only teach, so graded runs leave them out.
OWN_RUN_QUESTIONS = {
    "05_decoder": (("q_cache", "cache_speed"),),
    "06_training_decoders": (("q_temperature", "samples"), ("q_pattern", "plot_attention")),
}


def _figure() -> dict:
    from matplotlib.figure import Figure

    fig, png = Figure(figsize=(8, 3), dpi=50), io.BytesIO()  # 400 x 150 pixels, saved as a notebook does
    fig.add_subplot().plot([32, 500], [1.8, 19.0], "o-", color="tab:green")
    fig.savefig(png, format="png")
    return {"image/png": base64.b64encode(png.getvalue()).decode(), "text/plain": "<Figure size 400x150>"}


@pytest.fixture
def own_run(graded_course, request):
    """The ``correct`` sample of an assignment as a student hands it in after running it with the
    full settings (samples are submitted without outputs): its own timings up to 500 tokens, or its
    own generated text, and figures in the cells the questions name. Put back as it was afterwards."""
    assignment = request.param
    path = graded_course.submitted / STUDENT / assignment / f"{assignment}.ipynb"
    original = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    figure = _figure()
    # The numbers and text its answers quote (samples/<assignment>/correct.py).
    own = {
        "cache_speed": [
            nbformat.v4.new_output("display_data", data=figure),
            nbformat.v4.new_output(
                "stream",
                name="stdout",
                text=(
                    "  32 tokens:   0.61 s without the cache,   0.34 s with it:  1.8x\n"
                    " 500 tokens: 108.87 s without the cache,   5.73 s with it: 19.0x\n"
                ),
            ),
        ],
        "samples": [
            nbformat.v4.new_output(
                "stream",
                name="stdout",
                text=(
                    "--- temperature 0 (greedy):\nLOVE, n.  A the the the sore of the sore of the sore\n"
                    "--- temperature 1.5:\nLOVE, n.  Lqx, vhe'z oorT,, plansn\n"
                ),
            )
        ],
        "plot_attention": [nbformat.v4.new_output("display_data", data=figure)],
    }
    own = {cell: own[cell] for _, cell in OWN_RUN_QUESTIONS[assignment]}
    for cell in nb.cells:
        if course_dir.nbgrader(cell).get("grade_id") in own:
            cell.outputs = own[course_dir.nbgrader(cell)["grade_id"]]
    nbformat.write(nb, path)
    yield assignment, own
    path.write_bytes(original)


@pytest.mark.parametrize("own_run", sorted(OWN_RUN_QUESTIONS), indirect=True)
def test_ta_sees_the_students_own_outputs_beside_the_graded_run(page, server, graded_course, own_run, shots):
    """Under a free-text answer about the student's own numbers, the outputs the student submitted
    for the cells the question names, labelled, beside what the grader's smaller run printed (or its
    note that it left a cell that only teaches out)."""
    assignment, own = own_run
    questions = OWN_RUN_QUESTIONS[assignment]
    page.goto(f"{server[0].url}/formgrader/gradebook/{assignment}/{assignment}")
    page.wait_for_selector("table a", timeout=30_000)
    links = page.eval_on_selector_all(
        "table a", "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])"
    )
    page.problems.clear()
    page.goto(server[0].url + next(h for text, h in links if text == NAME))
    page.wait_for_selector(f"#{questions[0][0]}", timeout=30_000)
    graded = nbformat.read(
        graded_course.autograded / STUDENT / assignment / f"{assignment}.ipynb", as_version=4
    )
    graded_text = {
        course_dir.nbgrader(c).get("grade_id"): "".join(o.get("text", "") for o in c.outputs)
        for c in graded.cells
        if c.cell_type == "code"
    }
    for question, cell in questions:
        # the cell only teaches: graded runs leave it out (a note in its place), so what the answer
        # quotes is the student's own, shown beside the note
        assert graded_text[cell] == skipping.NOTE, cell
        # The answer's cell, then its model answer, then what the student submitted.
        after = page.evaluate(
            "id => { const model = document.getElementById(id).closest('.cell').nextElementSibling;"
            " const next = model.nextElementSibling;"
            " const d = next && next.querySelector('details.submitted-outputs');"
            " return [!!model.querySelector('details.model-answer'), d && d.dataset.gradeId,"
            " d && d.open, d && d.querySelector('summary').innerText]; }",
            question,
        )
        assert after[:3] == [True, question, True] and after[3].startswith(
            "As submitted (the student's own run)"
        ), after
        shown = page.locator(
            f"details.submitted-outputs[data-grade-id={question}] .submitted-cell[data-cell={cell}]"
        )
        mine, theirs = shown.locator(".as-submitted"), shown.locator(".graded-run")
        assert mine.is_visible() and theirs.is_visible()
        assert (
            "grade the answer against the submitted numbers" in shown.locator(".differs").inner_text().lower()
        )
        # Side by side: the same row, the student's own run on the left. Both boxes measured in one
        # layout (one script): the page may still move while formulas and figures above it render.
        left, right = shown.evaluate(
            "el => [el.querySelector('.as-submitted'), el.querySelector('.graded-run')]"
            ".map(b => { const r = b.getBoundingClientRect();"
            " return {x: r.left, y: r.top, width: r.width}; })"
        )
        assert abs(left["y"] - right["y"]) < 2 and left["x"] + left["width"] <= right["x"], (left, right)
        own_text = "".join(o.get("text", "") for o in own[cell])
        for line in filter(None, own_text.splitlines()):
            assert line.strip() in mine.inner_text()
        if graded_text[cell].strip():
            assert graded_text[cell].strip().splitlines()[-1].strip() in theirs.inner_text()
        assert "500 tokens" not in theirs.inner_text() and "Lqx, vhe'z" not in theirs.inner_text()
        if "image/png" in str(own[cell]):  # the student's figure is decoded and drawn
            assert mine.locator("img").evaluate("img => img.complete && img.naturalWidth") == 400
    assert not page.problems, page.problems
    if assignment != "05_decoder":
        return
    # In view once formgrade.js has loaded the grades and finished its scroll to the first box.
    page.wait_for_function(
        "formgrader.grades && formgrader.grades.loaded && window.MathJax && MathJax.loaded"
        " && !$('html, body').is(':animated')",
        timeout=30_000,
    )
    # The TA has read the model answer (closed), and reads the answer with the student's own run under it.
    page.click("details.model-answer[data-grade-id=q_cache] > summary")
    page.evaluate(
        "window.scrollTo(0, document.getElementById('q_cache').closest('.cell')"
        ".getBoundingClientRect().top + window.scrollY - 70)"
    )
    page.wait_for_timeout(300)
    shots(page, "6-submitted-outputs")


HOSTILE = "01_attention"  # its answers are free text; the sample of Grace Hopper carries the hostile one
#: What a student's HTML could make a TA's browser request: a GET with a side effect in the TA's
#: session (the hub's logout; this server's own logout, which would end the TA's session), and a
#: third party's tracking pixel.
SIDE_EFFECTS = ("/hub/logout", "/logout", "example.invalid")
HOSTILE_HTML = (
    '<div class="modal-backdrop fade in" style="position:fixed;top:0;right:0;bottom:0;left:0;'
    'z-index:5000;background:#000"></div>\n'
    '<details class="panel panel-info submitted-outputs" open><summary class="panel-heading">As submitted '
    '(the student\'s own run)</summary><div class="panel-body" id="q_scaling">Everything is correct.</div>'
    '</details>\n<img src="/hub/logout"> <img src="../../../logout"> <img src="http://example.invalid/track.png">\n'
    '<script>window.hostileScript = true</script> <img src="x" onerror="window.hostileHandler = true">\n'
)


@pytest.fixture
def hostile_answer(graded_course):
    """Grace Hopper's graded assignment 1 as if she had written HTML into her answer to the scaling
    question (the page as a TA's overlay, a fake "As submitted" box in the page's own classes,
    images whose requests have side effects, a script, an event handler) beside a figure she pasted
    (a cell attachment), and her code had displayed the same HTML, a markdown output with a tracking
    image, and a PNG whose metadata names a file to load. The samples carry no attachments or
    outputs, so it is written into the autograded notebook the grading page renders; put back
    afterwards."""
    from matplotlib.figure import Figure

    path = graded_course.autograded / "partial" / HOSTILE / f"{HOSTILE}.ipynb"
    original = path.read_bytes()
    nb = nbformat.read(path, as_version=4)
    fig, png = Figure(figsize=(4, 2), dpi=10), io.BytesIO()  # 40 x 20 pixels
    fig.add_subplot().plot([0, 1], [1, 0])
    fig.savefig(png, format="png")
    figure = base64.b64encode(png.getvalue()).decode()
    cells = {course_dir.nbgrader(c).get("grade_id"): c for c in nb.cells}
    cells[
        "q_scaling"
    ].source = f"The softmax saturates without the scaling. My plot: ![my plot](attachment:plot.png)\n\n{HOSTILE_HTML}"
    cells["q_scaling"].attachments = {"plot.png": {"image/png": figure}}
    cells["scaling_experiment"].outputs += [
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": HOSTILE_HTML.replace("hostile", "output"), "text/plain": "html"},
        ),
        nbformat.v4.new_output(
            "display_data", data={"text/markdown": "![t](http://example.invalid/md.png) done"}
        ),
        nbformat.v4.new_output(
            "display_data", data={"image/png": figure}, metadata={"filenames": {"image/png": "/logout"}}
        ),
    ]
    nbformat.write(nb, path)
    yield figure
    path.write_bytes(original)


#: The elements under an element with a class, style or id (their start), in a page's script:
#: what MathJax draws is left out (it typesets formulas with classes of its own).
MARKED = """(el => [...el.querySelectorAll('[class], [style], [id]')]
    .filter(e => !e.closest('[class^="MathJax"], [id^="MathJax"]')).map(e => e.outerHTML.slice(0, 80)))"""


def _policy(response) -> dict[str, list[str]]:
    header = response.headers.get("content-security-policy", "")
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in header.split(";")) if d}


def _open_hoppers_page(page, running, selector: str) -> tuple[list[str], object, object]:
    """Grace Hopper's grading page of assignment 1, opened from its list as a TA does, until
    ``selector`` shows and no request is under way (any image the page would fetch has been asked
    for): (every address the browser asked for meanwhile, the list's response, the page's)."""
    requests = []

    def seen(request):
        requests.append(request.url)

    page.on("request", seen)
    try:
        listing = page.goto(f"{running.url}/formgrader/gradebook/{HOSTILE}/{HOSTILE}")
        page.wait_for_selector("table a", timeout=30_000)
        links = page.eval_on_selector_all(
            "table a", "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])"
        )
        page.problems.clear()
        graded = page.goto(running.url + next(h for text, h in links if text == "Hopper, Grace"))
        page.wait_for_selector(selector, timeout=30_000)
        _settle(page)
    finally:
        page.remove_listener("request", seen)
    return requests, listing, graded


def test_the_ta_sees_only_what_the_course_vouches_for(page, server, hostile_answer):
    """A student's HTML in an answer and in outputs: no overlay or fake box in the page's classes,
    no request (to an endpoint with a side effect, to a third party), no script or handler runs;
    the figure the student pasted shows; the formgrader's pages send a Content-Security-Policy."""
    running = server[0]
    requests, listing, graded = _open_hoppers_page(page, running, "#q_scaling")
    fired = [url for url in requests if any(bad in url for bad in SIDE_EFFECTS)]
    assert not fired, f"the student's HTML made the TA's browser request {fired}"
    # (had /logout been fetched, the TA would now be logged out: the page's grades would not load)
    page.wait_for_function(
        "window.MathJax && MathJax.loaded && formgrader.grades && formgrader.grades.loaded"
        " && !$('html, body').is(':animated')",
        timeout=60_000,
    )
    elsewhere = [url[:80] for url in requests if not url.startswith((running.url, "data:", "about:"))]
    assert not elsewhere, f"requests not to this server: {elsewhere}"
    ran = page.evaluate(
        "[window.hostileScript, window.hostileHandler, window.outputScript, window.outputHandler]"
    )
    assert ran == [None] * 4, ran
    assert not page.problems, page.problems
    answer = page.evaluate(
        """() => {
        const render = document.getElementById('q_scaling').closest('.cell').querySelector('.text_cell_render');
        return {marked: """
        + MARKED
        + """(render),
                details: render.querySelectorAll('details').length, text: render.innerText,
                images: [...render.querySelectorAll('img')].map(i => [(i.getAttribute('src') || '').slice(0, 22),
                                                                      i.complete && i.naturalWidth])}; }"""
    )
    assert answer["marked"] == [] and answer["details"] == 0, answer["marked"]
    assert "Everything is correct." in answer["text"]  # the student's words stay, as the student's text
    assert ["data:image/png;base64,", 40] in answer["images"], "the pasted figure shows"
    assert [src for src, _ in answer["images"] if src] == ["data:image/png;base64,"]
    outputs = page.evaluate(
        "() => [...document.querySelectorAll('.output_html, .output_markdown')].flatMap(" + MARKED + ")"
    )
    assert outputs == [], outputs
    assert page.locator(".modal-backdrop").count() == 0
    # Nothing covers the page: the score box is what a TA's click on it reaches.
    assert page.evaluate("""() => { const box = document.getElementById('q_scaling'); box.scrollIntoView({block: 'center'});
        const r = box.getBoundingClientRect();
        return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === box; }""")
    for response in (listing, graded):
        policy = _policy(response)
        assert policy.get("img-src") == ["'self'", "data:"] and policy.get("object-src") == ["'none'"], policy
        assert "'unsafe-inline'" not in policy["script-src"] and policy["connect-src"] == ["'self'"]
        assert policy["base-uri"] == ["'self'"] and policy["form-action"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'self'"]
    lab = page.request.get(running.page("lab"))  # JupyterLab's own pages: a policy too
    assert "object-src 'none'" in lab.headers.get("content-security-policy", "")


#: Flags as the integrity scan writes them, quoting what Grace Hopper chose (a grade id, a string):
#: a blank line that would end the panel's HTML block, then a markdown image and link, a bare URL,
#: HTML with a script and a handler, emphasis and a formula. Each request they could make has
#: "flag-" in its address.
HOSTILE_FLAGS = [
    "q_scaling: library: uses torch.softmax\n\n![image](/hub/logout?flag-image) "
    "[link](http://example.invalid/flag-link) http://example.invalid/flag-bare "
    '<img src="/logout?flag-html"><script>window.flagScript = true</script>'
    '<img src="x" onerror="window.flagHandler = true"> *not emphasis* $x^2$',
    "cell 9\n\n![top](/hub/logout?flag-top): imports <b>socket</b> (network) (line 1)",
]


@pytest.fixture
def hostile_flags(graded_course):
    """Grace Hopper's assignment 1 as if the integrity scan had flagged it with :data:`HOSTILE_FLAGS`
    (one about her answer ``q_scaling``, one about a cell she added, hence on top): a status line
    appended, as autograde writes it; the status file put back afterwards."""
    path = status_file(graded_course)
    original = path.read_bytes()
    save_status(
        graded_course, [Outcome("partial", HOSTILE, "flagged", "for manual review", 1.0, HOSTILE_FLAGS)]
    )
    yield HOSTILE_FLAGS
    path.write_bytes(original)


def test_flags_quoting_the_student_show_as_text(page, server, hostile_flags):
    """The flags' panels are on the page, each as text: no image, link, script or formula made of
    what the student wrote, and no request to the addresses it names."""
    requests, _, _ = _open_hoppers_page(page, server[0], "div.integrity-flags")
    # once MathJax has typeset the page (the course's formulas), the flags' "$x^2$" stays text
    page.wait_for_function("window.MathJax && MathJax.isReady", timeout=60_000)
    page.evaluate("MathJax.Hub.Queue(() => { window.typesetDone = true; })")
    page.wait_for_function("window.typesetDone && document.querySelector('.MathJax')", timeout=60_000)
    fired = [url for url in requests if "flag-" in url or any(bad in url for bad in SIDE_EFFECTS)]
    assert not fired, f"a flag made the TA's browser request {fired}"
    assert page.evaluate("[window.flagScript, window.flagHandler]") == [None, None]
    assert not page.problems, page.problems
    panels = page.evaluate(
        """() => { const cells = [...document.querySelectorAll('.cell')];
            const answer = cells.indexOf(document.getElementById('q_scaling').closest('.cell'));
            return [...document.querySelectorAll('div.integrity-flags')].map(p => ({
                tags: [...p.querySelectorAll('*')].map(e => e.tagName.toLowerCase()),
                items: [...p.querySelectorAll('li')].map(li => li.innerText),
                heading: p.querySelector('strong').innerText,
                visible: p.getBoundingClientRect().height > 0,
                after: cells.indexOf(p.closest('.cell')) - answer})); }"""
    )
    assert [p["heading"] for p in panels] == [
        "For review (the whole submission)",
        "For review (cell q_scaling)",
    ]
    assert [p["tags"] for p in panels] == [["strong", "ul", "li"]] * 2, "no element made of the flags"
    assert all(p["visible"] for p in panels)
    # the rest in the page's first cell; the answer's after it (its model answer, its outputs between)
    assert panels[0]["after"] < 0 and 0 < panels[1]["after"] <= 3, panels
    (top,), (beside,) = panels[0]["items"], panels[1]["items"]
    # Shown as the student wrote them, on one line: each line break as a visible mark
    assert top == HOSTILE_FLAGS[1].replace("\n", "\u21b5")
    assert beside == HOSTILE_FLAGS[0].replace("\n", "\u21b5")


#: A flagged sample of assignment 1 (it reaches torch.softmax as course.text.torch.softmax): its
#: student's name is the link on the assignment's list.
FLAGGED, FLAGGED_NAME = "library_by_another_path", "Lampson, Butler"


@pytest.fixture
def decisions_undone(graded_course):
    """The graded course as it was before the test's decisions: the decision table emptied, the
    regrade log put back (an accept already gave the automatic points back)."""
    from sqlalchemy import create_engine

    from staff.grading import regrade
    from staff.grading.gradebook import flag_decisions

    log = regrade.log_file(graded_course)
    original = log.read_bytes() if log.is_file() else None
    yield
    engine = create_engine(graded_course.db_url)
    with engine.begin() as connection:
        connection.execute(flag_decisions.TABLE.delete())
    engine.dispose()
    if original is None:
        log.unlink(missing_ok=True)
    else:
        log.write_bytes(original)


def test_a_ta_decides_on_flags_from_the_grading_page_both_ways(page, server, graded_course, decisions_undone):
    """From the flagged submission's grading page, the link to its flags' page; there "set to 0" with a
    comment (refused without one), then "accept": each saved in the gradebook, the export following."""
    from staff.grading.gradebook import flag_decisions
    from staff.grading.results import report

    running = server[0]
    key = (FLAGGED, "01_attention")

    def auto() -> float:
        return next(
            r.auto_score for r in report.rows(["01_attention"], graded_course) if r.student == FLAGGED
        )

    full = auto()
    assert key in flag_decisions.held(graded_course)
    page.goto(f"{running.url}/formgrader/gradebook/01_attention/01_attention")
    page.wait_for_selector("table a", timeout=30_000)
    links = page.eval_on_selector_all(
        "table a", "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])"
    )
    page.goto(running.url + next(h for text, h in links if text == FLAGGED_NAME))
    decide = page.wait_for_selector("div.integrity-decision a", timeout=30_000)
    assert "Held" in page.inner_text("div.integrity-decision")
    decide.click()
    page.wait_for_selector("form button[type=submit]", timeout=30_000)
    assert page.inner_text("h1") == f"Flags of {FLAGGED} in 01_attention"
    assert any(
        "course.text.torch.softmax" in li
        for li in page.eval_on_selector_all("ul li", "els => els.map(e => e.innerText)")
    )
    softmax = page.locator("input[name=exercises][value='exercise 1 (Softmax)']")
    assert softmax.is_checked(), "the exercise the flags name is ticked"

    page.check("input[name=decision][value=zero]")
    page.click("form button[type=submit]")  # no comment: refused, nothing changed
    page.wait_for_selector("p.error", timeout=30_000)
    assert "needs a comment" in page.inner_text("p.error") and auto() == full

    page.fill("textarea[name=comment]", "The softmax is torch's, reached through course.text.")
    page.click("form button[type=submit]")
    page.wait_for_selector("p.saved", timeout=30_000)
    assert "exercise 1 (Softmax) set to 0" in page.inner_text("body")
    assert auto() < full and key not in flag_decisions.held(graded_course)
    row = next(
        r
        for r in csv.DictReader(export.export(course=graded_course).open())
        if (r["student_id"], r["assignment"]) == key
    )
    assert float(row["score"]) == auto() and "set to 0" in row["review"]

    page.check("input[name=decision][value=accept]")
    page.click("form button[type=submit]")
    page.wait_for_selector("p.saved", timeout=30_000)
    assert "points stand" in page.inner_text("body") and auto() == full
    assert flag_decisions.decision(graded_course, *key).decision == "accept"
    assert not page.problems, page.problems


def test_no_server_errors_while_grading(server):
    log = server[1].read_text()
    assert "[C " not in log and "Traceback" not in log, log[-3000:]
    # nothing the pages of the whole flow (JupyterLab, the formgrader) need is refused by their policy
    assert "Content security violation" not in log, [
        line for line in log.splitlines() if "Content security" in line
    ][:5]


SCALE = 300  # submissions of one assignment, as a large course has them


@pytest.fixture(scope="module")
def crowded(graded_course, server, tmp_path_factory):
    """A copy of the graded course with 300 more submissions of assignment 1 in its gradebook
    (copies of a graded sample: its autograded notebook, its automatic points, a free-text answer
    to grade), served by a second formgrader."""
    root = tmp_path_factory.mktemp("crowded") / "course"
    shutil.copytree(graded_course.root, root, symlinks=True)
    course = type(graded_course)(root)
    assignment, model = "01_attention", "correct_loops"
    with Gradebook(course.db_url) as gb:
        points = {
            g.name: g.auto_score for g in gb.find_submission_notebook(assignment, assignment, model).grades
        }
        for i in range(SCALE):
            student = f"student{i:03d}"
            gb.update_or_create_student(student, first_name=f"First{i:03d}", last_name=f"Last{i:03d}")
            submission = gb.add_submission(assignment, student)
            for grade in submission.notebooks[0].grades:
                grade.auto_score = points[grade.name]
            shutil.copytree(course.autograded / model / assignment, course.autograded / student / assignment)
        gb.db.commit()
    running = formgrader.start(course, port=free_port(), log=root.parent / "jupyter.log")
    yield course, running
    running.stop()


def _submission_links(page, url: str) -> list[str]:
    page.goto(f"{url}/formgrader/gradebook/01_attention/01_attention")
    page.wait_for_selector("table tbody tr a.name-hidden", timeout=60_000)
    return page.eval_on_selector_all("table a.name-hidden", "els => els.map(e => e.getAttribute('href'))")


def _open_seconds(page, url: str) -> float:
    import time

    start = time.monotonic()
    page.goto(url)
    page.wait_for_selector("#q_scaling", timeout=60_000)
    return time.monotonic() - start


def test_formgrader_opens_quickly_with_300_submissions(page, server, crowded, capsys):
    """A submission's page costs what it costs in a small class: opened alternately on the graded
    course's own formgrader (a few submissions) and on the crowded one (300 more), in one run."""
    import time

    small, _ = server
    _, running = crowded
    # this server's token (the small server's cookie stays): any page of the server takes it, and
    # the formgrader's costs the browser far less than JupyterLab's
    page.goto(running.page("formgrader"))
    listed = []
    for _ in range(5):  # the first also renders the list's templates once (a cold server)
        start = time.monotonic()
        page.goto(f"{running.url}/formgrader/gradebook/01_attention/01_attention")
        page.wait_for_selector("table tbody tr:nth-child(300)", timeout=60_000)
        listed.append(time.monotonic() - start)
    rows = page.locator("table tbody tr").count()
    crowded_links = _submission_links(page, running.url)
    small_links = _submission_links(page, small.url)
    _open_seconds(page, running.url + crowded_links[0])  # each renders its page templates once (cold)
    _open_seconds(page, small.url + small_links[0])
    pairs = [
        (_open_seconds(page, small.url + s), _open_seconds(page, running.url + c))
        for s, c in zip(small_links[1:], crowded_links[1:13], strict=False)
    ]
    few, many = min(p[0] for p in pairs), min(p[1] for p in pairs)
    with capsys.disabled():
        print(
            f"\nformgrader with {rows} submissions: list {', '.join(f'{s:.2f}' for s in listed)} s; a submission "
            f"{many:.2f} s against {few:.2f} s in the small class (fastest of {len(pairs)} alternate opens: "
            + ", ".join(f"{a:.2f}/{b:.2f}" for a, b in pairs)
            + ")"
        )
    assert rows >= SCALE and len(pairs) >= 10
    # The fastest of four warm lists: the other test process shares these two cores (1.29 s in CI;
    # 2.12-3.21 s with a `make demo` running beside the suite as well)
    assert min(listed) < 2.0
    # The other test process shares these two cores and grades notebooks of its own while this runs:
    # single opens measured 1.40-4.19 s here against 0.95-1.19 s with the machine idle, so a bound
    # in seconds measured the other process (CI failed one at 2.38 s). What the formgrader owes a
    # large class is a page that costs no more than in a small one: opens alternate between the two
    # servers, each the fastest of its twelve (six were once not enough for either to find a quiet
    # moment: 4.11 s against 2.72 s; nine once gave 2.10 s against 1.29 s on a fresh clone whose
    # pytest ran 14 % slower than the one before it), so both see the same load.
    assert many < 1.5 * few, (
        f"a submission's page opens in {many:.2f} s with {rows} submissions, {few:.2f} s in a small class"
    )


def test_manage_submissions_opens_quickly_with_300_submissions(page, crowded, capsys):
    """Manage Submissions of assignment 1 lists each student's submission with its scores. nbgrader
    answers it with one SQL statement that SQLite, without an index on a submission's notebooks,
    ran by walking every grade awaiting a TA for each submission in the gradebook (16-19 s at
    1,000 students x 5 assignments), and built the class's scored student list for the names:
    the course's gradebook indexes and API (staff/grading/gradebook/indexes.py, formgrader_api.py;
    every page at 1,000 x 5: benchmarks/formgrader_scale.py)."""
    import time

    course, running = crowded
    assert (
        "nbgrader's API with the course's per-row fixes" in (course.root.parent / "jupyter.log").read_text()
    )
    page.goto(running.page("formgrader"))  # this server's token, as above
    seconds = []
    for _ in range(3):  # the fastest open: the other test process shares these two cores
        start = time.monotonic()
        page.goto(f"{running.url}/formgrader/manage_submissions/01_attention")
        page.wait_for_function(
            "window.models !== undefined && models.loaded === true", timeout=60_000, polling=50
        )
        seconds.append(time.monotonic() - start)
    rows = page.locator("#main-table tr").count()
    with capsys.disabled():
        print(f"\nManage Submissions with {rows} rows: {', '.join(f'{s:.2f}' for s in seconds)} s")
    assert rows >= SCALE
    assert "Last150, First150" in page.inner_text("#main-table")
    assert min(seconds) < 2.0
