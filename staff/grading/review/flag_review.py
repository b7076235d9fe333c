"""Where a TA decides on a flagged submission, in the formgrader: ``formgrader/course/flags/<assignment>/<student>``.

The grading page's flag panel (:mod:`integrity_panel`) links here. The page lists the flags (as
text: :func:`~staff.grading.student_text.inert_html`), the decision already taken if any, and a form:
**accept** (the points stand) or **set exercises to 0** (those the flags name are ticked) with a
comment the student reads in their feedback. Posting it records the decision
(:func:`staff.grading.gradebook.flag_decisions.decide`: the gradebook and the regrade log); until
then the submission is held (no points in its feedback or the export).

A Jupyter server extension of the formgrader's server (``make formgrader``, the hub's service):
the page is the server's own (its login, its XSRF check on the form), has no script, and its
forms post to itself (the Content-Security-Policy of every formgrader page, :mod:`csp`).
"""

from __future__ import annotations

import getpass
import html
import os
from pathlib import Path
from urllib.parse import quote

from jupyter_server.base.handlers import JupyterHandler
from tornado import web

from staff.course_dir import CourseDir
from staff.grading.gradebook import flag_decisions
from staff.grading.status import load_status
from staff.grading.student_text import inert_html

#: Under the formgrader's own prefix, so its pages' policy and access apply.
ROUTE = r"formgrader/course/flags/([^/]+)/([^/]+)"


def link(assignment: str, student: str) -> str:
    """The page's address relative to a grading page (``formgrader/submissions/<id>/``)."""
    return f"../../course/flags/{quote(assignment, safe='')}/{quote(student, safe='')}"


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Flags: {assignment} / {student}</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }}
li {{ overflow-wrap: anywhere; }} .error {{ color: #a00; font-weight: bold; }} .saved {{ color: #070; }}
fieldset {{ margin: 1rem 0; }} textarea {{ width: 100%; }}
</style></head>
<body>
<h1>Flags of {student} in {assignment}</h1>
{message}
<p>Status of the last grading: <strong>{status}</strong>. {state}</p>
<h2>What the integrity scan flagged</h2>
<ul>{flags}</ul>
<form method="post">
{xsrf}
<fieldset><legend>Decision</legend>
<label><input type="radio" name="decision" value="accept" {accept_checked}> Accept: honest work, the points stand</label><br>
<label><input type="radio" name="decision" value="zero" {zero_checked}> Set these exercises' automatic points to 0:</label>
<div style="margin-left: 2rem">{exercises}</div>
</fieldset>
<label>Comment for the student (required to set points to 0; shown in their feedback):<br>
<textarea name="comment" rows="4">{comment}</textarea></label>
<p><button type="submit">Save decision</button></p>
</form>
</body></html>
"""


class FlagReview(JupyterHandler):
    """GET the page, POST a decision (the server's login and XSRF check apply to both)."""

    def course(self) -> CourseDir:
        return CourseDir(Path(self.settings["server_root_dir"]).expanduser().resolve())

    def page(self, assignment: str, student: str, message: str = "", form: dict | None = None) -> str:
        course = self.course()
        outcome = load_status(course).get((student, assignment))
        if not outcome:
            raise web.HTTPError(404, "no graded submission")
        flags = list(outcome.get("flags") or []) or [str(outcome.get("reason", ""))]
        decided = flag_decisions.decision(course, student, assignment)
        if outcome.get("status") != "flagged":
            state = "Nothing to decide: it is not flagged."
        elif decided:
            state = f"Decided: {html.escape(decided.summary())}" + (
                f" (comment: {inert_html(decided.comment)})" if decided.comment else ""
            )
        else:
            state = "Held: no points are shown to the student or exported until you decide."
        answers = flag_decisions.answers(assignment)
        named = {flag.split(":", 1)[0] for flag in flags}
        form = form or {}
        ticked = set(form.get("exercises", [])) or (
            set(decided.exercises) if decided else {t for t, ids in answers.items() if named & set(ids)}
        )
        boxes = "<br>".join(
            f'<label><input type="checkbox" name="exercises" value="{html.escape(title, quote=True)}"'
            f"{' checked' if title in ticked else ''}> {html.escape(title)} ({len(cells)} test cell"
            f"{'s' if len(cells) != 1 else ''})</label>"
            for title, cells in flag_decisions.exercises(assignment).items()
        )
        verdict = form.get("decision") or (decided.decision if decided else "")
        return PAGE.format(
            assignment=html.escape(assignment),
            student=html.escape(student),
            message=message,
            status=html.escape(str(outcome.get("status", ""))),
            state=state,
            flags="".join(f"<li>{inert_html(flag)}</li>" for flag in flags),
            xsrf=self.xsrf_form_html(),
            accept_checked="checked" if verdict == "accept" else "",
            zero_checked="checked" if verdict == "zero" else "",
            exercises=boxes,
            comment=html.escape(form.get("comment", decided.comment if decided else "")),
        )

    @web.authenticated
    def get(self, assignment: str, student: str) -> None:
        saved = self.get_argument("saved", "")
        self.finish(self.page(assignment, student, '<p class="saved">Decision saved.</p>' if saved else ""))

    @web.authenticated
    def post(self, assignment: str, student: str) -> None:
        form = {
            "decision": self.get_body_argument("decision", ""),
            "exercises": self.get_body_arguments("exercises"),
            "comment": self.get_body_argument("comment", ""),
        }
        user = _who(self.current_user)
        try:
            flag_decisions.decide(
                self.course(),
                student,
                assignment,
                form["decision"],
                form["exercises"],
                form["comment"],
                who=user,
            )
        except flag_decisions.DecisionError as error:
            self.set_status(400)
            self.finish(
                self.page(assignment, student, f'<p class="error">{html.escape(str(error))}</p>', form)
            )
            return
        self.redirect(f"{self.request.path}?saved=1", status=303)


def _who(user) -> str:
    """The TA: their hub account; on a server of one's own (``make formgrader``, a token whose user has
    a random name), the account that started it."""
    if os.environ.get("JUPYTERHUB_API_URL"):
        return getattr(user, "username", None) or str(user)
    return os.environ.get("SUDO_USER") or getpass.getuser()


def _load_jupyter_server_extension(serverapp) -> None:
    base = serverapp.base_url.rstrip("/") + "/"
    rules = serverapp.web_app.default_router.rules
    serverapp.web_app.add_handlers(".*$", [(base + ROUTE, FlagReview)])
    # first: nbgrader's formgrader ends its routes with a 404 page for anything else under formgrader/
    ours = next(rule for rule in rules if any(r.target is FlagReview for r in rule.target.rules))
    rules.remove(ours)
    rules.insert(0, ours)
    serverapp.log.info("formgrader: TAs decide on flagged submissions at %s (%s)", base + ROUTE, __name__)
