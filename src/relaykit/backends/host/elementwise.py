"""Elementwise host kernels: NumPy ufuncs with ``out=``, float32 erf and GELU, casts,
copies, bias, transpose and concatenation."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
import scipy.special

from relaykit.backends.host import nn as host_nn
from relaykit.backends.host.table import (
    Binder,
    Run,
    Scratch,
    register_host_kernel,
    sequence,
)
from relaykit.ir.attrs import Attrs
from relaykit.runtime.threads import get_policy

__all__ = ["erf_float32"]

# -- elementwise ------------------------------------------------------------------------------

_BINARY: dict[str, np.ufunc] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
_FLOAT_BINARY: dict[str, np.ufunc] = {"divide": np.divide, "power": np.power}
_BOOL_BINARY: dict[str, np.ufunc] = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}
_FLOAT_UNARY: dict[str, np.ufunc] = {
    "exp": np.exp,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "sigmoid": scipy.special.expit,
}
_UNARY: dict[str, np.ufunc] = {"negative": np.negative, "abs": np.abs, "sign": np.sign}


def _binary(ufunc: np.ufunc, kinds: str) -> Binder:
    def bind(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
        a, b = args
        if a.dtype != b.dtype or a.dtype.kind not in kinds:
            return None
        return functools.partial(ufunc, a, b, out=outs[0])

    return bind


#: Unary functions that cost far more than a memory pass: big ones are split over the
#: host threads.
_TRANSCENDENTAL = frozenset({"exp", "log", "log2", "tanh", "sin", "cos", "erf", "sigmoid"})
#: Below this many elements a transcendental step is not split between threads.
_PARALLEL_MIN_ELEMENTS = 32_768


def _unary(ufunc: np.ufunc, kinds: str, costly: bool = False) -> Binder:
    def bind(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
        x, o = args[0], outs[0]
        if x.dtype.kind not in kinds or o.dtype != x.dtype:
            return None
        parts = get_policy().host_threads() if costly else 1
        if (
            parts < 2
            or x.size < _PARALLEL_MIN_ELEMENTS
            or not (x.flags.c_contiguous and o.flags.c_contiguous)
        ):
            return functools.partial(ufunc, x, out=o)
        flat_x, flat_o = x.reshape(-1), o.reshape(-1)
        bounds = [x.size * i // parts for i in range(parts + 1)]
        tasks = [
            functools.partial(ufunc, flat_x[a:b], out=flat_o[a:b])
            for a, b in itertools.pairwise(bounds)
        ]
        return functools.partial(get_policy().run_parallel, tasks)

    return bind


# -- erf in float32 ------------------------------------------------------------------------------
#
# scipy.special.erf evaluates float32 through its float64 cephes routine one element at a
# time (~15 ns an element: 1 ms of a BERT-tiny's 2.6 ms). As onnxruntime's MLAS does, float32
# erf is two polynomials evaluated with whole-array NumPy passes instead (~8x faster):
# erf(x) = x P(x^2) for |x| < 0.921875, else sign(x) (1 - exp(Q(|x|))) (which rounds to
# sign(x) from 3.925 on). P and Q are least-squares fits on Chebyshev nodes (of erf(x)/x
# relative to itself, and of log(erfc(x))); float32 results are within 2.4 ulp (1.8e-7
# relative) of the exact values, against scipy's 0.5 ulp, checked on 4.2 million points in
# tests/backends/host/test_kernels_erf.py.

_ERF_SPLIT = np.float32(0.921875)
_ERF_SMALL = tuple(np.float32(c) for c in (
    1.1283791065216064, -0.37612491846084595, 0.1128179281949997, -0.026765860617160797,
    0.004992180969566107, -0.0005986208561807871,
))  # fmt: skip
_ERF_BIG = tuple(np.float32(c) for c in (
    -0.0004721708537545055, -1.1269067525863647, -0.6376983523368835, -0.10438274592161179,
    0.023092646151781082, -0.003557961666956544, 0.000334386044414714, -1.4283556993177626e-05,
))  # fmt: skip
_SIGN_BIT = np.int32(-(2**31))
#: Elements per block of the float32 erf (its two temporaries stay in the L2 cache).
_ERF_BLOCK = 65_536
#: Below this many elements scipy is faster (the polynomials cost ~35 NumPy calls).
_ERF_MIN_ELEMENTS = 2_048


def _horner(coeffs: tuple[np.float32, ...], t: np.ndarray, acc: np.ndarray) -> None:
    """``acc = sum(coeffs[k] * t**k)``."""
    np.multiply(t, coeffs[-1], out=acc)
    for c in coeffs[-2:0:-1]:
        np.add(acc, c, out=acc)
        np.multiply(acc, t, out=acc)
    np.add(acc, coeffs[0], out=acc)


def erf_float32(x: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> None:
    """erf of the flat float32 array ``x`` into ``out`` (not overlapping ``x``); ``tmp`` is
    float32 of shape ``(2, x.size)`` (temporaries). Both
    polynomials run on every element, unclipped (beyond its range each goes to +-inf, never
    NaN, and is then not selected): call it under ``np.errstate(over="ignore")``.

    >>> x = np.array([-5.0, -0.5, 0.0, 0.3, 1.5, np.inf], np.float32)
    >>> o = np.empty_like(x)
    >>> with np.errstate(over="ignore"):
    ...     erf_float32(x, o, np.empty((2, 6), np.float32))
    >>> bool(np.allclose(o, scipy.special.erf(x.astype(np.float64)), rtol=3e-7, atol=0))
    True
    """
    a, acc = tmp
    np.abs(x, out=a)
    np.multiply(a, a, out=out)  # small branch: |x| P(x^2)
    _horner(_ERF_SMALL, out, acc)
    np.multiply(acc, a, out=acc)
    _horner(_ERF_BIG, a, out)  # large branch: 1 - exp(Q(|x|)) (exactly 1 beyond 3.925)
    np.exp(out, out=out)
    np.subtract(np.float32(1.0), out, out=out)
    # Select bit by bit (np.putmask and np.copyto(where=) are ~10x slower on mixed masks):
    # out ^= (out ^ acc) & -(|x| < split); NaN goes the large way and stays NaN.
    sel, ob, ab = a.view(np.int32), out.view(np.int32), acc.view(np.int32)
    np.less(a, _ERF_SPLIT, out=sel)
    np.negative(sel, out=sel)
    np.bitwise_xor(ab, ob, out=ab)
    np.bitwise_and(ab, sel, out=ab)
    np.bitwise_xor(ob, ab, out=ob)
    np.bitwise_and(x.view(np.int32), _SIGN_BIT, out=sel)  # the sign of x (also of -0.0)
    np.bitwise_or(ob, sel, out=ob)


def _erf_blocks(x: np.ndarray, o: np.ndarray, scratch: Scratch) -> list[Run]:
    """Float32 erf of the flat ``x`` into ``o``, block by block."""
    n = x.size
    block = min(n, _ERF_BLOCK)
    tmp = scratch.take((2, block), np.float32)
    res = scratch.take((block,), np.float32) if np.shares_memory(x, o) else None
    runs: list[Run] = []
    for start in range(0, n, block):
        stop = min(n, start + block)
        k = stop - start
        xs, os_ = x[start:stop], o[start:stop]
        t = tmp[:, :k]
        if res is None:
            runs.append(functools.partial(erf_float32, xs, os_, t))
        else:  # in place: through a block-sized result
            r = res[:k]
            runs.append(sequence([
                functools.partial(erf_float32, xs, r, t),
                functools.partial(np.copyto, os_, r),
            ]))  # fmt: skip
    return runs


@register_host_kernel("erf")
def _erf(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    x, o = args[0], outs[0]
    native = host_nn.erf_run(x, o)
    if native is not None:
        return native
    fast = x.dtype == np.float32 and o.dtype == x.dtype and x.size >= _ERF_MIN_ELEMENTS
    if not (fast and x.flags.c_contiguous and o.flags.c_contiguous):
        return _unary(scipy.special.erf, "f", costly=True)(attrs, args, outs, scratch)
    flat_x, flat_o = x.reshape(-1), o.reshape(-1)
    parts = get_policy().host_threads()
    if parts < 2 or x.size < 4 * _PARALLEL_MIN_ELEMENTS:
        return _quiet(sequence(_erf_blocks(flat_x, flat_o, scratch)))
    bounds = [x.size * i // parts for i in range(parts + 1)]
    tasks = [
        _quiet(sequence(_erf_blocks(flat_x[lo:hi], flat_o[lo:hi], scratch)))
        for lo, hi in itertools.pairwise(bounds)
    ]
    return functools.partial(get_policy().run_parallel, tasks)


@register_host_kernel("nn.gelu")
def _gelu(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    x, o = args[0], outs[0]
    if x.dtype.kind != "f" or o.dtype != x.dtype:
        return None
    native = host_nn.gelu_erf_run(x, o)
    if native is not None:
        return native
    # NumPy: t = erf(x / sqrt 2) by the erf kernel, in scratch memory (o may be x)
    t = scratch.take(x.shape, x.dtype)
    erf = _erf(attrs, [t], [t], scratch)
    if erf is None:
        return None
    dt = x.dtype.type
    steps: list[Run] = [
        functools.partial(np.multiply, x, dt(1.0 / np.sqrt(2.0)), out=t),
        erf,
        functools.partial(np.add, t, dt(1.0), out=t),
        functools.partial(np.multiply, t, x, out=t),
        functools.partial(np.multiply, t, dt(0.5), out=o),
    ]
    return sequence(steps)


def _quiet(run: Run) -> Run:
    """``run`` with overflow not reported (a thread's errstate is its own)."""

    def quiet() -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            run()

    return quiet


for _name, _fn in _BINARY.items():
    register_host_kernel(_name)(_binary(_fn, "fiub"))
for _name, _fn in _FLOAT_BINARY.items():
    register_host_kernel(_name)(_binary(_fn, "f"))
for _name, _fn in _BOOL_BINARY.items():
    register_host_kernel(_name)(_binary(_fn, "b"))
for _name, _fn in _FLOAT_UNARY.items():
    register_host_kernel(_name)(_unary(_fn, "f", costly=_name in _TRANSCENDENTAL))
for _name, _fn in _UNARY.items():
    register_host_kernel(_name)(_unary(_fn, "fi"))


@register_host_kernel("nn.relu")
def _relu(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run:
    return functools.partial(np.maximum, args[0], 0, out=outs[0])


@register_host_kernel("rsqrt")
def _rsqrt(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    x, o = args[0], outs[0]
    if x.dtype.kind != "f":
        return None

    def run() -> None:
        np.sqrt(x, out=o)
        np.divide(1.0, o, out=o)

    return run


@register_host_kernel("clip")
def _clip(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    if args[0].dtype.kind != "f":
        return None
    return functools.partial(np.clip, args[0], attrs.a_min, attrs.a_max, out=outs[0])


@register_host_kernel("cast")
def _cast(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run:
    return functools.partial(np.copyto, outs[0], args[0], casting="unsafe")


@register_host_kernel("copy")
def _copy(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run:
    return functools.partial(np.copyto, outs[0], args[0])


@register_host_kernel("nn.bias_add")
def _bias_add(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    x, b = args
    if x.dtype != b.dtype:
        return None
    shape = [1] * x.ndim
    shape[attrs.axis % x.ndim] = b.shape[0]
    return functools.partial(np.add, x, b.reshape(shape), out=outs[0])


@register_host_kernel("transpose")
def _transpose(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run:
    axes = attrs.axes
    view = args[0].transpose(tuple(axes)) if axes else args[0].transpose()
    return functools.partial(np.copyto, outs[0], view)


@register_host_kernel("concatenate")
def _concatenate(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run:
    parts = list(args[0])
    return functools.partial(np.concatenate, parts, axis=attrs.axis, out=outs[0])
