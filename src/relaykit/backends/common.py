"""Helpers shared by the built-in backends: the optimize hook, status checks, the
version.

>>> from relaykit.ir import IRModule
>>> inference_optimize(IRModule()).functions
{}
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from typing import Any

from relaykit.errors import CompilerNotFoundError, RelayTypeError
from relaykit.execution.codegen.toolchain import find_c_compiler
from relaykit.ir.expr import Call, Expr
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.fold_constant import FoldConstant
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Sequential
from relaykit.transform.simplify_inference import SimplifyInference

__all__ = ["inference_optimize", "c_compiler_missing", "RELAYKIT_VERSION"]


def _version() -> str:
    try:
        return importlib.metadata.version("relaykit")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


#: The version of the built-in backends: relaykit's own.
RELAYKIT_VERSION = _version()


def c_compiler_missing() -> str | None:
    """``None`` when a C compiler is on PATH; otherwise why not (a backend's status check)."""
    try:
        find_c_compiler("ccompiler")
    except CompilerNotFoundError:
        return "no C compiler found (set CC or install cc, gcc or clang)"
    return None


def inference_optimize(mod: IRModule, params: Mapping[str, Any] | None = None) -> IRModule:
    """The optimize hook of the example backends, as TVM's ``partition_for_<lib>``: bind
    ``params``, then ``SimplifyInference`` and ``FoldConstant`` (batch norms become
    multiply/add with constant scales the backend can take)."""
    if params and "main" in mod:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    seq = Sequential([InferType(), SimplifyInference(), FoldConstant(), InferType()])
    return seq(mod)


def tensor_type(expr: Expr) -> TensorType:
    """The tensor type of ``expr`` (rules run on typed calls)."""
    ty = expr.checked_type
    if not isinstance(ty, TensorType):
        raise RelayTypeError(f"expected a tensor, got {ty}")
    return ty


def op_name(call: Call) -> str:
    """The operator name of ``call`` ("" when it calls a function)."""
    return str(getattr(call.op, "name", ""))
