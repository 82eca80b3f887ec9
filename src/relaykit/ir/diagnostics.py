"""``tvm.ir.diagnostics``: the renderer hook of TVM's diagnostic context.

relaykit reports problems as typed exceptions whose message already holds the
rendered source context (:class:`relaykit.errors.DiagnosticError`), so there is
no diagnostic context to render; these functions keep TVM's interface for code
that installs a renderer. An installed renderer is kept and returned by
:func:`get_renderer`; relaykit does not call it.

>>> r = get_renderer()
>>> override_renderer(lambda ctx: None)
>>> get_renderer() is not r
True
>>> override_renderer(None)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DiagnosticRenderer", "get_renderer", "override_renderer"]


class DiagnosticRenderer:
    """A renderer: ``render(diag_ctx)`` shows a context's diagnostics."""

    def __init__(self, render: Callable[[Any], Any] | None = None) -> None:
        self._render = render

    def render(self, ctx: Any) -> None:
        if self._render is not None:
            self._render(ctx)


_DEFAULT = DiagnosticRenderer()
_current: list[DiagnosticRenderer] = [_DEFAULT]


def get_renderer() -> DiagnosticRenderer:
    """The renderer in use (the default one unless overridden)."""
    return _current[0]


def override_renderer(render: Callable[[Any], Any] | None) -> None:
    """Install ``render`` as the renderer (``None`` restores the default)."""
    _current[0] = _DEFAULT if render is None else DiagnosticRenderer(render)
