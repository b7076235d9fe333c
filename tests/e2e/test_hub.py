"""A TA team on the course's JupyterHub (`make hub`), in real Chromium: JupyterHub from PyPI with
configurable-http-proxy from npm, the formgrader as a hub service, the gradebook in a real
PostgreSQL 15, and NativeAuthenticator's sign-up and approval (the hub's default logins).

Four people, each in a Chromium context of their own (their own cookies): an instructor (the
hub's admin) and two TAs in the ``formgrade-<course>`` group, and a student who can log in but is
in no grading group. They sign up; the instructor approves them on the hub's authorisation page.
Then: the two TAs open the same assignment at once and each grades a different submission, and
both sets of points and comments are in the gradebook; both grade the same answer, and the later
save is refused and shown to its TA with the other's value (grade_conflicts.py), the gradebook
keeping the earlier until the TA enters theirs again; the student gets a 403 from the formgrader;
and a kernel a TA starts for an autograded notebook runs in the grading sandbox (no course
folder, no network, nothing written), while one for an instructor's notebook in ``source/`` does not;
and every page sends a Content-Security-Policy that none of this ran into.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import postgres_server
import psutil
import pytest
from nbgrader.api import Gradebook

from course import paths
from staff.authoring import samples
from staff.course_dir import CourseDir
from staff.grading import autograde
from staff.grading.gradebook import admin
from staff.grading.review import hub
from support import free_port

pytestmark = [pytest.mark.notebooks, pytest.mark.xdist_group("hub")]
ASSIGNMENT = "01_attention"
GRADED = ("correct_loops", "partial", "hardcoded_shapes")  # each has free-text answers to grade
PASSWORD = "grading-team-2027"
SERVICE = hub.service_prefix()
LIMITS = autograde.Limits(cell=60, wall=300, memory=3 * 2**30)


@pytest.fixture(scope="module")
def course(make_course):
    """A course with three submissions of assignment 1 autograded into a PostgreSQL gradebook."""
    try:
        postgres_server.binaries()
    except postgres_server.NoPostgres as error:
        pytest.skip(str(error))
    if hub.missing_proxy():
        pytest.skip(hub.missing_proxy())
    with postgres_server.temporary_server("hub") as url:
        course = CourseDir(make_course("hub").root, url=url)
        # The course's own configuration, pointed at this gradebook as GRADEBOOK_URL points the real one.
        config = (paths.ROOT / "nbgrader_config.py").read_text()
        (course.root / "nbgrader_config.py").write_text(f"{config}\nc.CourseDirectory.db_url = {url!r}\n")
        for sample in samples.load(ASSIGNMENT):
            if sample.student in GRADED:
                samples.submit(sample, course)
        admin.import_roster(samples.ROSTER, course)
        outcomes = autograde.autograde([ASSIGNMENT], course=course, limits=LIMITS, progress=False)
        assert sorted(o.student for o in outcomes if o.status == "graded") == sorted(GRADED), outcomes
        yield course


@pytest.fixture(scope="module")
def running(course, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub")
    config = folder / "jupyterhub_config.py"
    config.write_text(
        textwrap.dedent(f"""\
        from pathlib import Path
        from staff.course_dir import CourseDir
        from staff.grading.review import hub
        c = get_config()
        hub.configure(c, instructors=["prof"], graders=["ta1", "ta2"], students=["stu"],
                      course=CourseDir(Path({str(course.root)!r}), url={course.url!r}))
        """)
    )
    started = hub.start(course, config, port=free_port(), log=folder / "hub.log")
    yield started, folder / "hub.log"
    family = psutil.Process(started.process.pid).children(
        recursive=True
    )  # the proxy, the formgrader, kernels
    started.stop()
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], (
        "the hub left processes behind"
    )


def _sign_up(tab, url: str, user: str) -> None:
    tab.goto(f"{url}/hub/signup")
    tab.fill("#username_input", user)
    tab.fill("#password_input", PASSWORD)
    tab.fill("#password_confirmation_input", PASSWORD)
    tab.click("#signup_submit")
    tab.wait_for_load_state()
    assert "error" not in tab.inner_text("body").lower(), tab.inner_text("body")[:500]


def _log_in(tab, url: str, user: str) -> None:
    tab.goto(f"{url}/hub/login")
    tab.fill("#username_input", user)
    tab.fill("#password_input", PASSWORD)
    tab.click("#login_submit")
    tab.wait_for_load_state()


@pytest.fixture(scope="module")
def people(running, browser):
    """``{user: page}``: each signed up, approved by the instructor, logged in, in their own context."""
    hub_, _ = running
    contexts, pages = [], {}
    for user in ("prof", "ta1", "ta2", "stu"):
        contexts.append(browser.new_context(viewport={"width": 1280, "height": 900}))
        pages[user] = contexts[-1].new_page()
        _sign_up(pages[user], hub_.url, user)
    # An instructor is approved by being the hub's admin; everyone else waits for them.
    _log_in(pages["ta1"], hub_.url, "ta1")
    assert "/hub/login" in pages["ta1"].url, "a TA the instructor has not approved cannot log in"
    _log_in(pages["prof"], hub_.url, "prof")
    pages["prof"].goto(f"{hub_.url}/hub/authorize")
    for user in ("ta1", "ta2", "stu"):
        pages["prof"].click(f"tr:has-text('{user}') a:has-text('Authorize')")
        pages["prof"].wait_for_load_state()
    for user in ("ta1", "ta2", "stu"):
        _log_in(pages[user], hub_.url, user)
    yield pages
    for context in contexts:
        context.close()


def _open_submission(tab, url: str, student: str) -> None:
    """From the notebook's list of submissions, the one of ``student`` (by its name link), once
    nbgrader's page has loaded its grade and comment boxes."""
    tab.goto(f"{url}{SERVICE}formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}")
    tab.wait_for_selector("table a", timeout=60_000)
    first, last = next(
        line.split(",")[1:3]
        for line in samples.ROSTER.read_text().splitlines()
        if line.startswith(f"{student},")
    )
    links = tab.eval_on_selector_all(
        "table a", "els => els.map(e => [e.textContent.trim(), e.getAttribute('href')])"
    )
    href = next(h for text, h in links if text == f"{last}, {first}")
    tab.goto(f"{url}{href}" if href.startswith("/") else href)
    tab.wait_for_selector("#q_scaling", timeout=60_000)
    tab.wait_for_function(
        "formgrader.grades && formgrader.grades.loaded && formgrader.comments.loaded", timeout=60_000
    )


