"""``tvm.relay.backend.utils``: the module-name mangling of generated symbols.

>>> mangle_module_name("default"), mangle_module_name(None)
('tvmgen_default', 'tvmgen')
"""

from __future__ import annotations

from relaykit.errors import IRError

__all__ = ["mangle_module_name"]


def mangle_module_name(mod_name: str | None) -> str:
    """``tvmgen_<mod_name>`` (``tvmgen`` for no name), the prefix of a build's symbols;
    a name that is not ASCII cannot be part of a C symbol (an ``IRError``, a ValueError)."""
    if not mod_name:
        return "tvmgen"
    if not mod_name.isascii():
        raise IRError(f"module name {mod_name!r} must be ASCII: it becomes part of C symbols")
    return f"tvmgen_{mod_name}"
