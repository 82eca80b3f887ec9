"""Relay's text format: printer and parser.

>>> from relaykit.ir import Var, TensorType
>>> x = Var("x", TensorType((10, 1)))
>>> print(astext(x, show_meta_data=False))
free_var %x: Tensor[(10, 1), float32];
%x
>>> parse_expr("free_var %x: float32;\\n%x").type_annotation
TensorType((), float32)
"""

from . import std_library as std_library
from .parser import fromtext, parse, parse_expr
from .printer import VERSION, astext, context_lines

__all__ = ["astext", "context_lines", "parse", "parse_expr", "fromtext", "VERSION"]
