"""``SplitArgs``: a ``concatenate`` of more tensors than a kernel may take is split.

Some devices limit the number of arguments a kernel takes (TVM's
``Target.max_function_args``: 128 for OpenCL, 31 for Metal). A fused
``concatenate`` of ``n`` tensors takes ``n`` inputs plus its output, and every
tensor with a dynamic dimension also passes its unknown sizes and its strides.
``SplitArgs(limit)`` rewrites each ``concatenate`` whose inputs would go past the
limit into a chain: the first inputs that fit are concatenated (behind
``annotation.stop_fusion``, so fusion keeps them a kernel of their own), then that
result and the next inputs, and so on. ``limit = 0`` leaves the program as it is.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> from relaykit.transform import InferType
>>> xs = [relay.var(f"x{i}", shape=(1, 2)) for i in range(5)]
>>> mod = InferType()(IRModule.from_expr(relay.concatenate(xs, axis=0)))
>>> out = SplitArgs(4)(mod)["main"].body
>>> len(out.args[0].args[0].fields), out.args[0].args[0].fields[0].op.name
(3, 'concatenate')
"""

from __future__ import annotations

import operator

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Expr, Function, Tuple, checked_type_or_none
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op.annotation import stop_fusion
from relaykit.op.transform import concatenate

from .fuse_args import extra_args
from .pass_infra import FunctionPass, PassContext

__all__ = ["SplitArgs", "split_args", "kernel_args"]


def kernel_args(typ: Type | None, output: bool = False) -> int:
    """How many kernel arguments a tensor of type ``typ`` takes beyond its buffer: its
    dynamic sizes and its strides (:func:`~.fuse_args.extra_args`, as ``FuseOps``
    counts an input); an output passes its strides only; 0 when static.

    >>> from relaykit.ir.symbolic import Any
    >>> kernel_args(TensorType((Any(), 2))), kernel_args(TensorType((Any(), 2)), output=True)
    (3, 2)
    """
    inputs = extra_args(typ, strides=True)
    if not output or inputs == 0 or not isinstance(typ, TensorType):
        return inputs
    return len(typ.shape)


def _outputs(typ: Type | None) -> int:
    if isinstance(typ, TupleType):
        return len(typ.fields) + sum(kernel_args(f, output=True) for f in typ.fields)
    return 1 + kernel_args(typ, output=True)


def _split(tup: Tuple, fields: list[Expr], sizes: list[int], axis: int, limit: int) -> Expr:
    group: list[Expr] = []
    used = 0
    for field, size in zip(fields, sizes, strict=True):
        if used + size > limit:
            joined = concatenate(stop_fusion(tup.with_fields(fields=tuple(group))), axis)
            group, used = [joined], size
        used += size
        group.append(field)
    return concatenate(stop_fusion(tup.with_fields(fields=tuple(group))), axis)


def split_args(expr: Expr, max_function_args: int) -> Expr:
    """``expr`` (typed) with every ``concatenate`` of too many arguments split in a chain
    of concatenations that each fit in ``max_function_args``."""
    limit_all = int(max_function_args)
    if limit_all <= 0:
        return expr

    def post(new: Expr, old: Expr) -> Expr | None:
        if not (
            type(new) is Call
            and type(new.op) is Op
            and new.op.name == "concatenate"
            and isinstance(new.args[0], Tuple)
            and isinstance(old, Call)
            and isinstance(old.args[0], Tuple)
        ):
            return None
        outputs = _outputs(checked_type_or_none(old))
        if limit_all <= outputs:
            raise ArgumentError(
                f"SplitArgs({limit_all}): a concatenate has {outputs} output arguments, "
                "which leaves no room for its inputs; pass a larger max_function_args"
            )
        limit = limit_all - outputs
        extra = [kernel_args(checked_type_or_none(f)) for f in old.args[0].fields]
        sizes = [1 + e for e in extra]
        if sum(sizes) < limit:
            return None
        axis = int(new.attrs["axis"])
        return _split(new.args[0], list(new.args[0].fields), sizes, axis, limit)

    return rewrite_post_order(expr, post)


class SplitArgs(FunctionPass):
    """``relay.transform.SplitArgs(max_function_args)`` (opt_level 1): see the module."""

    def __init__(self, max_function_args: int) -> None:
        try:
            self.max_function_args = operator.index(max_function_args)
        except TypeError:
            raise ArgumentError(
                f"SplitArgs takes the number of arguments a kernel may have (an int such "
                f"as Target.max_function_args; 0 for no limit), got {max_function_args!r}"
            ) from None
        super().__init__(self._transform, opt_level=1, name="SplitArgs", required=("InferType",))

    def _transform(self, fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        out = split_args(fn, self.max_function_args)
        return out if isinstance(out, Function) else fn
