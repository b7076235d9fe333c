"""Offline bertviz views (course.attention_views).

Fast checks of the HTML rewrite, then the real thing: headless Chromium with the network blocked
draws the offline head and model views, and draws nothing from bertviz's own CDN HTML (the
negative control that shows the browser check can see the problem at all)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch
from IPython.display import HTML

from course import attention_views

LAYERS, HEADS = 2, 3
TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]", "it", "slept", "[SEP]"]
SENTENCE_B_START = 5
N = len(TOKENS)


@pytest.fixture(scope="module")
def attention() -> tuple[torch.Tensor, ...]:
    """What a transformers model returns with output_attentions=True, from a tiny random BERT."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=32, hidden_size=12, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=16, max_position_embeddings=N, attn_implementation="eager",
    )
    model = BertModel(config).eval()
    token_type_ids = torch.tensor([[0] * SENTENCE_B_START + [1] * (N - SENTENCE_B_START)])
    with torch.no_grad():
        out = model(input_ids=torch.arange(N)[None], token_type_ids=token_type_ids, output_attentions=True)
    assert isinstance(out.attentions, tuple) and out.attentions[0].shape == (1, HEADS, N, N)
    return out.attentions


def _same_ids(html: str) -> str:
    """bertviz names each view's div with a fresh uuid."""
    return re.sub(r"bertviz-[0-9a-f]{32}", "bertviz-ID", html)


# --- fast: the HTML itself ---------------------------------------------------------------------

@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_offline_html_is_self_contained(attention, view):
    html = getattr(attention_views, view)(attention, TOKENS, SENTENCE_B_START, offline=True)
    assert isinstance(html, HTML)
    page = html.data
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I), "offline view must load no script file"
    assert "cdnjs" not in page, "the require.config paths to the CDN must be gone"
    for name in ("require.min.js", "d3.min.js", "jquery.min.js"):
        assert (attention_views.VENDOR / name).read_text(encoding="utf-8")[-3000:] in page, name
    assert "requirejs(['jquery', 'd3']" in page  # bertviz's own code is kept
    scripts = _Dom(page).find("script")  # as a browser splits them: require.js, d3+jQuery, bertviz
    assert len(scripts) == 3 and not [s for s in scripts if "src" in s["attrs"]]


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_online_returns_bertviz_html_unchanged(attention, view):
    import bertviz

    ours = getattr(attention_views, view)(attention, TOKENS, SENTENCE_B_START, offline=False)
    theirs = getattr(bertviz, view)(attention, TOKENS, SENTENCE_B_START, html_action="return")
    assert isinstance(ours, HTML)
    assert _same_ids(ours.data) == _same_ids(theirs.data)
    assert attention_views.REQUIRE_TAG in ours.data


def test_offline_default_follows_course_env(attention, monkeypatch):
    monkeypatch.setenv("COURSE_ONLINE", "1")
    assert attention_views.REQUIRE_TAG in attention_views.head_view(attention, TOKENS).data
    monkeypatch.setenv("COURSE_ONLINE", "0")
    assert "cdnjs" not in attention_views.head_view(attention, TOKENS).data


def test_unexpected_bertviz_html_fails_loudly(attention):
    html = attention_views.head_view(attention, TOKENS, offline=False).data
    with pytest.raises(attention_views.OfflineViewError, match="d3/7.8.5"):
        attention_views.make_offline(html.replace("d3/5.7.0", "d3/7.8.5"))
    with pytest.raises(attention_views.OfflineViewError, match="require.js"):
        attention_views.make_offline(html.replace(attention_views.REQUIRE_TAG, ""))
    with pytest.raises(attention_views.OfflineViewError, match="network"):
        attention_views.make_offline(html + '<script src="https://example.org/x.js"></script>')
    with pytest.raises(TypeError, match="html_action"):
        attention_views.head_view(attention, TOKENS, html_action="view")


# --- real browser, network blocked -------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium, installed with apt-get if missing (skips only if that is impossible)."""
    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip("chromium is not installed and installing it needs root (apt-get install chromium)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        try:
            subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as error:
            detail = getattr(error, "stderr", "") or ""
            pytest.skip(f"could not install chromium with {' '.join(cmd)!r}: {error} {detail[-500:]}")
    found = shutil.which("chromium")
    if not found:
        pytest.skip("apt-get install chromium succeeded but no 'chromium' on PATH")
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


class _Dom(HTMLParser):
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


def _show(attention, view: str, offline: bool, tmp_path: Path, chromium: str) -> tuple[_Dom, list[str]]:
    html = getattr(attention_views, view)(attention, TOKENS, SENTENCE_B_START, offline=offline)
    page = attention_views.save_html(html, tmp_path / f"{view}-{'offline' if offline else 'cdn'}.html")
    dom, console = _render(chromium, page, tmp_path)
    return _Dom(dom), console


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
    assert len(_Dom(dom).find("svg")) == 2


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_bertviz_cdn_html_draws_nothing_without_network(attention, chromium, tmp_path, view):
    """Negative control: bertviz's own HTML, opened the same way, fails to load require.js."""
    dom, console = _show(attention, view, False, tmp_path, chromium)
    assert dom.find("svg") == [] and dom.find("line") == [] and dom.find("text") == []
    assert [o for o in dom.find("option") if o["select"] == "layer"] == []
    assert any("require is not defined" in line for line in console), console