def _save(tab, selector: str, value: str, kind: str = "grade"):
    with tab.expect_response(lambda r: f"/api/{kind}/" in r.url and r.request.method == "PUT") as response:
        tab.fill(selector, value)
        tab.press(selector, "Tab")
    return response.value


def _grade(url: str, grade_id: str, student: str):
    with Gradebook(url) as gb:
        return (
            gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, student).manual_score,
            gb.find_comment(grade_id, ASSIGNMENT, ASSIGNMENT, student).manual_comment,
        )


def test_two_tas_grade_different_submissions_at_once(people, running, course):
    url = running[0].url
    ta1, ta2 = people["ta1"], people["ta2"]
    # Both open the assignment's list, then each a submission, before either saves anything.
    _open_submission(ta1, url, "correct_loops")
    _open_submission(ta2, url, "partial")
    assert _save(ta1, "#q_scaling", "1").status == 200
    assert _save(ta2, "#q_scaling", "0.5").status == 200
    assert (
        _save(ta1, "#q_scaling-comment", "Right: the variance of q.k grows with d_k.", "comment").status
        == 200
    )
    assert _save(ta2, "#q_scaling-comment", "Half: says it is smaller, not why.", "comment").status == 200
    assert _grade(course.url, "q_scaling", "correct_loops") == (
        1.0,
        "Right: the variance of q.k grows with d_k.",
    )
    assert _grade(course.url, "q_scaling", "partial") == (0.5, "Half: says it is smaller, not why.")


@pytest.fixture(scope="module")
def shots(tmp_path_factory, request):
    """A screenshot into the test's folder (and ``--screenshots=DIR``: `make screenshots`)."""
    folder, wanted = tmp_path_factory.mktemp("screenshots"), request.config.getoption("screenshots")

    def shoot(tab, name: str):
        tab.screenshot(path=str(folder / f"hub-{name}.png"))
        if wanted:
            shutil.copy2(folder / f"hub-{name}.png", f"{wanted}/hub-{name}.png")

    return shoot


