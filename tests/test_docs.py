"""The README stays a two-minute read, and what it and `docs/` point at is real: every relative
link (and its heading anchor) resolves, every `make <target>` they name is a Makefile target, and
every path `docs/layout.md` lists exists (or, for what the commands write, is git-ignored)."""

import fnmatch
import re
from pathlib import Path

import pytest

from course import paths

ROOT = paths.ROOT
README_LINES = 150
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _prose(text: str) -> str:
    """The page without its fenced code blocks (a link inside one is an example, not a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)


def _code(text: str) -> list[str]:
    """Every piece of code on the page: fenced blocks and inline spans."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    inline = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", _prose(text))]  # may wrap a line
    return fenced + inline


def _anchors(page: Path) -> set[str]:
    """GitHub's anchor for each heading: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", _prose(page.read_text()), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_the_readme_is_a_two_minute_read():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_LINES, f"README.md has {lines} lines: move the detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_points_at_a_file_that_exists(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", _prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, f"{_name(page)}: {broken}"


def _targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][a-z0-9-]*):", makefile, flags=re.MULTILINE))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_make_target_named_is_a_real_target(page):
    targets = _targets()
    named = {
        name
        for code in _code(page.read_text())
        for name in re.findall(r"(?:^|[\s;&(|/])make\s+([a-z][a-z0-9-]*)\b(?!=)", code)
    }
    assert not named - targets, f"{_name(page)} names targets the Makefile lacks: {sorted(named - targets)}"


def test_the_readme_gives_the_two_commands_ci_runs_one():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)", _code(readme)[0], flags=re.MULTILINE)
    assert commands == ["demo", "test"], "the README's first code block: make demo, then make test"
    assert (ROOT / ".ci" / "run").read_text().split()[-2:] == ["make", "test"]


def _layout() -> tuple[list[str], list[str]]:
    """The paths `docs/layout.md` lists: those in the repository, and those the commands write."""
    text = (ROOT / "docs" / "layout.md").read_text()
    committed, _, written = text.partition("## Written by the commands")
    assert written, "docs/layout.md lost its section of paths the commands write"

    def paths_in(section: str) -> list[str]:
        spans = re.findall(r"`([^`]+)`", _prose(section))
        return [s for s in spans if re.fullmatch(r"[\w.<>-]+(/[\w.<>-]*)*", s) and ("/" in s or "." in s)]

    return paths_in(committed.partition("## In the repository")[2]), paths_in(written)


def test_every_path_the_layout_names_exists():
    committed, _ = _layout()
    assert len(committed) > 60, committed  # the scan still finds the list
    missing = [
        path for path in committed if not list(ROOT.glob(re.sub(r"<[^>]+>", "*", path).rstrip("/") or "."))
    ]
    assert not missing, f"docs/layout.md names paths that do not exist: {missing}"


def test_what_the_layout_says_the_commands_write_is_git_ignored():
    _, written = _layout()
    ignored = [
        line.strip().removesuffix("/*").rstrip("/")
        for line in (ROOT / ".gitignore").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "!"))
    ]
    assert written, "docs/layout.md lists nothing the commands write"
    not_ignored = [
        path
        for path in written
        if not any(fnmatch.fnmatch(path.split("/")[0], pattern) for pattern in ignored)
    ]
    assert not not_ignored, (
        f"docs/layout.md says commands write these, but git would commit them: {not_ignored}"
    )


def test_every_score_row_the_docs_quote_is_what_the_demo_prints_now():
    """A row of `make report`'s table quoted in README.md or docs/ ("01_attention  partial  13.25 / 23
    4 pts  13.25 ok") names a bundled sample with that expected score and that maximum: a sample that
    changes makes the quoted line fail here, not go stale."""
    from staff.authoring import samples

    expected = {
        (s.assignment, s.student): s.expected_score
        for a in samples.course_dir.assignments()
        for s in samples.load(a)
    }
    row = re.compile(
        r"^(\d\d_\w+)\s+(\w+)\s+([\d.]+) / ([\d.]+)\s+(?:[\d.]+ pts|-)\s+([\d.]+) ok$", re.MULTILINE
    )
    quoted = [(page, m) for page in PAGES for m in row.finditer(page.read_text())]
    assert quoted, "the README quotes the demo's score table"
    for page, m in quoted:
        assignment, student, score, _, said = m.groups()
        assert (assignment, student) in expected, (
            f"{_name(page)} quotes a sample that does not exist: {m.group(0)}"
        )
        assert float(score) == float(said) == expected[(assignment, student)], f"{_name(page)}: {m.group(0)}"
    for page in PAGES:
        for count in re.findall(r"samples: wrote (\d+) submissions", page.read_text()):
            assert int(count) == len(expected), (
                f"{_name(page)} says make samples wrote {count}; it writes {len(expected)}"
            )


def test_the_grading_tests_mirror_the_grading_packages():
    """tests/staff/grading/<package>/ for every package of staff/grading/, and every test file of
    those folders named after a module of its package (test_<module>.py, prefixes allowed:
    test_judge_prerequisites.py is about judge.py)."""
    packages = {p.name for p in (ROOT / "staff" / "grading").iterdir() if (p / "__init__.py").is_file()}
    tests = ROOT / "tests" / "staff" / "grading"
    assert packages <= {p.name for p in tests.iterdir() if p.is_dir()}, packages
    for package in packages:
        modules = {m.stem for m in (ROOT / "staff" / "grading" / package).glob("*.py")} - {"__init__"}
        for test in (tests / package).glob("test_*.py"):
            named = test.stem.removeprefix("test_")
            assert any(named == m or named.startswith(f"{m}_") for m in modules), (
                f"{test.relative_to(ROOT)} names no module of staff/grading/{package}/ ({', '.join(sorted(modules))})"
            )
