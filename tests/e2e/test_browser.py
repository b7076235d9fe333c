"""Offline bertviz views in a real browser: Debian's Chromium driven by Playwright (the harness the
formgrader tests use), headless, with every network request refused,
draws the offline head and model views, and draws nothing from bertviz's own CDN HTML (the
negative control that shows the browser check can see the problem at all).

Chromium is installed by `make system-packages` (which `make test` runs), never by a test: where
it is missing these tests skip and say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from course import attention_views
from support import HEADS, LAYERS, SENTENCE_B_START, TOKENS, Dom, N

pytestmark = pytest.mark.notebooks


def _render(browser, page: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and the console lines, for ``page`` opened with every request
    that is not a local file refused (no network)."""
    tab = browser.new_page()
    console: list[str] = []
    tab.on("console", lambda m: console.append(f"{'Error: ' if m.type == 'error' else ''}{m.text}"))
    tab.on("pageerror", lambda error: console.append(f"Uncaught {error}"))
    tab.route(
        "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
    )
    try:
        tab.goto(page.as_uri())
        tab.wait_for_load_state("load")
        tab.wait_for_timeout(1000)  # bertviz draws once require.js has loaded its modules
        return tab.content(), console
    finally:
        tab.close()


def _show(attention, view: str, offline: bool, tmp_path: Path, browser) -> tuple[Dom, list[str]]:
    html = getattr(attention_views, view)(attention, TOKENS, SENTENCE_B_START, offline=offline)
    page = attention_views.save_html(html, tmp_path / f"{view}-{'offline' if offline else 'cdn'}.html")
    dom, console = _render(browser, page)
    return Dom(dom), console


def test_head_view_draws_offline_in_chromium(attention, browser, tmp_path):
    dom, console = _show(attention, "head_view", True, tmp_path, browser)
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


def test_model_view_draws_offline_in_chromium(attention, browser, tmp_path):
    dom, console = _show(attention, "model_view", True, tmp_path, browser)
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert len(dom.find("svg")) == 1, console
    # One thumbnail per layer and head, each with a line per token pair.
    thumbnails = [e["attrs"]["id"] for e in dom.find("rect") if e["attrs"].get("class") == "attn_background"]
    assert thumbnails == [f"attn_background_{lay}_{head}" for lay in range(LAYERS) for head in range(HEADS)]
    assert len(dom.find("line")) == LAYERS * HEADS * N * N
    assert [e["text"] for e in dom.find("text")] == ["Heads", "0", "1", "2", "Layers", "0", "1"]


def test_two_offline_views_share_a_page(attention, browser, tmp_path):
    """As in a notebook: the second view finds require.js, d3 and jquery already defined."""
    views = [
        attention_views.head_view(attention, TOKENS, offline=True),
        attention_views.model_view(attention, TOKENS, offline=True),
    ]
    page = attention_views.save_html("\n".join(v.data for v in views), tmp_path / "both.html")
    dom, console = _render(browser, page)
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
    assert len(Dom(dom).find("svg")) == 2


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_bertviz_cdn_html_draws_nothing_without_network(attention, browser, tmp_path, view):
    """Negative control: bertviz's own HTML, opened the same way, fails to load require.js."""
    dom, console = _show(attention, view, False, tmp_path, browser)
    assert dom.find("svg") == [] and dom.find("line") == [] and dom.find("text") == []
    assert [o for o in dom.find("option") if o["select"] == "layer"] == []
    assert any("require is not defined" in line for line in console), console
