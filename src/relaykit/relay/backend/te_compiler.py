"""``tvm.relay.backend.te_compiler``: TVM's lowering of Relay to tensor expressions.

relaykit lowers nothing to TE (its kernels are NumPy functions and backend
codegens), so the compiler cache has nothing to hold. ``get()`` returns the
process's :class:`TECompiler`, whose ``clear()`` TVM scripts call between
builds; lowering with it raises :class:`~relaykit.errors.UnsupportedFeatureError`.

>>> get().clear()
"""

from __future__ import annotations

from typing import Any, NoReturn

from relaykit.errors import UnsupportedFeatureError

__all__ = ["TECompiler", "get"]

_INSTEAD = "relaykit runs operators as NumPy kernels; build with relay.build(mod, target='llvm')"


class TECompiler:
    """TVM's compile-engine cache. relaykit caches no lowered functions: ``clear()``
    has nothing to drop; ``lower``/``jit`` are unsupported."""

    def clear(self) -> None:
        """Drop cached lowered functions (relaykit keeps none)."""

    def lower(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError.for_name("TE lowering", "lower", _INSTEAD)

    def jit(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError.for_name("TE lowering", "jit", _INSTEAD)


_COMPILER = TECompiler()


def get() -> TECompiler:
    """The process's compiler cache (TVM's ``te_compiler.get()``)."""
    return _COMPILER
