"""Operators: definitions (type relation + reference kernel) and constructors."""

from ..ir.op import get_op as get
from ..ir.op import register_op_attr
from .define import OpPattern, define_op, make_call

__all__ = ["get", "register_op_attr", "OpPattern", "define_op", "make_call"]
