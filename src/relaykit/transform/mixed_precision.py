"""``ToMixedPrecision``: run the heavy operators of a float32 graph in a narrower float.

As TVM's pass of that name, each operator is in one of three groups:

- *always* (convolutions, dense, batch_matmul): the float arguments are cast to the
  mixed type and the operator computes in it (``out_dtype`` set to the
  accumulation type the operator's rule gives);
- *follow* (element-wise arithmetic, activations, pooling, shape operators): computes
  in the mixed type when all its float arguments already are (variables and constants
  count, as they can be cast), else in float32;
- *never* (everything else, e.g. ``exp``, ``softmax``, reductions, ``erf``): float
  arguments are cast back to their original type.

The group of an operator comes from its ``FTVMMixedPrecisionConversionType``
attribute (``relay.op.register_mixed_precision_conversion``: a function
``(call, mixed_type) -> [group, accumulation_dtype, output_dtype]`` with groups
:data:`MIXED_PRECISION_ALWAYS` 0, ``FOLLOW`` 1, ``NEVER`` 2), else from the default
lists below. Casts are shared: a value is cast to a type once, and a cast of a cast
back to the first type is the original value. The function's result stays in the
mixed type unless the pass config ``relay.ToMixedPrecision.keep_orig_output_dtype``
is true. Only float32 values are converted; other dtypes are left alone. An operator
whose constant attributes do not fit the mixed type (``clip`` bounds beyond float16's
65504) stays in float32. A ``let``-bound variable takes its converted value's type.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(1, 4))
>>> w = relay.var("w", shape=(3, 4))
>>> mod = IRModule.from_expr(relay.Function([x, w], relay.nn.relu(relay.nn.dense(x, w))))
>>> out = ToMixedPrecision("float16")(mod)["main"]
>>> out.body.op.name, out.body.args[0].attrs.out_dtype, out.ret_type.dtype
('nn.relu', 'float16', 'float16')
"""

from __future__ import annotations

from collections.abc import Callable

from relaykit.errors import ArgumentError
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.functor import post_order, rebuild
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op, default_registry
from relaykit.ir.type_check import infer_type_local
from relaykit.ir.types import TensorType, TupleType, Type, check_dtype
from relaykit.op import cast

from .fold_constant import _is_opaque
from .infer_type import InferType
from .pass_infra import ModulePass, PassContext

__all__ = [
    "ToMixedPrecision",
    "to_mixed_precision",
    "MIXED_PRECISION_ALWAYS",
    "MIXED_PRECISION_FOLLOW",
    "MIXED_PRECISION_NEVER",
    "DEFAULT_ALWAYS_LIST",
    "DEFAULT_FOLLOW_LIST",
]

MIXED_PRECISION_ALWAYS = 0
MIXED_PRECISION_FOLLOW = 1
MIXED_PRECISION_NEVER = 2

#: Operators that always compute in the mixed type (TVM's default list).
DEFAULT_ALWAYS_LIST = frozenset(
    {
        "nn.conv1d",
        "nn.conv2d",
        "nn.conv3d",
        "nn.conv1d_transpose",
        "nn.conv2d_transpose",
        "nn.conv3d_transpose",
        "nn.dense",
        "nn.batch_matmul",
    }
)

#: Operators that compute in the mixed type when their inputs are in it.
DEFAULT_FOLLOW_LIST = frozenset(
    {
        "nn.pad",
        "nn.batch_flatten",
        "concatenate",
        "zeros",
        "split",
        "squeeze",
        "transpose",
        "expand_dims",
        "reshape",
        "dyn.reshape",
        "broadcast_to_like",
        "dyn.broadcast_to",
        "strided_slice",
        "dyn.strided_slice",
        "take",
        "argwhere",
        "where",
        "tile",
        "dyn.tile",
        "scatter",
        "scatter_elements",
        "scatter_nd",
        "full",
        "dyn.full",
        "nn.depth_to_space",
        "less",
        "greater",
        "less_equal",
        "greater_equal",
        "copy",
        "cast",
        "cast_like",
        "add",
        "subtract",
        "multiply",
        "divide",
        "nn.bias_add",
        "nn.batch_norm",
        "sqrt",
        "shape_of",
        "max",
        "min",
        "maximum",
        "minimum",
        "argmax",
        "argmin",
        "nn.relu",
        "nn.leaky_relu",
        "nn.prelu",
        "nn.dropout",
        "sigmoid",
        "tanh",
        "fast_tanh",
        "fast_exp",
        "fast_erf",
        "clip",
        "nn.max_pool1d",
        "nn.max_pool2d",
        "nn.max_pool3d",
        "nn.avg_pool1d",
        "nn.avg_pool2d",
        "nn.avg_pool3d",
        "nn.global_max_pool2d",
        "nn.adaptive_max_pool1d",
        "nn.adaptive_max_pool2d",
        "nn.adaptive_max_pool3d",
        "image.resize2d",
    }
)

