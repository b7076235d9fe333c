"""Offline bertviz views (course.attention_views).

Fast checks of the HTML rewrite. (That Chromium really draws the views offline is
tests/e2e/test_browser.py.)"""

from __future__ import annotations

import re

import pytest
from IPython.display import HTML

from course import attention_views
from support import SENTENCE_B_START, TOKENS, Dom


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
    scripts = Dom(page).find("script")  # as a browser splits them: require.js, d3+jQuery, bertviz
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
