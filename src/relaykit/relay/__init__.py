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
import typing
from types import ModuleType

import relaykit.op.contrib  # noqa: F401 - relay.op.contrib: the pattern tables of backends
from relaykit.errors import DiagnosticError, IRError
from relaykit.execution.build_module import build, optimize
from relaykit.execution.interpreter import create_executor
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
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    RelayExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TupleWrapper,
    Type,
    TypeKind,
    TypeRelation,
    TypeVar,
    Var,
    const,
    scalar_type,
)
from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
)
from relaykit.ir.expr import Span
from relaykit.ir.functor import ExprFunctor, ExprMutator, ExprVisitor, post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType as TensorTypeAlias
from relaykit.op import *  # noqa: F403 - the operator constructors, as relay.add, relay.reshape...
from relaykit.op import annotation, nn
from relaykit.parser import fromtext, parse, parse_expr
from relaykit.text.spans import SourceName
from relaykit.tir import Any  # relay.Any(): a dimension unknown until run time
from relaykit.transform.bind import bind

from . import (
    adt,
    analysis,
    backend,
    base,
    build_module,
    dataflow_pattern,
    expr,
    expr_functor,
    function,
    loops,
    op,
    param_dict,
    prelude,
    qnn,
    transform,
    ty,
    type_functor,
    vm,
)
from .op import random
from .scope_builder import ScopeBuilder
from .transform import build_config
from .type_functor import TypeFunctor, TypeMutator, TypeVisitor

Module = IRModule


def SpanCheck() -> Any:
    """TVM's ``relay.SpanCheck`` pass: every expression of every function must have a
    source span (as the parser and ``AnnotateSpans`` give them); a node without one is a
    :class:`~relaykit.errors.DiagnosticError`."""

    def check(mod: IRModule, ctx: Any) -> IRModule:
        for gv, fn in mod.items():
            for node in post_order(fn):
                if node.span is None and not isinstance(node, (Op, GlobalVar)):
                    raise DiagnosticError(
                        f"SpanCheck: a {type(node).__name__} in @{gv.name_hint} has no span; "
                        "parse the module from text or run relay.transform.AnnotateSpans()"
                    )
        return mod

    return transform.module_pass(check, opt_level=0, name="SpanCheck")


ShapeVar = None  # dynamic shapes are not supported


def var(
    name_hint: str,
    type_annotation: typing.Any = None,
    shape: typing.Any = None,
    dtype: typing.Any = "float32",
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
    "adt",
    "function",
    "param_dict",
    "type_functor",
    "TypeFunctor",
    "TypeMutator",
    "TypeVisitor",
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
    "RefCreate",
    "RefRead",
    "RefWrite",
    "RefType",
    "TypeKind",
    "TypeRelation",
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
    "optimize",
    "op",
    "random",
    "nn",
    "annotation",
    "transform",
    "analysis",
    "dataflow_pattern",
    "expr_functor",
    "backend",
    "base",
    "build_module",
    "expr",
    "ty",
    "ScopeBuilder",
    "Any",
    "SpanCheck",
    "vm",
    "loops",
    "prelude",
    "qnn",
    "Clause",
    "Constructor",
    "GlobalTypeVar",
    "Match",
    "PatternConstructor",
    "PatternTuple",
    "PatternVar",
    "PatternWildcard",
    "TypeCall",
    "TypeData",
    "build_config",
]


# loaded on first use: the workloads, the importers, and the modules of TVM paths that
# relaykit leaves out (importing them costs nothing, but nothing needs them either)
_LAZY = ("testing", "frontend", "quantize", "collage", "data_dep_optimization", "debug")


def __getattr__(name: str) -> ModuleType:
    # relay.testing (the workloads) and relay.frontend (the importers) load on first use:
    # loading and running an artifact imports neither (tests/backends/test_export.py).
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'relaykit.relay' has no attribute {name!r}")