_ORIGINAL = "float32"

#: The largest finite value of each mixed type: an operator whose constant attributes
#: (``clip``'s bounds) lie outside it stays in float32.
_MAX_FINITE = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38}


def _attrs_fit(call: Call, mixed: str) -> bool:
    """Whether ``call``'s constant attributes are representable in ``mixed``."""
    bound = _MAX_FINITE.get(mixed)
    if bound is None or call.attrs is None or call.op.name != "clip":  # type: ignore[attr-defined]
        return True
    return -bound <= float(call.attrs.a_min) and float(call.attrs.a_max) <= bound


def _category(call: Call, mixed: str) -> tuple[int, str, str]:
    """(group, accumulation dtype, output dtype) of ``call``."""
    name = call.op.name  # type: ignore[attr-defined]
    rule = default_registry.get_attr(name, "FTVMMixedPrecisionConversionType")
    if callable(rule):
        out = list(rule(call, mixed))
        if len(out) != 3:
            raise ArgumentError(
                f"the FTVMMixedPrecisionConversionType rule of {name} returned {out!r}: it "
                "must return [group, accumulation_dtype, output_dtype]"
            )
        return int(out[0]), check_dtype(out[1]), check_dtype(out[2])
    if name in DEFAULT_ALWAYS_LIST:
        return MIXED_PRECISION_ALWAYS, mixed, mixed
    if name in DEFAULT_FOLLOW_LIST:
        return MIXED_PRECISION_FOLLOW, mixed, mixed
    return MIXED_PRECISION_NEVER, mixed, mixed


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def _all_mixed(ty: Type | None, mixed: str) -> bool:
    """Every float tensor in ``ty`` is of the mixed type (non-float ones do not count)."""
    if isinstance(ty, TensorType):
        return not _is_float(ty.dtype) or ty.dtype == mixed
    if isinstance(ty, TupleType):
        return all(_all_mixed(f, mixed) for f in ty.fields)
    return False