def test_the_later_save_of_the_same_answer_is_refused_and_shown(people, running, course, shots):
    url = running[0].url
    ta1, ta2 = people["ta1"], people["ta2"]
    _open_submission(ta1, url, "hardcoded_shapes")
    _open_submission(ta2, url, "hardcoded_shapes")  # both pages show the answer ungraded
    assert _save(ta1, "#q_scaling", "1").status == 200
    refused = _save(ta2, "#q_scaling", "0")
    assert refused.status == 409
    warning = ta2.locator(".grade-conflict[data-kind=grade]")
    warning.wait_for(timeout=10_000)
    text = warning.inner_text()
    assert (
        "another grader changed these points" in text and "to 1" in text and "Yours (0) was not saved" in text
    ), text
    assert ta2.input_value("#q_scaling") == "1", "the box shows what the gradebook holds"
    ta2.evaluate(
        "window.scrollTo(0, document.getElementById('q_scaling').closest('.cell')"
        ".getBoundingClientRect().top + window.scrollY - 70)"
    )
    shots(ta2, "conflict")
    assert _grade(course.url, "q_scaling", "hardcoded_shapes")[0] == 1.0, "the earlier save was kept"
    # The same for comments.
    assert _save(ta1, "#q_scaling-comment", "Correct.", "comment").status == 200
    assert _save(ta2, "#q_scaling-comment", "Wrong.", "comment").status == 409
    comment_warning = ta2.locator(".grade-conflict[data-kind=comment]")
    comment_warning.wait_for(timeout=10_000)
    assert "to \u201cCorrect.\u201d. Yours (\u201cWrong.\u201d) was not saved" in comment_warning.inner_text()
    assert ta2.input_value("#q_scaling-comment") == "Correct."
    assert _grade(course.url, "q_scaling", "hardcoded_shapes")[1] == "Correct."
    # Having seen theirs, the second TA enters their own again: now it replaces it, knowingly.
    assert _save(ta2, "#q_scaling", "0").status == 200
    assert ta2.locator(".grade-conflict[data-kind=grade]").count() == 0, (
        "a save that lands clears its warning"
    )
    assert _grade(course.url, "q_scaling", "hardcoded_shapes")[0] == 0.0


def test_the_formgraders_autograde_button_grades_through_the_sandbox_and_the_judge(people, running, course):
    """nbgrader's Autograde button would run the student's notebook in the server, unsandboxed, and
    take its kernel's points; here it regrades through the course's grader and keeps manual grades."""
    url, ta1 = running[0].url, people["ta1"]
    manual = _grade(course.url, "q_scaling", "partial")  # set by the TA above
    ta1.goto(f"{url}{SERVICE}formgrader/manage_submissions/{ASSIGNMENT}")
    row = ta1.locator("tr", has=ta1.locator(".student-id", has_text="partial"))
    with ta1.expect_response(lambda r: r.url.endswith("/partial/autograde"), timeout=300_000) as response:
        row.locator(".autograde a").click()
    assert response.value.status == 200
    ta1.locator("#success-modal").wait_for(timeout=30_000)
    assert "partial / 01_attention: graded" in ta1.inner_text("#success-modal")
    logged = [json.loads(line) for line in (course.autograded / "regrades.jsonl").read_text().splitlines()]
    assert logged[-1]["student"] == "partial" and logged[-1]["reason"] == "formgrader (ta1)", logged[-1]
    assert logged[-1]["new_auto"] == 13.25 and logged[-1]["status"] == "graded"  # the sample's exact score
    assert _grade(course.url, "q_scaling", "partial") == manual, "the TA's points and comment stay"


def test_a_student_cannot_open_the_formgrader(people, running):
    url = running[0].url
    stu = people["stu"]
    response = stu.goto(f"{url}{SERVICE}formgrader")
    assert response.status == 403, (response.status, stu.url)
    assert "#q_scaling" not in stu.content()
    api = stu.request.get(f"{url}{SERVICE}formgrader/api/assignments")
    assert api.status in (302, 403) or "/hub/login" in api.url, (api.status, api.url)
    assert "01_attention" not in api.text()


PROBE = """
import json, os, socket
found = {{"uid": os.getuid(), "course": os.path.exists({root!r}), "gradebook_config": os.path.exists({config!r})}}
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    found["network"] = True
except OSError:
    found["network"] = False
try:
    with open(os.path.join(os.path.dirname({config!r}), "written-by-a-kernel.txt"), "w") as f:
        f.write("x")
    found["wrote"] = True
except OSError:
    found["wrote"] = False
print("PROBE" + json.dumps(found))
"""

