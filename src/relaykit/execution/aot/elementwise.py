"""C emitters of elementwise operators: unary math, binary and ternary with NumPy
broadcasting, ``cast``, ``clip``, activations.

Each operator is one C expression of its operands; the loops come from
:func:`~relaykit.execution.aot.emit.nd_loop`, which merges axes so that the innermost
loop is as long and as contiguous as the broadcast allows.
"""

from __future__ import annotations

from collections.abc import Callable

from .emit import KernelContext, broadcast_strides, c_float, nd_loop, register_c_emitter

__all__ = ["UNARY", "BINARY"]

_F = ("float32", "float64")

Expr1 = Callable[[str, str, KernelContext], str]
Expr2 = Callable[[str, str, str, KernelContext], str]


def _fn(name: str) -> Expr1:
    return lambda x, dt, ctx: f"{ctx.math_fn(name, dt)}({x})"


def _one(dt: str) -> str:
    return c_float(1.0, dt) if dt in _F else "1"


UNARY: dict[str, Expr1] = {
    "negative": lambda x, dt, ctx: f"-({x})",
    "abs": lambda x, dt, ctx: (
        f"{ctx.math_fn('fabs', dt)}({x})" if dt in _F else f"({x} < 0 ? -{x} : {x})"
    ),
    "sign": lambda x, dt, ctx: f"(({x} > 0) - ({x} < 0))",
    "round": _fn("nearbyint"),
    "floor": _fn("floor"),
    "ceil": _fn("ceil"),
    "trunc": _fn("trunc"),
    "exp": _fn("exp"),
    "log": _fn("log"),
    "log2": _fn("log2"),
    "log10": _fn("log10"),
    "sqrt": _fn("sqrt"),
    "rsqrt": lambda x, dt, ctx: f"{_one(dt)} / {ctx.math_fn('sqrt', dt)}({x})",
    "sigmoid": lambda x, dt, ctx: f"{_one(dt)} / ({_one(dt)} + {ctx.math_fn('exp', dt)}(-({x})))",
    "erf": _fn("erf"),
    "sin": _fn("sin"),
    "cos": _fn("cos"),
    "tan": _fn("tan"),
    "asin": _fn("asin"),
    "acos": _fn("acos"),
    "atan": _fn("atan"),
    "sinh": _fn("sinh"),
    "cosh": _fn("cosh"),
    "tanh": _fn("tanh"),
    "asinh": _fn("asinh"),
    "acosh": _fn("acosh"),
    "atanh": _fn("atanh"),
    "isnan": lambda x, dt, ctx: f"({x} != {x})",
    "isinf": lambda x, dt, ctx: f"({x} == INFINITY || {x} == -INFINITY)",
    "isfinite": lambda x, dt, ctx: f"({x} == {x} && {x} != INFINITY && {x} != -INFINITY)",
    "logical_not": lambda x, dt, ctx: f"!({x})",
    "bitwise_not": lambda x, dt, ctx: f"~({x})",
    "copy": lambda x, dt, ctx: x,
    "zeros_like": lambda x, dt, ctx: "0",
    "ones_like": lambda x, dt, ctx: "1",
    "nn.relu": lambda x, dt, ctx: f"(({x}) > 0 || ({x}) != ({x}) ? ({x}) : 0)",
    "nn.gelu": lambda x, dt, ctx: (
        f"{c_float(0.5, dt)} * ({x}) * ({_one(dt)} + "
        f"{ctx.math_fn('erf', dt)}(({x}) * {c_float(0.7071067811865476, dt)}))"
    ),
    "nn.fast_gelu": lambda x, dt, ctx: (
        f"{c_float(0.5, dt)} * ({x}) * ({_one(dt)} + {ctx.math_fn('tanh', dt)}("
        f"{c_float(0.7978845608028654, dt)} * (({x}) + "
        f"{c_float(0.044715, dt)} * ({x}) * ({x}) * ({x}))))"
    ),
    "fast_exp": _fn("exp"),
    "fast_tanh": _fn("tanh"),
    "fast_erf": _fn("erf"),
}


def _floor_div(a: str, b: str, dt: str, ctx: KernelContext) -> str:
    if dt in _F:
        return f"{ctx.math_fn('floor', dt)}({a} / {b})"
    return f"(({a}) / ({b}) - ((({a}) % ({b}) != 0) && ((({a}) < 0) != (({b}) < 0))))"


def _floor_mod(a: str, b: str, dt: str, ctx: KernelContext) -> str:
    r = f"{ctx.math_fn('fmod', dt)}({a}, {b})" if dt in _F else f"(({a}) % ({b}))"
    return f"({r} != 0 && (({r} < 0) != (({b}) < 0)) ? {r} + ({b}) : {r})"


def _trunc_mod(a: str, b: str, dt: str, ctx: KernelContext) -> str:
    return f"{ctx.math_fn('fmod', dt)}({a}, {b})" if dt in _F else f"(({a}) % ({b}))"


def _infix(op: str) -> Expr2:
    return lambda a, b, dt, ctx: f"({a} {op} {b})"


