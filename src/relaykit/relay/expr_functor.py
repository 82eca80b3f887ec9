"""TVM's ``relay.expr_functor``: iterative visitor and mutator base classes."""

from relaykit.ir.functor import ExprFunctor, ExprMutator, ExprVisitor

__all__ = ["ExprFunctor", "ExprMutator", "ExprVisitor"]
