"""The instructor side of the course: author it (``staff.authoring``) and grade it
(``staff.grading``). Never shipped to students; it imports the student package ``course``, never
the other way round. One command line, ``python -m staff <command>`` (``staff/cli.py``), which the
Makefile calls."""

import os as _os

from course.settings import ROOT as _ROOT

# Every process the staff tools start (nbgrader, the grading runner, Dask's workers, the formgrader,
# kernels outside the sandbox) imports the packages of this checkout, whatever checkout the
# virtualenv's editable install was made from: a virtualenv shared by two checkouts, or a scratch
# copy of the course (tests/staff/authoring/test_new_assignment.py), grades its own course.
if str(_ROOT) not in _os.environ.get("PYTHONPATH", "").split(_os.pathsep):
    _os.environ["PYTHONPATH"] = _os.pathsep.join(filter(None, [str(_ROOT), _os.environ.get("PYTHONPATH")]))
