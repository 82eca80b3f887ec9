"""``tvm.tir.expr``: the expression classes of TIR that Relay uses (symbolic
dimensions, ``Any``, immediates).

>>> from relaykit.tir.expr import Var
>>> Var("n", "int64").name
'n'
"""

from relaykit.ir.symbolic import Any, PrimExpr, SizeVar, SymExpr, Var
from relaykit.tir import FloatImm, IntImm, StringImm

__all__ = ["Any", "FloatImm", "IntImm", "PrimExpr", "SizeVar", "StringImm", "SymExpr", "Var"]
