"""``FoldTransposeIntoBatchMatmul``: a transposed ``nn.batch_matmul`` operand read as it
is stored, through the ``transpose_a`` / ``transpose_b`` flags.

Exporters write attention as ``Q @ K^T`` with ``K^T`` a transpose that moves the
head-size axis last but one: ``reshape(transpose(reshape(k, [1, S, H, D]), [0, 2, 3, 1]),
[H, D, S])``. Materialised, that transpose moves single elements (it took 30 us of a
BERT layer's 113 us of attention scores on the host); with its last two axes swapped
back it copies whole rows (``[0, 2, 1, 3]``, 4 us), and BLAS takes the operand
transposed (``transpose_b``) at no cost. So, for an operand that is a ``transpose`` (3-D
or more, optionally under a ``reshape`` that only merges its leading axes) whose
permutation puts the input's last axis last but one:

- the permutation's last two entries are swapped (an identity permutation disappears),
- the reshape's last two sizes are swapped,
- the operand's ``transpose_a`` / ``transpose_b`` flag is flipped.

Only operands used once are rewritten (another use would keep the old copy alive).
Functions for backends and composite functions are left as they are.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> a, b = relay.var("a", shape=(2, 5, 4)), relay.var("b", shape=(2, 6, 4))
>>> y = relay.nn.batch_matmul(a, relay.transpose(b, [0, 2, 1]), transpose_b=False)
>>> body = FoldTransposeIntoBatchMatmul()(IRModule.from_expr(relay.Function([a, b], y)))
>>> call = body["main"].body
>>> call.args[1] is body["main"].params[1], call.attrs.transpose_b
(True, True)
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr, Function, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType
from relaykit.op import reshape, transpose
from relaykit.op.nn import batch_matmul

from .fold_constant import rewrite_outside_opaque
from .infer_type import infer_type
from .pass_infra import FunctionPass, PassContext

__all__ = ["FoldTransposeIntoBatchMatmul", "fold_transpose_into_batch_matmul"]


def _name(e: Expr) -> str:
    return e.op.name if type(e) is Call and type(e.op) is Op else ""


def _shape(e: Expr) -> tuple[int, ...] | None:
    t = checked_type_or_none(e)
    if not isinstance(t, TensorType) or not all(isinstance(d, int) for d in t.shape):
        return None
    return tuple(int(d) for d in t.shape)


def _perm(call: Expr, ndim: int) -> list[int]:
    axes = call.attrs.axes  # type: ignore[attr-defined]
    if not axes:
        return list(reversed(range(ndim)))
    return [int(a) % ndim for a in axes]


def _swapped(new: Expr, old: Expr, uses: dict[Expr, int]) -> Expr | None:
    """The operand ``new`` (``old`` before the rewrite, with types) with its last two axes
    swapped, without the element-wise transpose; None when it is not such a transpose."""
    outer = old if _name(old) == "reshape" else None
    trans = old.args[0] if outer is not None else old  # type: ignore[attr-defined]
    if _name(trans) != "transpose" or uses.get(trans, 0) != 1:
        return None
    if outer is not None and uses.get(outer, 0) != 1:
        return None
    t_shape = _shape(trans)
    if t_shape is None or len(t_shape) < 3:
        return None
    n = len(t_shape)
    perm = _perm(trans, n)
    if perm[-2] != n - 1:  # the stored rows are not what the operand reads as columns
        return None
    new_trans: Expr = new.args[0] if outer is not None else new  # type: ignore[attr-defined]
    src = new_trans.args[0]  # type: ignore[attr-defined]
    new_perm = [*perm[:-2], perm[-1], perm[-2]]
    swapped = src if new_perm == list(range(n)) else transpose(src, new_perm)
    if outer is None:
        return swapped
    out_shape = _shape(outer)
    if out_shape is None or len(out_shape) < 2 or out_shape[-2:] != t_shape[-2:]:
        return None  # the reshape does more than merge the leading axes
    return reshape(swapped, [*out_shape[:-2], out_shape[-1], out_shape[-2]])


def fold_transpose_into_batch_matmul(expr: Expr) -> Expr:
    """``expr`` with the module docs' rewrite applied (types are inferred, if missing)."""
    if not expr.has_checked_type:
        infer_type(expr)
    uses: dict[Expr, int] = {}
    for node in post_order(expr):
        if type(node) is Call:
            for arg in node.args:
                uses[arg] = uses.get(arg, 0) + 1

    def post(new: Expr, old: Expr) -> Expr | None:
        if _name(new) != "nn.batch_matmul":
            return None
        a, b = new.args  # type: ignore[attr-defined]
        attrs = new.attrs  # type: ignore[attr-defined]
        old_a, old_b = old.args  # type: ignore[attr-defined]
        flip_a, flip_b = _swapped(a, old_a, uses), _swapped(b, old_b, uses)
        if flip_a is None and flip_b is None:
            return None
        return batch_matmul(
            a if flip_a is None else flip_a,
            b if flip_b is None else flip_b,
            out_dtype=attrs.out_dtype,
            transpose_a=attrs.transpose_a != (flip_a is not None),
            transpose_b=attrs.transpose_b != (flip_b is not None),
        )

    return rewrite_outside_opaque(expr, post)


class FoldTransposeIntoBatchMatmul(FunctionPass):
    """See the module docs (opt_level 1)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=1, name="FoldTransposeIntoBatchMatmul")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = fold_transpose_into_batch_matmul(fn)
        return out if isinstance(out, Function) else fn