class _Converter:
    def __init__(self, mixed: str) -> None:
        self.mixed = mixed
        self.casts: dict[tuple[Expr, str], Expr] = {}
        self.cast_source: dict[Expr, Expr] = {}

    def type_of(self, e: Expr) -> Type | None:
        return checked_type_or_none(e) if e.has_checked_type else infer_type_local(e)

    def cast_to(self, e: Expr, dtype: str, convertible: Callable[[str], bool]) -> Expr:
        """``e`` with its float tensors (those ``convertible`` accepts) cast to ``dtype``."""
        ty = self.type_of(e)
        if isinstance(ty, TupleType):
            if all(not isinstance(f, TensorType) or not convertible(f.dtype) for f in ty.fields):
                return e
            fields = [
                self.cast_to(TupleGetItem(e, i), dtype, convertible) for i in range(len(ty.fields))
            ]
            return Tuple(fields)
        if not isinstance(ty, TensorType) or ty.dtype == dtype or not convertible(ty.dtype):
            return e
        src = self.cast_source.get(e)
        if src is not None:
            src_ty = self.type_of(src)
            if isinstance(src_ty, TensorType) and src_ty.dtype == dtype:
                return src
        key = (e, dtype)
        out = self.casts.get(key)
        if out is None:
            out = cast(e, dtype)
            infer_type_local(out)
            self.casts[key] = out
            self.cast_source[out] = e
        return out

    def convert_call(self, call: Call) -> Expr:
        group, acc, out_dtype = _category(call, self.mixed)
        mixed = self.mixed
        if group == MIXED_PRECISION_FOLLOW:
            # variables and constants can always be cast, so they do not hold an op back
            ok = all(
                isinstance(a, (Var, Constant)) or _all_mixed(self.type_of(a), mixed)
                for a in call.args
            )
            group = MIXED_PRECISION_ALWAYS if ok else MIXED_PRECISION_NEVER
        if group == MIXED_PRECISION_ALWAYS and not _attrs_fit(call, mixed):
            group = MIXED_PRECISION_NEVER
        if group == MIXED_PRECISION_NEVER:
            args = [self.cast_to(a, _ORIGINAL, lambda d: d == mixed) for a in call.args]
            new = Call(call.op, args, call.attrs, call.type_args, call.span)
            infer_type_local(new)
            return new
        args = [self.cast_to(a, mixed, lambda d: d == _ORIGINAL) for a in call.args]
        attrs = call.attrs
        has_out_dtype = attrs is not None and "out_dtype" in attrs
        if has_out_dtype:
            attrs = attrs.with_updates(out_dtype=acc)
        new = Call(call.op, args, attrs, call.type_args, call.span)
        infer_type_local(new)
        if has_out_dtype and acc != out_dtype:
            return self.cast_to(new, out_dtype, lambda d: d == acc)
        return new

    def convert(self, fn: Function, keep_output: bool) -> Function:
        memo: dict[Expr, Expr] = {}
        # a let-bound variable takes the type of its converted value (so its uses see it)
        let_value = {n.var: n.value for n in post_order(fn.body) if type(n) is Let}

        def skip(node: Expr) -> bool:
            if node in memo:
                return True
            if type(node) is Function and node is not fn and _is_opaque(node):
                memo[node] = node
                return True
            return False

        def run(root: Expr) -> None:
            for node in post_order(root, skip=skip):
                if node in memo:
                    continue
                if type(node) is Var and node in let_value:
                    memo[node] = node  # a recursive binding sees the variable unchanged
                    run(let_value[node])
                    ty = self.type_of(memo[let_value[node]])
                    same = ty is None or ty == checked_type_or_none(node)
                    memo[node] = (
                        node
                        if same
                        else Var(node.name_hint, ty, node.span, virtual_device=node.virtual_device_)
                    )
                    if not same:
                        infer_type_local(memo[node])
                    continue
                rebuilt = rebuild(node, memo.__getitem__)
                if type(rebuilt) is Function and rebuilt is not node:
                    # an inner function's result type follows its converted body
                    rebuilt = rebuilt.with_fields(ret_type=None)
                if type(rebuilt) is Call and type(rebuilt.op) is Op:
                    out = self.convert_call(rebuilt)
                elif type(rebuilt) is Call and type(rebuilt.op) is Function:
                    # a function's signature is kept: its arguments go back to float32
                    back = [
                        self.cast_to(a, _ORIGINAL, lambda d: d == self.mixed) for a in rebuilt.args
                    ]
                    out = Call(rebuilt.op, back, rebuilt.attrs, rebuilt.type_args, rebuilt.span)
                    infer_type_local(out)
                else:
                    out = rebuilt
                    if out is not node:
                        infer_type_local(out)
                memo[node] = out

        run(fn.body)
        body = memo.get(fn.body, fn.body)
        if keep_output:
            body = self.cast_to(body, _ORIGINAL, lambda d: d == self.mixed)
        if body is fn.body:
            return fn
        return Function(fn.params, body, None, fn.type_params, fn.attrs, fn.span)


def to_mixed_precision(
    fn: Function, mixed_precision_type: str = "float16", keep_output: bool = False
) -> Function:
    """``fn`` (typed) with its heavy operators in ``mixed_precision_type`` (module docs)."""
    return _Converter(check_dtype(mixed_precision_type)).convert(fn, keep_output)


class ToMixedPrecision(ModulePass):
    """``relay.transform.ToMixedPrecision(mixed_precision_type="float16")`` (opt_level 0):
    every Relay function of the module not handed to a backend is converted."""

    def __init__(self, mixed_precision_type: str = "float16", missing_op_mode: int = 1) -> None:
        dtype = check_dtype(mixed_precision_type)
        if not _is_float(dtype) or dtype == _ORIGINAL:
            raise ArgumentError(
                f"ToMixedPrecision converts float32 to a narrower float type, got {dtype!r}: "
                "use 'float16' or 'bfloat16'"
            )
        if missing_op_mode not in (0, 1, 2):
            raise ArgumentError(f"missing_op_mode must be 0, 1 or 2, got {missing_op_mode!r}")
        self.mixed_precision_type = dtype
        super().__init__(self._transform, opt_level=0, name="ToMixedPrecision")

    def _transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        keep = bool(ctx.config.get("relay.ToMixedPrecision.keep_orig_output_dtype", False))
        mod = InferType()(mod)
        out = mod.copy()
        for gv, fn in mod.items():
            if not isinstance(fn, Function) or "Compiler" in fn.attrs:
                continue
            new = to_mixed_precision(fn, self.mixed_precision_type, keep)
            if new is not fn:
                out[gv] = new
        return InferType()(out)
