"""Offline bertviz views in a real browser: Debian's Chromium, headless, with the network blocked,
draws the offline head and model views, and draws nothing from bertviz's own CDN HTML (the
negative control that shows the browser check can see the problem at all).

Chromium is installed by `make system-packages` (which `make test` runs), never by a test: where
it is missing these tests skip and say so."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import HEADS, LAYERS, N, SENTENCE_B_START, TOKENS, Dom

from course import attention_views

pytestmark = pytest.mark.notebooks



@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium (`make system-packages` installs it); the tests skip, saying why, without it."""
    found = shutil.which("chromium")
    if not found:
        pytest.skip("chromium is not installed: run `make system-packages` (as root) or "
                    "`sudo apt-get install chromium`")
    return found


def _render(chromium: str, page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and the console lines, for ``page`` opened with no network."""
    profile = tmp_path / f"profile-{page.stem}"
    cmd = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}",
        # No network: every request goes to a closed local port, and no name resolves.
        "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace", timeout=90)
    assert done.returncode == 0 and "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def _show(attention, view: str, offline: bool, tmp_path: Path, chromium: str) -> tuple[Dom, list[str]]:
    html = getattr(attention_views, view)(attention, TOKENS, SENTENCE_B_START, offline=offline)
    page = attention_views.save_html(html, tmp_path / f"{view}-{'offline' if offline else 'cdn'}.html")
    dom, console = _render(chromium, page, tmp_path)
    return Dom(dom), console


def test_head_view_draws_offline_in_chromium(attention, chromium, tmp_path):
    dom, console = _show(attention, "head_view", True, tmp_path, chromium)
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert len(dom.find("svg")) == 1, console
    assert [o["attrs"]["value"] for o in dom.find("option") if o["select"] == "layer"] == ["0", "1"]
    # One line per head and token pair, from the "All" attention of layer 0.
    lines = [e for e in dom.find("line") if "left-token-index" in e["attrs"]]
    assert len(lines) == HEADS * N * N
    assert {e["attrs"]["left-token-index"] for e in lines} == {str(i) for i in range(N)}
    assert [e["text"] for e in dom.find("text")] == TOKENS + TOKENS  # left column, right column
    assert len([e for e in dom.find("rect") if e["attrs"].get("width") == "20"]) == HEADS  # head checkboxes
    assert any("d3 version 5.7.0" in line for line in console), console  # the vendored d3 ran


def test_model_view_draws_offline_in_chromium(attention, chromium, tmp_path):
    dom, console = _show(attention, "model_view", True, tmp_path, chromium)
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert len(dom.find("svg")) == 1, console
    # One thumbnail per layer and head, each with a line per token pair.
    thumbnails = [e["attrs"]["id"] for e in dom.find("rect") if e["attrs"].get("class") == "attn_background"]
    assert thumbnails == [f"attn_background_{lay}_{head}" for lay in range(LAYERS) for head in range(HEADS)]
    assert len(dom.find("line")) == LAYERS * HEADS * N * N
    assert [e["text"] for e in dom.find("text")] == ["Heads", "0", "1", "2", "Layers", "0", "1"]


def test_two_offline_views_share_a_page(attention, chromium, tmp_path):
    """As in a notebook: the second view finds require.js, d3 and jquery already defined."""
    views = [attention_views.head_view(attention, TOKENS, offline=True),
             attention_views.model_view(attention, TOKENS, offline=True)]
    page = attention_views.save_html("\n".join(v.data for v in views), tmp_path / "both.html")
    dom, console = _render(chromium, page, tmp_path)
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert len(Dom(dom).find("svg")) == 2


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_bertviz_cdn_html_draws_nothing_without_network(attention, chromium, tmp_path, view):
    """Negative control: bertviz's own HTML, opened the same way, fails to load require.js."""
    dom, console = _show(attention, view, False, tmp_path, chromium)
    assert dom.find("svg") == [] and dom.find("line") == [] and dom.find("text") == []
    assert [o for o in dom.find("option") if o["select"] == "layer"] == []
    assert any("require is not defined" in line for line in console), console
