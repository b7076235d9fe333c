"""Two TAs grading the same answer at once: the second save is refused and shown, never a silent
overwrite.

nbgrader's grading page saves a grade or a comment by sending the whole value (``PUT
/formgrader/api/grade/<id>``), so when two TAs have the same submission open, the later save
replaces the earlier one and neither TA is told: the first sees their points on their page, the
gradebook holds the other's. With several TAs on one course (``make hub``), that happens.

This is optimistic concurrency on nbgrader's own seams:

- the grading page remembers, per grade and comment, the value the server last gave it, and sends
  it with each save (``_seen``; a script the formgrader's template adds to the page:
  :class:`AddConflictCheck`, registered in ``jupyter/nbconvert/templates/formgrade/conf.json``);
- the server (nbgrader's handlers, their ``put`` wrapped here when the server extension loads)
  saves only if the gradebook still holds that value. Otherwise it answers 409 with the current
  value and changes nothing; the page shows it in the box with a warning under it ("another grader
  changed this to 2 after you opened the page; yours (1.5) was not saved") and a TA who still
  wants their value types it again, now knowingly over the other's.

A save without ``_seen`` (a script, an old page) is nbgrader's, unchanged. Handlers run one at a time
on the server's event loop, so the check and the write cannot interleave between two TAs.
"""

from __future__ import annotations

import json
import math

import nbformat
from nbconvert.preprocessors import Preprocessor

#: What each kind of entry's page sends and the check compares.
FIELDS = {"grade": ("manual_score", "extra_credit"), "comment": ("manual_comment",)}


def _same(a, b) -> bool:
    if a is None or b is None or a == "" or b == "":
        return (a in (None, "")) == (b in (None, ""))
    try:
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-9)
    except (TypeError, ValueError):
        return str(a) == str(b)


def changed_since(current: dict, seen: dict, kind: str) -> bool:
    """Whether the gradebook's ``current`` entry differs from what the page had ``seen``."""
    return not all(_same(current.get(name), seen.get(name)) for name in FIELDS[kind])


def _checked(put, kind: str, find: str):
    def checked_put(self, entry_id):
        try:
            seen = json.loads(self.request.body or b"{}").get("_seen")
        except ValueError:
            seen = None
        if isinstance(seen, dict):
            from nbgrader.api import MissingEntry
            from tornado import web

            try:
                current = getattr(self.gradebook, find)(entry_id).to_dict()
            except MissingEntry:
                raise web.HTTPError(404) from None
            if changed_since(current, seen, kind):
                self.set_status(409)
                self.write(json.dumps({"conflict": True, "current": current}))
                return None
        return put(self, entry_id)

    checked_put.course_conflict_check = True
    return checked_put


def install() -> None:
    """Wrap nbgrader's grade and comment handlers' ``put`` (once per process)."""
    from nbgrader.server_extensions.formgrader import apihandlers

    for handler, kind, find in (
        (apihandlers.GradeHandler, "grade", "find_grade_by_id"),
        (apihandlers.CommentHandler, "comment", "find_comment_by_id"),
    ):
        if not getattr(handler.put, "course_conflict_check", False):
            handler.put = _checked(handler.put, kind, find)


def _load_jupyter_server_extension(serverapp) -> None:
    install()
    serverapp.log.info(
        "formgrader: a grade another grader changed meanwhile is not overwritten (%s)", __name__
    )


#: Runs in the grading page before nbgrader's FormGrader loads the grades (the page's body is
#: parsed before its window "load" event): remembers what the server gave each grade and comment,
#: sends it with each save, and shows a refused save.
SCRIPT = """<script>
(function () {
  var FIELDS = {grade: ["manual_score", "extra_credit"], comment: ["manual_comment"]};
  function kind(model) { return model instanceof Grade ? "grade" : (model instanceof Comment ? "comment" : null); }
  function seen(model) {
    var out = {};
    FIELDS[kind(model)].forEach(function (f) { out[f] = model.get(f); });
    return out;
  }
  function remember(model) {
    model._seen = seen(model);
    model.on("sync", function () { model._seen = seen(model); });
  }
  Grade.prototype.initialize = function () { remember(this); };
  Comment.prototype.initialize = function () { remember(this); };
  function cellOf(model) {
    var id = "#" + model.get("name") + (kind(model) === "comment" ? "-comment" : "");
    return jQuery(id).parents(".nbgrader_cell");
  }
  function show(model, current) {
    var mine = seen(model), field = FIELDS[kind(model)][0];
    var theirs = current[field], yours = mine[field];
    var what = kind(model) === "grade" ? "these points" : "this comment";
    var box = cellOf(model).find(".grade-conflict[data-kind=" + kind(model) + "]");
    if (!box.length) {
      box = jQuery('<div class="alert alert-warning grade-conflict" role="alert"></div>').attr("data-kind", kind(model));
      cellOf(model).find(kind(model) === "grade" ? ".score" : ".comment").first().closest("div").after(box);
      if (!box.parent().length) cellOf(model).append(box);
    }
    function shown(value) {
      if (value === null || value === undefined || value === "") return "nothing";
      if (kind(model) === "grade") return String(value);
      value = String(value);
      return "\u201c" + (value.length > 80 ? value.slice(0, 80) + "\u2026" : value) + "\u201d";
    }
    box.text("Not saved: another grader changed " + what + " after you opened this page, to " + shown(theirs) +
             ". Yours (" + shown(yours) + ") was not saved; the box now shows theirs. To replace it, enter yours again.");
    model.set(current);
    model._seen = seen(model);
  }
  var sync = Backbone.sync;
  Backbone.sync = function (method, model, options) {
    if (method === "update" && kind(model)) {
      options = options || {};
      options.attrs = _.extend(model.toJSON(), {_seen: model._seen});
      var error = options.error;
      options.error = function (xhr) {
        if (xhr.status === 409 && xhr.responseJSON && xhr.responseJSON.current) {
          show(model, xhr.responseJSON.current);
        }
        if (error) error.apply(this, arguments);
      };
      var success = options.success;
      options.success = function () {
        cellOf(model).find(".grade-conflict[data-kind=" + kind(model) + "]").remove();
        if (success) success.apply(this, arguments);
      };
    }
    return sync.call(this, method, model, options);
  };
})();
</script>"""


class AddConflictCheck(Preprocessor):
    """The script above, once, at the end of nbgrader's grading page (formgrader only: registered
    by ``jupyter/nbconvert/templates/formgrade/conf.json``, after the markdown sanitizer)."""

    def preprocess(self, nb, resources):
        if resources.get("submission_id") is None:  # not the grading page
            return nb, resources
        nb.cells.append(nbformat.v4.new_markdown_cell(SCRIPT))
        return nb, resources
