"""Host kernels of the graph executor: operators bound to their planned buffers.

A *binder* takes an operator's attributes, its input arrays (a list for a
tuple argument), its output arrays and a :class:`Scratch` allocator, and
returns a no-argument callable that computes the outputs in place, or
``None`` when it does not handle that case. Elementwise operators are NumPy
ufuncs with ``out=``; ``nn.dense`` and ``nn.conv2d`` (NCHW/OIHW, im2col into
scratch memory, then one ``matmul`` into the output; 3x3 stride-1 layers by
Winograd F(2x2, 3x3) where it measured faster, see :func:`winograd_pays`) write
their results straight into the planned buffer. Every other operator falls back to its
reference kernel (``FCompute``) and a copy into the planned buffer.

Binders see the actual arrays once, when the executor is created, so views,
transposed weights and im2col tap lists are computed then, not per run.

>>> import numpy as np
>>> from relaykit.ir.attrs import Attrs
>>> a, b, o = np.ones(3, "float32"), np.full(3, 2, "float32"), np.empty(3, "float32")
>>> run = bind_kernel("add", Attrs({}), [a, b], [o], Scratch(None))
>>> _ = run(); o.tolist()
[3.0, 3.0, 3.0]
"""

from __future__ import annotations

import functools
import itertools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.special

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import nn as host_nn
from relaykit.backends.host import winograd_math
from relaykit.backends.host.conv import Epilogue, MatrixEpilogue
from relaykit.errors import ExecutionError
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry
from relaykit.op.nn.geometry import pad4, pair
from relaykit.op.reduce import reduce_axes
from relaykit.registry import Registry
from relaykit.runtime.threads import get_policy

__all__ = [
    "Scratch",
    "Binder",
    "KernelRegistry",
    "kernel_registry",
    "register_host_kernel",
    "bind_kernel",
    "host_kernel_names",
    "has_host_kernel",
]

Run = Callable[[], Any]
Binder = Callable[[Attrs, list[Any], list[np.ndarray], "Scratch"], Run | None]
_ALIGN = 64


