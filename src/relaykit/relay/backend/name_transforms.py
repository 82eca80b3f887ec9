"""``tvm.relay.backend.name_transforms``: the naming rules of generated C code.

Names are built from segments with :func:`prefix_name` (``TVM_...``) or
:func:`prefix_generated_name` (``TVMGen_...``), then styled for C.

>>> to_c_function_style(prefix_generated_name(["model", "run"]))
'TVMGenModelRun'
>>> to_c_variable_style(prefix_name(["device", "t"]))
'tvm_device_t'
>>> to_c_constant_style(prefix_name("version"))
'TVM_VERSION'
"""

from __future__ import annotations

from collections.abc import Sequence

from relaykit.errors import ArgumentError

__all__ = [
    "to_c_function_style",
    "to_c_variable_style",
    "to_c_constant_style",
    "prefix_name",
    "prefix_generated_name",
]


def _check(original: str, kind: str) -> None:
    if not original:
        raise ArgumentError(f"{kind} name is empty")
    if not original.startswith("TVM"):
        raise ArgumentError(f"{kind} not TVM prefixed: {original!r}")


def to_c_function_style(original_name: str) -> str:
    """``TVM_my_func`` -> ``TVMMyFunc``: each ``_``-separated word capitalised, joined."""
    _check(original_name, "Function")
    words = original_name.split("_")
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])


def to_c_variable_style(original_name: str) -> str:
    """``TVM_My_Var`` -> ``tvm_my_var``."""
    _check(original_name, "Variable")
    return original_name.lower()


def to_c_constant_style(original_name: str) -> str:
    """``TVM_my_const`` -> ``TVM_MY_CONST``."""
    _check(original_name, "Constant")
    return original_name.upper()


def _join(prefix: str, names: str | Sequence[str]) -> str:
    if isinstance(names, str):
        if not names:
            raise ArgumentError("Name is empty")
        names = [names]
    if not names:
        raise ArgumentError("Name segments empty")
    if any(not n for n in names):
        raise ArgumentError("Name segment is empty")
    return "_".join([prefix, *names])


def prefix_name(names: str | Sequence[str]) -> str:
    """``"TVM_"`` followed by the segments joined with ``_``."""
    return _join("TVM", names)


def prefix_generated_name(names: str | Sequence[str]) -> str:
    """``"TVMGen_"`` followed by the segments joined with ``_``."""
    return _join("TVMGen", names)