BINARY: dict[str, Expr2] = {
    "add": _infix("+"),
    "subtract": _infix("-"),
    "multiply": _infix("*"),
    "divide": _infix("/"),
    "trunc_divide": lambda a, b, dt, ctx: (
        f"{ctx.math_fn('trunc', dt)}({a} / {b})" if dt in _F else f"({a} / {b})"
    ),
    "floor_divide": _floor_div,
    "floor_mod": _floor_mod,
    "mod": _trunc_mod,
    "trunc_mod": _trunc_mod,
    "power": lambda a, b, dt, ctx: f"{ctx.math_fn('pow', dt)}({a}, {b})",
    "maximum": lambda a, b, dt, ctx: f"({a} > {b} || {a} != {a} ? {a} : {b})",
    "minimum": lambda a, b, dt, ctx: f"({a} < {b} || {a} != {a} ? {a} : {b})",
    "equal": _infix("=="),
    "not_equal": _infix("!="),
    "less": _infix("<"),
    "less_equal": _infix("<="),
    "greater": _infix(">"),
    "greater_equal": _infix(">="),
    "logical_and": _infix("&&"),
    "logical_or": _infix("||"),
    "logical_xor": lambda a, b, dt, ctx: f"(!({a}) != !({b}))",
    "left_shift": _infix("<<"),
    "right_shift": _infix(">>"),
    "bitwise_and": _infix("&"),
    "bitwise_or": _infix("|"),
    "bitwise_xor": _infix("^"),
}


def _unary(ctx: KernelContext) -> None:
    (x,), (o,) = ctx.ins, ctx.outs
    expr = UNARY[ctx.node.name]
    st = broadcast_strides(x.shape, o.shape)
    nd_loop(
        ctx,
        o.shape,
        [broadcast_strides(o.shape, o.shape), st],
        lambda ix: f"o0[{ix[0]}] = ({o.ctype})({expr(f'a0[{ix[1]}]', x.dtype, ctx)});",
    )


def _binary(ctx: KernelContext) -> None:
    a, b = ctx.ins
    (o,) = ctx.outs
    expr = BINARY[ctx.node.name]
    strides = [broadcast_strides(s.shape, o.shape) for s in (o, a, b)]
    nd_loop(
        ctx,
        o.shape,
        strides,
        lambda ix: (
            f"o0[{ix[0]}] = ({o.ctype}){expr(f'a0[{ix[1]}]', f'a1[{ix[2]}]', a.dtype, ctx)};"
        ),
    )


register_c_emitter(*UNARY)(_unary)
register_c_emitter(*BINARY)(_binary)


@register_c_emitter("where")
def _where(ctx: KernelContext) -> None:
    (o,) = ctx.outs
    strides = [broadcast_strides(s.shape, o.shape) for s in (o, *ctx.ins)]
    nd_loop(
        ctx, o.shape, strides, lambda ix: f"o0[{ix[0]}] = a0[{ix[1]}] ? a1[{ix[2]}] : a2[{ix[3]}];"
    )


@register_c_emitter("cast", "cast_like")
def _cast(ctx: KernelContext) -> None:
    o, x = ctx.outs[0], ctx.ins[0]
    if o.dtype == "bool":
        body = "o0[i] = a0[i] != 0;"
    elif x.dtype in _F and o.dtype not in _F:
        body = f"o0[i] = ({o.ctype}){ctx.math_fn('trunc', x.dtype)}(a0[i]);"
    else:
        body = f"o0[i] = ({o.ctype})a0[i];"
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) {body}")


@register_c_emitter("clip")
def _clip(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    lo = (
        c_float(float(ctx.attrs["a_min"]), o.dtype)
        if o.dtype in _F
        else str(int(ctx.attrs["a_min"]))
    )
    hi = (
        c_float(float(ctx.attrs["a_max"]), o.dtype)
        if o.dtype in _F
        else str(int(ctx.attrs["a_max"]))
    )
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) {{")
    ctx.line(f"  {o.ctype} v = a0[i];")
    ctx.line(f"  o0[i] = v < {lo} ? {lo} : (v > {hi} ? {hi} : v);")
    ctx.line("}")


@register_c_emitter("nn.leaky_relu")
def _leaky_relu(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    alpha = c_float(float(ctx.attrs["alpha"]), o.dtype)
    ctx.line(f"for (int64_t i = 0; i < {o.size}; ++i) o0[i] = a0[i] > 0 ? a0[i] : a0[i] * {alpha};")


@register_c_emitter("nn.prelu")
def _prelu(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(o.shape)
    sa = [0] * len(o.shape)
    sa[axis] = 1
    nd_loop(
        ctx,
        o.shape,
        [broadcast_strides(o.shape, o.shape), broadcast_strides(o.shape, o.shape), sa],
        lambda ix: f"o0[{ix[0]}] = a0[{ix[1]}] > 0 ? a0[{ix[1]}] : a0[{ix[1]}] * a1[{ix[2]}];",
    )


@register_c_emitter("nn.bias_add")
def _bias_add(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    axis = int(ctx.attrs["axis"]) % len(o.shape)
    sb = [0] * len(o.shape)
    sb[axis] = 1
    full = broadcast_strides(o.shape, o.shape)
    nd_loop(ctx, o.shape, [full, full, sb], lambda ix: f"o0[{ix[0]}] = a0[{ix[1]}] + a1[{ix[2]}];")
