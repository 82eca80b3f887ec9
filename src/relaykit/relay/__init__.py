"""The TVM-compatible facade: ``from relaykit import relay`` gives Relay's names.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(10, 1))
>>> print(relay.Function([x], x + x))
fn (%x: Tensor[(10, 1), float32]) {
  add(%x, %x)
}
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import relaykit.op.contrib  # noqa: F401 - relay.op.contrib: the pattern tables of backends
from relaykit import op
from relaykit.backend.build_module import build
from relaykit.backend.interpreter import create_executor
from relaykit.errors import IRError
from relaykit.ir import (
    Call,
    Constant,
    Expr,
    Function,
    FuncType,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    RelayExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TupleWrapper,
    Type,
    TypeVar,
    Var,
    const,
    scalar_type,
)
from relaykit.ir.expr import Span
from relaykit.ir.functor import ExprFunctor, ExprMutator, ExprVisitor
from relaykit.ir.types import TensorType as TensorTypeAlias
from relaykit.op import *  # noqa: F403 - the operator constructors, as relay.add, relay.reshape...
from relaykit.op import annotation, nn
from relaykit.parser import fromtext, parse, parse_expr
from relaykit.text.spans import SourceName
from relaykit.transform.bind import bind

from . import analysis, backend, build_module, dataflow_pattern, expr, expr_functor, transform, ty
from .scope_builder import ScopeBuilder
from .transform import build_config

Module = IRModule
ShapeVar = None  # dynamic shapes are not supported


def var(
    name_hint: str,
    type_annotation: Any = None,
    shape: Any = None,
    dtype: Any = "float32",
    span: Span | None = None,
) -> Var:
    """A variable: ``relay.var("x", shape=(1, 3), dtype="float32")``.

    With neither a type nor a shape the variable's type is left to inference.
    """
    if type_annotation is not None and shape is not None:
        raise IRError("give relay.var either a type_annotation or a shape, not both")
    if isinstance(type_annotation, str):
        type_annotation = TensorTypeAlias((), type_annotation)
    if shape is not None:
        type_annotation = TensorTypeAlias(shape, dtype)
    return Var(name_hint, type_annotation, span)


__all__ = [
    "Call",
    "Constant",
    "Expr",
    "FuncType",
    "Function",
    "GlobalVar",
    "If",
    "IncompleteType",
    "IRModule",
    "Let",
    "Module",
    "RelayExpr",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "TupleWrapper",
    "Type",
    "TypeVar",
    "Var",
    "const",
    "scalar_type",
    "var",
    "bind",
    "fromtext",
    "parse",
    "parse_expr",
    "SourceName",
    "ExprFunctor",
    "ExprVisitor",
    "ExprMutator",
    "create_executor",
    "build",
    "op",
    "nn",
    "annotation",
    "transform",
    "analysis",
    "dataflow_pattern",
    "expr_functor",
    "backend",
    "build_module",
    "expr",
    "ty",
    "ScopeBuilder",
    "build_config",
]


def __getattr__(name: str) -> ModuleType:
    # relay.testing (the workloads) and relay.frontend (the importers) load on first use:
    # loading and running an artifact imports neither (tests/contrib/test_export.py).
    if name in ("testing", "frontend"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'relaykit.relay' has no attribute {name!r}")