class Scratch:
    """Scratch memory shared by all steps (each step may use it all).

    Binding runs twice: once with ``Scratch(None)``, which hands out throwaway
    arrays and measures the largest request of any step, then with the real
    arena of that size.
    """

    def __init__(self, arena: np.ndarray | None) -> None:
        self.arena = arena
        self.offset = 0
        self.peak = 0

    def reset(self) -> None:
        """Start a new step: its requests may reuse everything."""
        self.offset = 0

    def take(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        start = -(-self.offset // _ALIGN) * _ALIGN
        self.offset = start + nbytes
        self.peak = max(self.peak, self.offset)
        if self.arena is None:
            return np.empty(tuple(shape), dt)
        return self.arena[start : start + nbytes].view(dt).reshape(tuple(shape))


class KernelRegistry(Registry[str, Binder]):
    """The host kernel table: operator name -> binder. A :class:`~relaykit.registry.Registry`
    (snapshot, restore, scoped); item assignment replaces a binder, as
    ``register(..., override=True)`` does, so ``monkeypatch.setitem`` works on it."""

    def __setitem__(self, op_name: str, binder: Binder) -> None:
        self.register(op_name, binder, override=True)

    def __delitem__(self, op_name: str) -> None:
        self.unregister(op_name)


#: The dedicated host kernels, by operator name.
kernel_registry = KernelRegistry("host kernel")


def register_host_kernel(*op_names: str) -> Callable[[Binder], Binder]:
    """Register a binder for operators ``op_names`` (later registrations win)."""

    def _register(fn: Binder) -> Binder:
        for name in op_names:
            kernel_registry.register(name, fn, override=True)
        return fn

    return _register


def host_kernel_names() -> list[str]:
    """Operators with a dedicated (in-place) host kernel."""
    return sorted(kernel_registry)


def has_host_kernel(op_name: str) -> bool:
    """Whether the graph executor can run ``op_name`` (a dedicated or a reference kernel)."""
    return op_name in kernel_registry or default_registry.get_attr(op_name, "FCompute") is not None


def bind_kernel(
    op_name: str, attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run:
    """The bound kernel of one operator call (dedicated binder, else the reference kernel)."""
    binder = kernel_registry.get(op_name)
    if binder is not None:
        run = binder(attrs, args, outs, scratch)
        if run is not None:
            return run
    kernel = default_registry.get_attr(op_name, "FCompute")
    if kernel is None:
        raise ExecutionError(f"operator {op_name} has no kernel")
    return _fallback(kernel, attrs, args, outs)


def _fallback(kernel: Any, attrs: Attrs, args: list[Any], outs: list[np.ndarray]) -> Run:
    ins = [tuple(a) if isinstance(a, list) else a for a in args]

    if len(outs) == 1:
        out = outs[0]

        def run_one() -> None:
            r = kernel(ins, attrs)
            if not isinstance(r, np.ndarray) or r.shape != out.shape:
                raise ExecutionError(
                    f"kernel returned {getattr(r, 'shape', type(r).__name__)}, "
                    f"expected shape {out.shape}"
                )
            np.copyto(out, r)

        return run_one

    def run_many() -> None:
        r = _flatten(kernel(ins, attrs))
        if len(r) != len(outs):
            raise ExecutionError(f"kernel returned {len(r)} values, expected {len(outs)}")
        for o, v in zip(outs, r, strict=True):
            np.copyto(o, v)

    return run_many


def _flatten(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flatten(v)]
    return [np.asarray(value)]


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
            runs.append(_sequence([
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
        return _quiet(_sequence(_erf_blocks(flat_x, flat_o, scratch)))
    bounds = [x.size * i // parts for i in range(parts + 1)]
    tasks = [
        _quiet(_sequence(_erf_blocks(flat_x[lo:hi], flat_o[lo:hi], scratch)))
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
    return _sequence(steps)


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


# -- linear algebra -----------------------------------------------------------------------------


def _float_same(*arrays: np.ndarray) -> bool:
    dt = arrays[0].dtype
    return dt.kind == "f" and dt.itemsize >= 4 and all(a.dtype == dt for a in arrays)


#: A GEMM is cut into blocks of at least this many multiply-adds (~40 us on one thread).
#: Cutting is free on one thread (BERT-tiny's 128x128x128 product: 44 us whole or in two
#: column blocks) and the native pool hands a block over in ~0.1 us when its threads are
#: awake; but a two-block product waits for a pool thread that wakes (or is descheduled)
#: late. On a shared 2-core machine, BERT-tiny's host path took 2.15-2.74 ms (best of 20)
#: with blocks from 1M multiply-adds, 1.83-2.21 ms from 2M, 1.74-1.80 ms from 4M, where
#: MobileNetV2's 14x14 and 7x7 1x1 convolutions (4.8M) would no longer be split: 2M.
_SPLIT_MIN_MACS = 1 << 21
#: Most blocks of a split GEMM: a few per thread, so a late thread leaves little undone.
_MAX_BLOCKS = 8
#: Fewest columns (or rows, or batch matrices) of a block.
_MIN_BLOCK = 64


def _blocks(size: int, count: int, align: int = 16) -> list[tuple[int, int]]:
    """``size`` cut into ``count`` ranges of about equal size, cut at multiples of ``align``."""
    step = -(-size // count)
    step = -(-step // align) * align if step > align else step
    return [(lo, min(size, lo + step)) for lo in range(0, size, step)]


def matmul_run(
    a: np.ndarray, b: np.ndarray, out: np.ndarray, epilogue: MatrixEpilogue | None = None
) -> Run:
    """``out = a @ b`` (2-D, or 3-D with equal batch sizes) with BLAS on one thread; a big
    product is cut into blocks (of the batch, else of the columns of ``b`` or the rows of
    ``a``, whichever gives more) that the host threads take in turn (see
    :mod:`relaykit.runtime.threads`). The blocks depend on the shapes only, so the bits do
    not depend on the thread count.
    ``epilogue`` (2-D only) is applied to each block right after its product, while it is
    in the cache. 2-D float32 products run as one native call (NumPy's ``cblas_sgemm``
    per block, on the native pool; :func:`relaykit.backends.host.conv.gemm`) when the
    library is there.

    >>> a, b = np.ones((256, 128), np.float32), np.ones((128, 512), np.float32)
    >>> out = np.empty((256, 512), np.float32)
    >>> matmul_run(a, b, out)(); float(out.min()), float(out.max())
    (128.0, 128.0)
    """
    policy = get_policy()
    policy.ensure_applied()
    batch = a.shape[0] if a.ndim == 3 else 1
    m, k = a.shape[-2:]
    n = b.shape[-1]
    count = min(_MAX_BLOCKS, batch * m * k * n // _SPLIT_MIN_MACS)
    two_d = a.ndim == b.ndim == out.ndim == 2
    if epilogue is not None and not two_d:
        raise ExecutionError("a GEMM epilogue needs 2-D operands")
    cut, by_rows = [(0, n)], False
    # columns, unless the rows give more (so more even) blocks
    cols, rows = min(count, n // _MIN_BLOCK), min(count, m // _MIN_BLOCK)
    if count >= 2 and cols >= 2 and cols >= rows:
        cut = _blocks(n, cols)
    elif count >= 2 and rows >= 2:
        cut, by_rows = _blocks(m, rows), True
    if two_d and min(m, n) > 1:  # (NumPy runs a vector product as GEMV)
        native = host_conv.gemm(a, b, out, cut, by_rows, epilogue, policy.host_threads)
        if native is not None:
            return native
    whole: Run = functools.partial(np.matmul, a, b, out=out)
    if epilogue is not None:
        whole = _sequence([whole, epilogue.block(out, (0, m), (0, n))])
    if count < 2 or a.ndim != b.ndim or out.ndim != a.ndim or a.ndim not in (2, 3):
        return whole
    if batch >= 2 * min(count, 4) and epilogue is None:
        parts = [(a[lo:hi], b[lo:hi], out[lo:hi]) for lo, hi in _blocks(batch, count, 1)]
        tasks: list[Run] = [functools.partial(np.matmul, x, y, out=o) for x, y, o in parts]
    elif len(cut) < 2:
        return whole
    elif by_rows:
        tasks = [
            _gemm_block(a[..., lo:hi, :], b, out[..., lo:hi, :], out, epilogue, (lo, hi), (0, n))
            for lo, hi in cut
        ]
    else:
        tasks = [
            _gemm_block(a, b[..., lo:hi], out[..., lo:hi], out, epilogue, (0, m), (lo, hi))
            for lo, hi in cut
        ]
    return functools.partial(policy.run_parallel, tasks)


def _gemm_block(
    a: np.ndarray,
    b: np.ndarray,
    part: np.ndarray,
    out: np.ndarray,
    epilogue: MatrixEpilogue | None,
    rows: tuple[int, int],
    cols: tuple[int, int],
) -> Run:
    gemm = functools.partial(np.matmul, a, b, out=part)
    return gemm if epilogue is None else _sequence([gemm, epilogue.block(out, rows, cols)])


@register_host_kernel("nn.dense")
def _dense(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    return dense_run(args[0], args[1], outs[0])


def dense_run(
    x: np.ndarray, w: np.ndarray, o: np.ndarray, epilogue: Epilogue | None = None
) -> Run | None:
    """``o = x @ w.T`` (``nn.dense``), then ``epilogue`` (bias per output feature) on each
    block of ``o`` as it is computed; ``None`` when not handled here."""
    if not _float_same(x, w, o):
        return None
    if x.ndim > 2 and x.flags.c_contiguous and o.flags.c_contiguous:
        # one GEMM over all leading axes, no copies
        x, o = x.reshape(-1, x.shape[-1]), o.reshape(-1, o.shape[-1])
    if epilogue is not None:
        matrix = epilogue.matrix(o.shape, False) if o.ndim == 2 else None
        if matrix is None:
            return None
        return matmul_run(x, w.T, o, matrix)
    if x.ndim != 2:
        get_policy().ensure_applied()
        return functools.partial(np.matmul, x, w.T, out=o)
    return matmul_run(x, w.T, o)


@register_host_kernel("nn.batch_matmul")
def _batch_matmul(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    a, b = args
    o = outs[0]
    if not _float_same(a, b, o):
        return None
    a = a.transpose(0, 2, 1) if attrs.transpose_a else a
    b = b.transpose(0, 2, 1) if attrs.transpose_b else b
    if b.shape[0] == 1 and a.flags.c_contiguous:  # a shared right side: one (B*M, K) GEMM
        return matmul_run(a.reshape(-1, a.shape[-1]), b[0], o.reshape(-1, o.shape[-1]))
    if a.shape[0] != b.shape[0]:
        get_policy().ensure_applied()
        return functools.partial(np.matmul, a, b, out=o)
    return matmul_run(a, b, o)


# -- convolution and pooling (NCHW) -------------------------------------------------------------


def _padded(
    x: np.ndarray, pads: tuple[int, int, int, int], fill: float, scratch: Scratch
) -> tuple[np.ndarray, list[Run]]:
    """``x`` padded into scratch memory, and the steps that fill it each run."""
    if not any(pads):
        return x, []
    n, c, h, w = x.shape
    pt, pl, pb, pr = pads
    xp = scratch.take((n, c, h + pt + pb, w + pl + pr), x.dtype)
    return xp, _pad_steps(x, xp, pads, fill)


def _pad_steps(
    x: np.ndarray, xp: np.ndarray, pads: tuple[int, int, int, int], fill: float
) -> list[Run]:
    """The steps that write ``x`` padded by ``pads`` (with ``fill``) into ``xp``."""
    pt, pl = pads[0], pads[1]
    h, w = x.shape[2], x.shape[3]
    borders = [
        xp[:, :, :pt],
        xp[:, :, pt + h :],
        xp[:, :, pt : pt + h, :pl],
        xp[:, :, pt : pt + h, pl + w :],
    ]
    steps: list[Run] = [functools.partial(b.fill, fill) for b in borders if b.size]
    steps.append(functools.partial(np.copyto, xp[:, :, pt : pt + h, pl : pl + w], x))
    return steps


def _taps(
    xp: np.ndarray,
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int],
    out_hw: tuple[int, int],
) -> list[tuple[int, int, np.ndarray]]:
    """For each kernel tap (i, j), the strided view of ``xp`` it reads."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = k, s, d, out_hw
    return [
        (
            i,
            j,
            xp[
                :,
                :,
                i * dh : i * dh + (oh - 1) * sh + 1 : sh,
                j * dw : j * dw + (ow - 1) * sw + 1 : sw,
            ],
        )
        for i in range(kh)
        for j in range(kw)
    ]


@register_host_kernel("nn.conv2d")
def _conv2d(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    return conv2d_run(attrs, args[0], args[1], outs[0], scratch)


def conv2d_run(
    attrs: Attrs,
    x: np.ndarray,
    w: np.ndarray,
    o: np.ndarray,
    scratch: Scratch,
    epilogue: Epilogue | None = None,
) -> Run | None:
    """``nn.conv2d`` (NCHW/OIHW) into ``o``, then ``epilogue`` (bias per channel,
    residual, clamp; native kernels only) on each block as it is computed: in the
    depthwise kernel itself, in the Winograd output transform (3x3 stride-1 layers
    with a constant weight where :func:`winograd_pays`), or after each block of the
    GEMM. ``None`` when not handled here (other layouts and dtypes, or an epilogue this
    shape cannot fuse)."""
    if (
        attrs.data_layout != "NCHW"
        or attrs.kernel_layout != "OIHW"
        or attrs.out_layout not in ("", "NCHW")
        or not _float_same(x, w, o)
    ):
        return None
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    g = attrs.groups
    _, _, oh, ow = o.shape
    strides, dilation = pair(attrs.strides, "strides"), pair(attrs.dilation, "dilation")
    pads = pad4(attrs.padding)
    k = cg * kh * kw
    wmat = np.ascontiguousarray(w).reshape(g, oc // g, k)
    out = o.reshape(n, g, oc // g, oh * ow)
    if cg == 1 and g > 1 and x.flags.c_contiguous and o.flags.c_contiguous and w.flags.c_contiguous:
        return _depthwise(x, w, o, pads, strides, dilation, scratch, epilogue)
    if epilogue is not None and (g != 1 or not o.flags.c_contiguous):
        return None
    wino = _winograd(x, w, o, pads, strides, dilation, scratch, epilogue) if g == 1 else None
    if wino is not None:
        return wino
    steps: list[Run] = []
    if (kh, kw) == (1, 1) and strides == (1, 1) and not any(pads):
        cols = x.reshape(n, g, cg, h * wd)
    else:
        cols6 = scratch.take((n, c, kh, kw, oh, ow), x.dtype)
        cols = cols6.reshape(n, g, k, oh * ow)
        native = host_conv.im2col(
            x, cols6.reshape(n, c * kh * kw, oh * ow), (kh, kw), pads, strides, dilation,
            (oh, ow), scratch.take,
        )  # fmt: skip
        if native is not None:
            steps = [native]
        else:
            xp, steps = _padded(x, pads, 0.0, scratch)
            for i, j, view in _taps(xp, (kh, kw), strides, dilation, (oh, ow)):
                steps.append(functools.partial(np.copyto, cols6[:, :, i, j], view))
    get_policy().ensure_applied()
    if epilogue is None:
        steps.extend(_gemms(wmat, cols, out))
    else:
        for i in range(n):
            matrix = epilogue.matrix((oc, oh * ow), True, i * oc * oh * ow)
            if matrix is None:
                return None
            steps.append(matmul_run(wmat[0], cols[i, 0], out[i, 0], matrix))
    if len(steps) == 1:
        return steps[0]

    def run() -> None:
        for step in steps:
            step()

    return run


def _winograd(
    x: np.ndarray,
    w: np.ndarray,
    o: np.ndarray,
    pads: tuple[int, int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    scratch: Scratch,
    epilogue: Epilogue | None,
) -> Run | None:
    """The native Winograd convolution (:func:`relaykit.backends.host.conv.winograd`) where
    :func:`winograd_pays` and the weight is a constant (read-only: the executor's
    parameters), else ``None``."""
    if w.flags.writeable or not (x.flags.c_contiguous and o.flags.c_contiguous):
        return None
    if not winograd_pays(x.shape, w.shape, o.shape, strides, dilation):
        return None
    policy = get_policy()
    run = host_conv.winograd(
        x, _winograd_weight(w), o, (pads[0], pads[1]), scratch.take, epilogue,
        policy.host_threads,
    )  # fmt: skip
    if run is not None:
        policy.ensure_applied()
    return run


#: Largest intermediate of a Winograd convolution (the transformed input, or the 16
#: products): each is about 4x its activation, so big images keep the im2col path.
WINOGRAD_MAX_BYTES = 64 << 20


def winograd_pays(
    x: Sequence[int],
    w: Sequence[int],
    o: Sequence[int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
) -> bool:
    """Whether the host runs a convolution (NCHW ``x``, OIHW ``w``, ``o`` shapes) by
    Winograd F(2x2, 3x3): 3x3, stride 1, no dilation or groups, and where it measured
    faster than im2col + GEMM (see ``docs/host_kernels.md``), intermediates within
    :data:`WINOGRAD_MAX_BYTES`."""
    if tuple(w[2:]) != (3, 3) or strides != (1, 1) or dilation != (1, 1) or w[1] != x[1]:
        return False
    n, k, oh, ow = o
    c = x[1]
    tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
    if 16 * tiles * max(c, k) * 4 > WINOGRAD_MAX_BYTES or ow > _WINOGRAD_MAX_WIDTH:
        return False
    return (
        min(c, k) >= _WINOGRAD_MIN_CHANNELS
        and tiles >= _WINOGRAD_MIN_TILES
        and 16 * c * k * tiles >= _WINOGRAD_MIN_MACS
    )


#: Where Winograd measured slower than im2col + GEMM on a 2-core AMD EPYC (AVX-512,
#: OpenBLAS; docs/host_kernels.md has the table): fewer than 16 input or output channels
#: (an RGB first layer: 2.4x slower), fewer than 9 tiles (a 4x4 output, 4 tiles: 1.2-1.5x
#: slower; 6x6, 9 tiles: 0.45-0.59), or under 2M multiply-adds in the products (tens of
#: microseconds: the three phases' overhead; 64 -> 64 channels at 7x7, 1M, measured 0.73-1.05).
_WINOGRAD_MIN_CHANNELS = 16
_WINOGRAD_MIN_TILES = 9
_WINOGRAD_MIN_MACS = 1 << 21
#: Widest output: the kernel keeps a few rows of tiles on the stack (~70 KiB at this width).
_WINOGRAD_MAX_WIDTH = 2048

#: Transformed weights by the weight array they came from, with a digest of the weight's
#: bytes (binding runs twice per executor; an array changed in place is transformed again).
_wino_weights: weakref.WeakKeyDictionary[
    np.ndarray, dict[tuple[Any, ...], tuple[int, np.ndarray]]
] = weakref.WeakKeyDictionary()


def _winograd_weight(w: np.ndarray) -> np.ndarray:
    """``U^T`` [16, K, C] of the constant weight ``w``, transformed once per array and
    content (hashing the bytes takes ~1/20 of the transform)."""
    root = w
    while isinstance(root.base, np.ndarray):
        root = root.base
    key = (w.ctypes.data - root.ctypes.data, w.shape, w.strides)
    digest = hash(np.ascontiguousarray(w).tobytes())
    try:
        cache = _wino_weights.setdefault(root, {})
    except TypeError:  # pragma: no cover - an array that takes no weak reference
        return winograd_math.transformed_weight_kc(w)
    hit = cache.get(key)
    if hit is None or hit[0] != digest:
        hit = cache[key] = (digest, winograd_math.transformed_weight_kc(w))
    return hit[1]


#: Multiply-adds per block of a depthwise convolution (fewer blocks: fewer NumPy calls).
_DEPTHWISE_BLOCK_MACS = 1_000_000
#: Fewest multiply-adds per block of the native depthwise kernel (~20 us on one thread:
#: it runs at 4-20 GMAC/s, slowest on the small images of the last layers).
_NATIVE_DEPTHWISE_BLOCK_MACS = 1 << 17


def _depthwise(
    x: np.ndarray,
    w: np.ndarray,
    o: np.ndarray,
    pads: tuple[int, int, int, int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
    scratch: Scratch,
    epilogue: Epilogue | None = None,
) -> Run | None:
    """Depthwise convolution (one input channel per group, ``m`` outputs each): the
    native kernel (with ``epilogue`` applied to each output row) when it is available
    (see :mod:`relaykit.backends.host.conv`), else (and never with an epilogue) as K
    multiply-adds of whole shifted planes, no im2col.

    The padded input is split into its ``sh x sw`` stride phases (one plane for stride 1),
    all with one row pitch ``P``; then the tap (i, j) of every output pixel is the same
    phase plane read at one flat offset, so each tap is two NumPy passes over rows of
    ``oh * P`` contiguous elements (the ``P - ow`` extra columns per row are computed and
    dropped). Gathering the taps (im2col) and reducing them with einsum took 2.1 ms on
    MobileNetV2's [1, 144, 56, 56] layer, this 0.8 ms. Channels are cut into blocks (by
    shape) that the host threads take in turn.
    """
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    macs = o.size * kh * kw
    parts = max(1, min(_MAX_BLOCKS, c, macs // _NATIVE_DEPTHWISE_BLOCK_MACS))  # of channels
    native = host_conv.depthwise(
        x, w, o, pads, strides, dilation, scratch.take, epilogue, parts, get_policy().host_threads
    )
    if native is not None:
        return native
    if epilogue is not None:
        return None
    m = oc // c
    oh, ow = o.shape[2], o.shape[3]
    (sh, sw), (dh, dw) = strides, dilation
    pt, pl = pads[0], pads[1]
    taps = [(i * dh, j * dw) for i in range(kh) for j in range(kw)]
    pitch = ow + max(q // sw for _, q in taps)  # columns of a phase plane
    rows = oh + max(r // sh for r, _ in taps) + 1  # one spare row: the last tap reads past
    span = oh * pitch
    nc = n * c
    planes = scratch.take((sh * sw, nc, rows, pitch), x.dtype)
    acc = scratch.take((nc, m, span), x.dtype)
    tmp = scratch.take((nc, m, span), x.dtype)
    xs = x.reshape(nc, h, wd)
    fills: list[Run] = []
    for a in range(sh):
        for b in range(sw):
            y0, x0 = (a - pt) % sh, (b - pl) % sw  # first input row/column of this phase
            r0, q0 = (y0 + pt) // sh, (x0 + pl) // sw
            src = xs[:, y0::sh, x0::sw]
            plane = planes[a * sw + b]
            ny, nx = max(0, min(src.shape[1], rows - r0)), max(0, min(src.shape[2], pitch - q0))
            if ny == 0 or nx == 0:
                fills.append(functools.partial(plane.fill, 0.0))
                continue
            fills.append(functools.partial(np.copyto, plane[:, r0 : r0 + ny, q0 : q0 + nx],
                                           src[:, :ny, :nx]))  # fmt: skip
            borders = [plane[:, :r0], plane[:, r0 + ny :], plane[:, r0 : r0 + ny, :q0],
                       plane[:, r0 : r0 + ny, q0 + nx :]]  # fmt: skip
            fills.extend(functools.partial(z.fill, 0.0) for z in borders if z.size)
    flat = planes.reshape(sh * sw, nc, 1, rows * pitch)
    wk = w.reshape(c, m, kh * kw)  # a view: the weights are read at run time
    out = o.reshape(nc, m, oh, ow)
    count = max(1, min(_MAX_BLOCKS, c * m * span * kh * kw // _DEPTHWISE_BLOCK_MACS))

    def block(i: int, lo: int, hi: int) -> Run:
        a, b = i * c + lo, i * c + hi
        steps: list[Run] = []
        for k, (r, q) in enumerate(taps):
            off = (r // sh) * pitch + q // sw
            view = flat[(r % sh) * sw + q % sw, a:b, :, off : off + span]
            wcol = wk[lo:hi, :, k : k + 1]
            if k == 0:
                steps.append(functools.partial(np.multiply, view, wcol, out=acc[a:b]))
            else:
                steps.append(functools.partial(np.multiply, view, wcol, out=tmp[a:b]))
                steps.append(functools.partial(np.add, acc[a:b], tmp[a:b], out=acc[a:b]))
        full = acc[a:b].reshape(b - a, m, oh, pitch)[:, :, :, :ow]
        steps.append(functools.partial(np.copyto, out[a:b], full))
        return _sequence(steps)

    tasks = [block(i, lo, hi) for i in range(n) for lo, hi in _blocks(c, count, 1)]
    compute = tasks[0] if len(tasks) == 1 else functools.partial(get_policy().run_parallel, tasks)
    return _sequence([*fills, compute])


def _sequence(steps: list[Run]) -> Run:
    def run() -> None:
        for step in steps:
            step()

    return run


def _gemms(wmat: np.ndarray, cols: np.ndarray, out: np.ndarray) -> list[Run]:
    """``out[n, g] = wmat[g] @ cols[n, g]``: one BLAS call per matrix when there are few
    (NumPy's broadcasting matmul does not always reach BLAS), else one batched call."""
    n, g = cols.shape[0], cols.shape[1]
    if n * g > 32:
        return [functools.partial(np.matmul, wmat, cols, out=out)]
    return [matmul_run(wmat[j], cols[i, j], out[i, j]) for i in range(n) for j in range(g)]


@register_host_kernel("nn.max_pool2d")
def _max_pool2d(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    x, o = args[0], outs[0]
    if attrs.layout != "NCHW" or attrs.out_layout not in ("", "NCHW") or x.dtype.kind != "f":
        return None
    kh, kw = pair(attrs.pool_size, "pool_size")
    (sh, sw), (dh, dw) = pair(attrs.strides, "strides"), pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    _, _, h, wd = x.shape
    oh, ow = o.shape[2], o.shape[3]
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))  # ceil_mode's extra rows
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (wd + pl + pr))
    xp, steps = _padded(x, (pt, pl, pb + eh, pr + ew), -np.inf, scratch)
    taps = [v for _, _, v in _taps(xp, (kh, kw), (sh, sw), (dh, dw), (oh, ow))]
    steps.append(functools.partial(np.copyto, o, taps[0]))
    steps.extend(functools.partial(np.maximum, o, t, out=o) for t in taps[1:])

    def run() -> None:
        for step in steps:
            step()

    return run


@register_host_kernel("nn.global_avg_pool2d")
def _global_avg_pool2d(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    if attrs.layout != "NCHW" or attrs.out_layout not in ("", "NCHW"):
        return None
    if args[0].dtype.kind != "f":
        return None
    return functools.partial(np.mean, args[0], axis=(2, 3), keepdims=True, out=outs[0])


@register_host_kernel("nn.softmax")
def _softmax(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
    x, o = args[0], outs[0]
    if x.dtype.kind != "f" or o.dtype != x.dtype:
        return None
    axis = attrs.axis % x.ndim
    native = host_nn.softmax_run(x, o, axis)
    if native is not None:
        return native
    red = scratch.take((*x.shape[:axis], 1, *x.shape[axis + 1 :]), x.dtype)

    def run() -> None:
        np.max(x, axis=axis, keepdims=True, out=red)
        np.subtract(x, red, out=o)
        np.exp(o, out=o)
        np.sum(o, axis=axis, keepdims=True, out=red)
        np.divide(o, red, out=o)

    return run


@register_host_kernel("nn.layer_norm")
def _layer_norm(
    attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch
) -> Run | None:
    x, gamma, beta = args
    o = outs[0]
    if not _float_same(x, gamma, beta, o):
        return None
    axis = attrs.axis % x.ndim
    native = host_nn.layer_norm_run(
        x,
        gamma if attrs.scale else None,
        beta if attrs.center else None,
        o,
        axis,
        float(attrs.epsilon),
    )
    if native is not None:
        return native
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    g = gamma.reshape(shape) if attrs.scale else None
    b = beta.reshape(shape) if attrs.center else None
    stat = scratch.take((*x.shape[:axis], 1, *x.shape[axis + 1 :]), x.dtype)
    sq = scratch.take(x.shape, x.dtype)
    eps = x.dtype.type(attrs.epsilon)
    first = x[(slice(None),) * axis + (slice(0, 1),)]  # a shift: each row's first value

    def run() -> None:
        # Statistics of x - first (exact where a row's values are within a factor 2 of
        # each other): a large mean with a tiny variance keeps its digits.
        np.subtract(x, first, out=sq)
        np.mean(sq, axis=axis, keepdims=True, out=stat)
        np.subtract(sq, stat, out=o)
        np.multiply(o, o, out=sq)
        np.mean(sq, axis=axis, keepdims=True, out=stat)
        np.add(stat, eps, out=stat)
        np.sqrt(stat, out=stat)
        np.divide(o, stat, out=o)
        if g is not None:
            np.multiply(o, g, out=o)
        if b is not None:
            np.add(o, b, out=o)

    return run


_REDUCE: dict[str, Callable[..., Any]] = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
}


def _reduce(fn: Callable[..., Any]) -> Binder:
    def bind(attrs: Attrs, args: list[Any], outs: list[np.ndarray], scratch: Scratch) -> Run | None:
        x, o = args[0], outs[0]
        if x.dtype.kind != "f" or o.dtype != x.dtype or x.size == 0:
            return None
        if x.dtype == np.float16 and fn is np.mean:
            return None  # np.mean(out=float16) accumulates in float16 and overflows
        axes = reduce_axes(attrs, x.ndim)
        return functools.partial(fn, x, axis=axes, keepdims=bool(attrs.keepdims), out=o)

    return bind


for _name, _red in _REDUCE.items():
    register_host_kernel(_name)(_reduce(_red))
