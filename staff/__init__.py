"""The instructor side of the course: author it (``staff.authoring``) and grade it
(``staff.grading``). Never shipped to students; it imports the student package ``course``, never
the other way round. One command line, ``python -m staff <command>`` (``staff/cli.py``), which the
Makefile calls."""
