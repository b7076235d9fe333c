"""Helpers several test modules share (on the path through pyproject's ``pythonpath``)."""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

#: How the browser tests start Debian's chromium (headless, as root, in this closed network: without
#: the background-networking flags it keeps trying outside hosts).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_or_skip() -> str:
    """Debian's chromium (`make system-packages` installs it); without it the browser tests skip, saying why."""
    found = shutil.which("chromium")
    if not found:
        pytest.skip(
            "chromium is not installed: run `make system-packages` as root (it installs "
            "Debian's chromium package)"
        )
    return found


#: A tiny sentence pair for bertviz views: 2 layers, 3 heads, 8 tokens, sentence B from token 5.
LAYERS, HEADS = 2, 3
TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
SENTENCE_B_START = 5
N = len(TOKENS)


def tiny_attention() -> tuple[torch.Tensor, ...]:
    """What a transformers model returns with output_attentions=True, from a tiny random BERT."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=32,
        hidden_size=12,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=16,
        max_position_embeddings=N,
        attn_implementation="eager",
    )
    model = BertModel(config).eval()
    token_type_ids = torch.tensor([[0] * SENTENCE_B_START + [1] * (N - SENTENCE_B_START)])
    with torch.no_grad():
        out = model(input_ids=torch.arange(N)[None], token_type_ids=token_type_ids, output_attentions=True)
    assert isinstance(out.attentions, tuple) and out.attentions[0].shape == (1, HEADS, N, N)
    return out.attentions


class Dom(HTMLParser):
    """Elements of a dumped page, in order: tag, attributes, text (of <text>/<option>), and the id
    of the enclosing <select>. Script bodies are not parsed as elements."""

    def __init__(self, page: str):
        super().__init__()
        self.elements: list[dict] = []
        self._texts: list[dict] = []
        self._select: str | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": "", "select": self._select}
        self.elements.append(element)
        if tag == "select":
            self._select = element["attrs"].get("id")
        if tag in ("text", "option"):
            self._texts.append(element)

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        if self._texts and self._texts[-1]["tag"] == tag:
            self._texts.pop()

    def handle_data(self, data):
        if self._texts:
            self._texts[-1]["text"] += data

    def find(self, tag: str) -> list[dict]:
        return [e for e in self.elements if e["tag"] == tag]


def free_port() -> int:
    """A loopback port nobody listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def benchmark(name: str):
    """``benchmarks/<name>.py`` imported as a module (benchmarks/ holds scripts, not a package)."""
    import importlib.util
    import sys

    from course import paths

    spec = importlib.util.spec_from_file_location(name, paths.ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def scratch_checkout(root: Path) -> Path:
    """A course folder for the command line that holds none of this checkout's students or
    gradebook: the two packages copied (the course is wherever ``course/`` is, and staff/__init__.py
    points every process it starts there), the real source/ and release/ linked (read only), nbgrader's
    configuration and the calendar copied."""
    from course.settings import ROOT

    root.mkdir(parents=True, exist_ok=True)
    for package in ("course", "staff"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("source", "release"):
        (root / folder).symlink_to(ROOT / folder, target_is_directory=True)
    for name in ("nbgrader_config.py", "due_dates.toml"):
        shutil.copy2(ROOT / name, root / name)
    return root


def staff_command(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m staff <args>`` as `make` runs it, in the course folder ``root``
    (:func:`scratch_checkout`), with none of this process's course settings (``env``: these instead)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("COURSE_")} | (
        env or {}
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "staff", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links not followed) and its bytes: what a command changed."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink() and "__pycache__" not in p.parts
    }


def read_canvas(path) -> tuple[dict[str, float], dict[str, dict[str, float | None]]]:
    """As Canvas's gradebook import reads a file: the identity columns first (Student, ID, SIS User ID,
    SIS Login ID, Section), then one column per assignment; an optional second row "Points
    Possible"; each student found by one of ID, SIS User ID or SIS Login ID; a cell a number, or blank
    for "no change". Anything else is an error Canvas shows."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, *rest = rows
    assert tuple(header[:5]) == ("Student", "ID", "SIS User ID", "SIS Login ID", "Section"), header
    assignments = header[5:]
    assert assignments and len(set(assignments)) == len(assignments)
    points = {}
    if rest and rest[0][0] == "Points Possible":
        points = {a: float(v) for a, v in zip(assignments, rest.pop(0)[5:], strict=True)}
    grades = {}
    for row in rest:
        assert len(row) == len(header), row
        student = row[1] or row[2] or row[3]
        assert student and student not in grades, row
        cells = {}
        for a, value in zip(assignments, row[5:], strict=True):
            cells[a] = None if value == "" else float(value)  # ValueError: Canvas refuses the file
            assert cells[a] is None or 0 <= cells[a] <= points.get(a, float("inf")), (row, a)
        grades[student] = cells
    return points, grades


def source_cell(assignment: str, grade_id: str) -> str:
    """The source of the cell ``grade_id`` of an assignment's source notebook."""
    import nbformat

    from staff.course_dir import nbgrader, source_notebook

    cells = nbformat.read(source_notebook(assignment), as_version=4).cells
    return next(c.source for c in cells if nbgrader(c).get("grade_id") == grade_id)
