"""bertviz views that work with or without network.

bertviz 1.4.1 builds its head and model views without network, but the HTML it returns loads
require.js, d3 and jQuery from a CDN: with no network (the autograder, an offline laptop, CI) the
view draws nothing, silently. Offline, these functions inline the copies in ``course/vendor/``
(versions and provenance in its README) instead; online (Colab by default, see
:func:`course.env.is_online`) they return bertviz's own HTML untouched.

    from course import attention_views
    outputs = model(**inputs, output_attentions=True)
    attention_views.head_view(outputs.attentions, tokens)   # last line of a cell displays it
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.display import HTML

from course import env

if TYPE_CHECKING:
    import torch

VENDOR = Path(__file__).with_name("vendor")

#: What bertviz 1.4.1 loads from the network: the require.js tag it puts first in its HTML, and the
#: ``require.config`` paths at the top of head_view.js / model_view.js. Anything else is an error.
REQUIRE_TAG = '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
CDN_PATHS = {
    "d3": "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min",
    "jquery": "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min",
}
_CONFIG = re.compile(r"require\.config\(\{\s*paths:\s*\{(?P<paths>[^{}]*)\}\s*,?\s*\}\);")
_PATH = re.compile(r"""(\w+)\s*:\s*['"]([^'"]*)['"]""")
# Left in bertviz's part after the rewrite, these would be something else fetched from the network
# (not a bare quoted URL: a token of the visualised text may well be one).
_NETWORK = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|require(?:js)?\.config\(|@import""", re.I)


class OfflineViewError(RuntimeError):
    """bertviz's HTML is not the one this module knows how to make offline (a bertviz upgrade?).

    Raised rather than returning a view that would silently draw nothing without network."""


def head_view(
    attention: Sequence[torch.Tensor] | None,
    tokens: list[str] | None,
    sentence_b_start: int | None = None,
    offline: bool | None = None,
    **kwargs: Any,
) -> HTML:
    """bertviz's head view (attention lines between tokens, one layer at a time).

    ``attention`` is what a transformers model returns with ``output_attentions=True``: a tuple
    with one ``(1, heads, seq, seq)`` tensor per layer. ``offline=None`` means offline unless
    :func:`course.env.is_online`. Other keyword arguments (``layer``, ``heads``,
    ``include_layers``, encoder-decoder ones...) go to :func:`bertviz.head_view`.
    """
    from bertviz import head_view as bertviz_head_view

    return _view(bertviz_head_view, attention, tokens, sentence_b_start, offline, kwargs)


def model_view(
    attention: Sequence[torch.Tensor] | None,
    tokens: list[str] | None,
    sentence_b_start: int | None = None,
    offline: bool | None = None,
    **kwargs: Any,
) -> HTML:
    """bertviz's model view (a thumbnail per layer and head); arguments as in :func:`head_view`,
    other keyword arguments (``display_mode``, ``include_heads``...) go to :func:`bertviz.model_view`."""
    from bertviz import model_view as bertviz_model_view

    return _view(bertviz_model_view, attention, tokens, sentence_b_start, offline, kwargs)


def save_html(view: HTML | str, path: str | os.PathLike[str]) -> Path:
    """Write a view as a standalone page (opens in any browser; offline views need no network)."""
    body = view.data if isinstance(view, HTML) else view
    path = Path(path)
    path.write_text(
        '<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>bertviz</title></head>\n'
        f"<body>\n{body}\n</body>\n</html>\n",
        encoding="utf-8",
    )
    return path


def make_offline(html: str) -> str:
    """bertviz's HTML with its CDN loads replaced by the vendored scripts, inlined.

    The require.js tag becomes inline require.js plus a script that defines the AMD modules
    ``d3`` and ``jquery`` from the vendored copies; the ``require.config`` paths that point at the
    CDN are removed, so bertviz's own ``requirejs(['jquery', 'd3'], ...)`` resolves to them.
    Everything else in bertviz's HTML is kept byte for byte.
    """
    if html.count(REQUIRE_TAG) != 1:
        raise OfflineViewError(
            f"expected bertviz's HTML to load require.js once with {REQUIRE_TAG!r}; found it "
            f"{html.count(REQUIRE_TAG)} times. Script tags found: {re.findall(r'<script[^>]*>', html)}"
        )
    configs = list(_CONFIG.finditer(html))
    found = [dict(_PATH.findall(m["paths"])) for m in configs]
    if found != [CDN_PATHS]:
        raise OfflineViewError(
            f"expected one require.config with paths {CDN_PATHS}; found {found or 'none'}. "
            "If bertviz now asks for other versions, vendor them (course/vendor/README.md)."
        )
    match = configs[0]
    html = html[: match.start()] + "/* d3, jquery: inlined by course.attention_views */" + html[match.end() :]
    before, after = html.split(REQUIRE_TAG)
    leftover = _NETWORK.findall(before + after)
    if leftover:
        raise OfflineViewError(f"bertviz's HTML still refers to the network after the rewrite: {leftover}")
    return before + _vendored_scripts() + after


def _view(
    bertviz_view: Callable[..., HTML],
    attention: Sequence[torch.Tensor] | None,
    tokens: list[str] | None,
    sentence_b_start: int | None,
    offline: bool | None,
    kwargs: dict[str, Any],
) -> HTML:
    if "html_action" in kwargs:
        raise TypeError("html_action is always 'return' here: the view is returned as an IPython HTML")
    view = bertviz_view(
        attention=attention, tokens=tokens, sentence_b_start=sentence_b_start, html_action="return", **kwargs
    )
    if offline is None:
        offline = not env.is_online()
    return HTML(make_offline(view.data)) if offline else view


@cache
def _vendored_scripts() -> str:
    """Inline require.js, then d3 and jQuery registered as the AMD modules bertviz requires.

    Each library runs in a function where ``define`` is hidden and a CommonJS ``module`` is given,
    so it neither calls ``define`` anonymously (require.js rejects that outside a file it loaded)
    nor sets ``window.$``/``window.d3`` (Jupyter's page has its own jQuery). require.js does nothing
    on a page that already has an AMD loader (classic Notebook), and named ``define`` calls for
    modules the page already has are ignored, so the page keeps its own.
    """

    def read(name: str) -> str:
        # "</script" inside a string or regex would end the inline <script>; "<\/" means the same.
        return re.sub(r"</(script)", r"<\\/\1", (VENDOR / name).read_text(encoding="utf-8"), flags=re.I)

    def commonjs(name: str) -> str:
        return (
            "(function () { var define, module = {exports: {}}, exports = module.exports;\n"
            f"{read(name)}\n;return module.exports; }}).call(window)"
        )

    return (
        f"<script>\n{read('require.min.js')}\n</script>\n"
        "<script>\n(function (d3, jquery) {\n"
        "  define('d3', [], function () { return d3; });\n"
        "  define('jquery', [], function () { return jquery; });\n"
        f"}})(\n{commonjs('d3.min.js')},\n{commonjs('jquery.min.js')});\n</script>\n"
    )
