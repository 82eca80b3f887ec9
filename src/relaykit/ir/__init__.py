"""The Relay IR: expressions, types, attributes, modules, traversal and comparison."""

from .analysis import all_vars, bound_vars, free_vars
from .attrs import Attrs, DictAttrs
from .expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    RelayExpr,
    Span,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    const,
)
from .functor import (
    ExprFunctor,
    ExprMutator,
    ExprVisitor,
    children,
    post_order,
    post_order_visit,
    rebuild,
    rewrite_post_order,
)
from .module import IRModule
from .op import Op, OpRegistry, default_registry, get_op, list_op_names, register_op_attr
from .structural import (
    assert_structural_equal,
    first_mismatch,
    structural_equal,
    structural_hash,
)
from .types import (
    DTYPES,
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
    TypeVar,
    scalar_type,
)

__all__ = [
    "Attrs", "DictAttrs", "Call", "Constant", "Expr", "Function", "GlobalVar", "If", "Let",
    "RelayExpr", "Span", "Tuple", "TupleGetItem", "TupleWrapper", "Var", "const",
    "ExprFunctor", "ExprMutator", "ExprVisitor", "children", "post_order", "post_order_visit",
    "rebuild", "rewrite_post_order", "IRModule", "Op", "OpRegistry", "default_registry",
    "get_op", "list_op_names", "register_op_attr", "assert_structural_equal", "first_mismatch",
    "structural_equal", "structural_hash", "DTYPES", "FuncType", "IncompleteType", "TensorType",
    "TupleType", "Type", "TypeVar", "scalar_type", "free_vars", "bound_vars", "all_vars",
]