#: Starts a kernel for a notebook as JupyterLab does (a session) and runs code on it over the
#: kernel's websocket, from the TA's logged-in page.
RUN_IN_KERNEL = """async ([base, path, code]) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [null, ""])[1]);
  const headers = {"Content-Type": "application/json", "X-XSRFToken": xsrf};
  const started = await fetch(base + "api/sessions", {method: "POST", headers, credentials: "same-origin",
    body: JSON.stringify({path, name: path.split("/").pop(), type: "notebook", kernel: {name: "python3"}})});
  const body = await started.text();
  if (!started.ok) return {status: started.status, out: body};
  const session = JSON.parse(body);
  const socket = new WebSocket(location.origin.replace(/^http/, "ws") + base + "api/kernels/" +
                               session.kernel.id + "/channels?session_id=" + session.id);
  const id = "probe-" + Math.random(), out = [];
  const result = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve({status: "timeout", out: out.join("")}), 120000);
    socket.onopen = () => socket.send(JSON.stringify({
      header: {msg_id: id, msg_type: "execute_request", username: "", session: session.id,
               date: new Date().toISOString(), version: "5.3"},
      parent_header: {}, metadata: {}, channel: "shell", buffers: [],
      content: {code, silent: false, store_history: false, user_expressions: {}, allow_stdin: false}}));
    socket.onmessage = (event) => {
      const msg = JSON.parse(event.data);
      if (!msg.parent_header || msg.parent_header.msg_id !== id) return;
      if (msg.msg_type === "stream") out.push(msg.content.text);
      if (msg.msg_type === "error") out.push(msg.content.ename + ": " + msg.content.evalue);
      if (msg.msg_type === "status" && msg.content.execution_state === "idle") {
        clearTimeout(timer); resolve({status: 200, out: out.join("")});
      }
    };
  });
  socket.close();
  await fetch(base + "api/sessions/" + session.id, {method: "DELETE", headers, credentials: "same-origin"});
  return result;
}"""


def _probe(tab, url: str, path: str, course: CourseDir, port: int) -> dict:
    tab.goto(f"{url}{SERVICE}formgrader")  # the service's page: its cookies and xsrf token
    code = PROBE.format(
        root=str(course.root / "source"), config=str(course.root / "nbgrader_config.py"), port=port
    )
    result = tab.evaluate(RUN_IN_KERNEL, [SERVICE, path, code])
    assert result["status"] == 200, result
    line = next((out for out in result["out"].splitlines() if out.startswith("PROBE")), None)
    assert line, result
    return json.loads(line[len("PROBE") :])


def test_a_tas_kernel_for_a_students_notebook_runs_in_the_sandbox(people, running, course):
    url = running[0].url
    port = int(url.rsplit(":", 1)[1])
    notebook = f"autograded/partial/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    found = _probe(people["ta1"], url, notebook, course, port)
    assert found == {
        "uid": found["uid"],
        "course": False,
        "gradebook_config": False,
        "network": False,
        "wrote": False,
    }, found
    if os.geteuid() == 0:
        assert found["uid"] != 0, "the kernel runs as a user of its own, not as root"
    assert not (course.root / "written-by-a-kernel.txt").exists()
    # The instructor's own notebooks (source/) need the course: their kernels are not sandboxed.
    source = f"source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    trusted = _probe(people["prof"], url, source, course, port)
    assert trusted["course"] and trusted["gradebook_config"], trusted
    (course.root / "written-by-a-kernel.txt").unlink(missing_ok=True)


def test_the_hub_and_its_formgrader_send_a_content_security_policy(people, running):
    """The hub's pages and the formgrader service's each send a policy (nothing from elsewhere, no
    plugins, forms only to the hub; the formgrader's scripts by hash: staff/grading/review/csp.py), and
    nothing the flows above needed was refused by it (the browser reports each refusal)."""
    hub_, log = running
    ta1 = people["ta1"]
    for path in ("hub/home", f"{SERVICE.lstrip('/')}formgrader/manage_assignments"):
        header = ta1.goto(f"{hub_.url}/{path}").headers.get("content-security-policy", "")
        assert "img-src 'self' data:" in header and "object-src 'none'" in header, (path, header)
        assert "connect-src 'self'" in header and "form-action 'self'" in header, (path, header)
        if "formgrader" in path:
            assert "'unsafe-inline'" not in header.split("script-src", 1)[1].split(";", 1)[0], header
    refused = [line for line in log.read_text().splitlines() if "Content security violation" in line]
    assert not refused, refused[:5]
