"""The Relay pattern language: match, rewrite and partition dataflow graphs.

TVM's ``relay.dataflow_pattern`` (0.8-0.19) with TVM's semantics, iterative on
the graph (a 100,000-op chain partitions and rewrites without recursion, in
linear time), and able to say why a pattern does not match.

>>> from relaykit.ir import Var, TensorType
>>> from relaykit.dataflow_pattern import is_op, wildcard
>>> x = Var("x", TensorType((2,)))
>>> pat = is_op("multiply")(wildcard(), wildcard())
>>> pat.match(x + x)
False
>>> print(pat.match(x + x, explain=True))
is_op('multiply') expected op multiply but found add at root

Building patterns
-----------------
:func:`wildcard`, :func:`is_op`, :func:`is_constant`, :func:`is_var`,
:func:`is_expr`, :func:`is_tuple`, :func:`is_tuple_get_item`, :func:`is_if`,
:func:`is_let`, :func:`has_attr`, :func:`has_type`, :func:`has_dtype`,
:func:`has_shape`, :func:`dominates`, :class:`FunctionPattern`, and the sugar
on :class:`DFPattern`: ``p(a, b)`` (``p(None)``: any arguments), ``p | q``,
``p + q`` / ``-`` / ``*`` / ``/``, ``p.has_attr({...})``, ``p.has_type(t)``,
``p.has_dtype(d)``, ``p.has_shape(s)``, ``p.optional(f)`` (``p | f(p)``),
``p.dominates(parent, path)``. Patterns are frozen and compared by identity:
one pattern object used twice must match one expression node.

Using them
----------
* :func:`match` / ``pattern.match(expr)``: TVM's matcher. ``add`` and
  ``multiply`` match commutatively, ``(a * b) / c`` and ``a * (b / c)``
  associate; ``has_attr`` checks call attributes, function attributes, or an
  operator's attributes (``{"TOpPattern": 0}``); type patterns read
  ``checked_type`` (inferring it in place when missing, as TVM does).
* :func:`rewrite` with :class:`DFPatternCallback` subclasses
  (``require_type``, ``rewrite_once``): passes until nothing changes.
* :func:`partition` / ``pattern.partition(expr, attrs, check)``: each match
  becomes a call of a function with ``PartitionedFromPattern`` (e.g.
  ``nn.conv2d_nn.bias_add_nn.relu_``) and ``attrs``; constants matched by
  ``is_constant()`` or ``is_expr(const)`` are embedded, other inputs become
  parameters in the order of the pattern's leaves.
* :class:`PatternGrouper` exposes the matches ``partition`` and ``rewrite``
  use (greedy from the output towards the inputs, disjoint) and the rejected
  ones with the reason (overlap, or an interior node used outside the match).

Explaining a failed match
-------------------------
``pattern.match(expr, explain=True)`` and ``match_explain(pattern, expr)``
return a :class:`MatchResult`, truthy when the pattern matched. On failure:

* ``reason``: ``"is_op('nn.relu') expected op nn.relu but found nn.bias_add at %1"``
  -- the sub-pattern that failed, what it expected, what it found, and where;
* ``node``: the expression node it failed on; ``path``: its field path from
  ``expr`` (``root.args[0]``); ``location``: its name in ``print(expr)``
  (``%1``), ``%x`` for a variable, ``root``, or the path;
* ``failed_pattern``: the sub-pattern; ``message``: the reason without the
  location (cheap: locations are computed on first use);
* ``render()``: the reason followed by the printed IR around the node.

On success ``node_map`` maps each sub-pattern to the nodes it matched. When the
matcher tried several ways (alternatives, commutative operands, optional ops),
the failure reported is the one that got furthest into the pattern.

Where relaykit differs from TVM
-------------------------------
* No recursion on the graph: dominator paths, extraction and rewriting are
  iterative; a node already shown to reach the dominator's parent is not
  walked again (TVM's ``MatchesPath`` can take exponential time on diamonds).
* ``rewrite`` raises :class:`RewriteError` only when it did not converge
  within 100 callback passes (TVM aborts after 100 passes even when the last
  one converged, e.g. with 50 callbacks).
* ``partition`` calls ``check`` in a top-down walk, once per candidate match,
  and does not rebuild the inside of the matches it replaces.
* A recursive pattern (``wildcard().redirect_to(...)``) is matched recursively,
  one level per repetition; past Python's recursion limit (a few hundred
  repetitions) matching raises :class:`PatternError` instead of crashing.
"""

from .constructors import (
    dominates,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from .explain import MatchResult, match_explain
from .grouper import Group, PatternGrouper, Rejection
from .matcher import DFPatternMatcher, match
from .partition import partition
from .pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DataTypePattern,
    DFPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    PatternError,
    PatternOperations,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    install_operations,
)
from .printer import pattern_to_str
from .rewrite import DFPatternCallback, RewriteError, rewrite

__all__ = [
    # building patterns
    "wildcard", "is_op", "is_constant", "is_var", "is_expr", "is_tuple", "is_tuple_get_item",
    "is_if", "is_let", "has_attr", "has_type", "has_dtype", "has_shape", "dominates",
    # pattern classes
    "DFPattern", "ExprPattern", "VarPattern", "ConstantPattern", "WildcardPattern",
    "CallPattern", "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "IfPattern",
    "LetPattern", "AltPattern", "AttrPattern", "TypePattern", "DataTypePattern", "ShapePattern",
    "DominatorPattern",
    # using patterns
    "match", "match_explain", "MatchResult", "rewrite", "DFPatternCallback", "partition",
    "DFPatternMatcher", "PatternGrouper", "Group", "Rejection",
    # errors
    "PatternError", "RewriteError",
]  # fmt: skip

# DFPattern's methods (match, partition, str) run the algorithms built on the pattern
# classes: the package hands them down once every module is loaded.
install_operations(
    PatternOperations(
        match=match, match_explain=match_explain, partition=partition, to_str=pattern_to_str
    )
)
