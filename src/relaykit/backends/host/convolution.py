"""Convolution and pooling host kernels (NCHW/OIHW): im2col + GEMM, Winograd
F(2x2, 3x3) where it measured faster (:func:`winograd_pays`), depthwise, max and
global average pooling."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from relaykit.backends.host import conv as host_conv
from relaykit.backends.host import qnn_ops, winograd_math
from relaykit.backends.host.conv import Epilogue
from relaykit.backends.host.linalg import MAX_BLOCKS, blocks, matmul_run
from relaykit.backends.host.table import (
    Run,
    Scratch,
    float_same,
    register_host_kernel,
    sequence,
)
from relaykit.ir.attrs import Attrs
from relaykit.op.nn.conv_weights import grouped_weight
from relaykit.op.nn.geometry import pad4, pair
from relaykit.runtime.threads import get_policy

__all__ = [
    "ALGORITHM_ATTR",
    "WINOGRAD_MAX_BYTES",
    "conv2d_run",
    "winograd_applies",
    "winograd_pays",
]

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
        or not float_same(x, w, o)
    ):
        return None
    n, c, h, wd = x.shape
    g = attrs.groups
    grouped = grouped_weight(w, c, g, attrs.get("channels"))  # TVM's depthwise (C, M, kh, kw)
    if grouped is not w and not w.flags.c_contiguous:
        return None  # the reshape would copy a weight the executor may refill
    w = grouped
    oc, cg, kh, kw = w.shape
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
    algorithm = attrs.get(ALGORITHM_ATTR, "auto")  # a tuned choice (relaykit.execution.tuning)
    wino = (
        _winograd(x, w, o, pads, strides, dilation, scratch, epilogue, algorithm)
        if g == 1 and algorithm != "im2col"
        else None
    )
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
    algorithm: str = "auto",
) -> Run | None:
    """The native Winograd convolution (:func:`relaykit.backends.host.conv.winograd`) where
    :func:`winograd_pays` (or ``algorithm == "winograd"``, a tuned choice, and the shape
    allows it) and the weight is a constant (read-only: the executor's parameters), else
    ``None``."""
    if w.flags.writeable or not (x.flags.c_contiguous and o.flags.c_contiguous):
        return None
    if algorithm == "winograd":
        if not winograd_applies(x.shape, w.shape, o.shape, strides, dilation):
            return None
    elif not winograd_pays(x.shape, w.shape, o.shape, strides, dilation):
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


#: The plan-node attribute that carries a tuned algorithm: "auto" (the measured
#: heuristic, :func:`winograd_pays`), "im2col" or "winograd".
ALGORITHM_ATTR = "host_algorithm"


def winograd_applies(
    x: Sequence[int],
    w: Sequence[int],
    o: Sequence[int],
    strides: tuple[int, int],
    dilation: tuple[int, int],
) -> bool:
    """Whether Winograd F(2x2, 3x3) can run this convolution at all: 3x3, stride 1, no
    dilation or groups, intermediates within :data:`WINOGRAD_MAX_BYTES`."""
    if tuple(w[2:]) != (3, 3) or strides != (1, 1) or dilation != (1, 1) or w[1] != x[1]:
        return False
    n, k, oh, ow = o
    tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
    return 16 * tiles * max(x[1], k) * 4 <= WINOGRAD_MAX_BYTES and ow <= _WINOGRAD_MAX_WIDTH


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
    if not winograd_applies(x, w, o, strides, dilation):
        return False
    n, k, oh, ow = o
    c = x[1]
    tiles = n * ((oh + 1) // 2) * ((ow + 1) // 2)
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
    parts = max(1, min(MAX_BLOCKS, c, macs // _NATIVE_DEPTHWISE_BLOCK_MACS))  # of channels
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
    count = max(1, min(MAX_BLOCKS, c * m * span * kh * kw // _DEPTHWISE_BLOCK_MACS))

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
        return sequence(steps)

    tasks = [block(i, lo, hi) for i in range(n) for lo, hi in blocks(c, count, 1)]
    compute = tasks[0] if len(tasks) == 1 else functools.partial(get_policy().run_parallel, tasks)
    return sequence([*fills, compute])


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
    if attrs.layout != "NCHW" or attrs.out_layout not in ("", "NCHW") or x.dtype.kind not in "fiu":
        return None
    # padding holds the dtype's lowest finite value (TVM's min_value, as the NumPy
    # kernel): it never wins; int8 models pool their integers the same way
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else int(np.iinfo(x.dtype).min)
    kh, kw = pair(attrs.pool_size, "pool_size")
    (sh, sw), (dh, dw) = pair(attrs.strides, "strides"), pair(attrs.dilation, "dilation")
    pt, pl, pb, pr = pad4(attrs.padding)
    native = qnn_ops.max_pool2d_run(x, o, (kh, kw), (sh, sw), (dh, dw), (pt, pl))
    if native is not None:
        return native
    _, _, h, wd = x.shape
    oh, ow = o.shape[2], o.shape[3]
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))  # ceil_mode's extra rows
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (wd + pl + pr))
    xp, steps = _padded(x, (pt, pl, pb + eh, pr + ew), low, scratch)
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
    x, out = args[0], outs[0]
    if x.dtype.kind in "iu" and x.itemsize <= 4 and x.shape[2] * x.shape[3] < 1 << 21:
        return _global_avg_int(x, out, scratch)
    if x.dtype.kind != "f":
        return None
    return functools.partial(np.mean, x, axis=(2, 3), keepdims=True, out=out)


def _global_avg_int(x: np.ndarray, out: np.ndarray, scratch: Scratch) -> Run:
    """The mean of integers as the reference computes it (``np.mean``: the float64 sum over
    the count, truncated to the dtype), the sum taken exactly in int64 first (below 2**53
    for 32-bit values and fewer than 2**21 pixels, so its float64 is the same)."""
    shape = (x.shape[0], x.shape[1], 1, 1)
    total = scratch.take(shape, np.int64)
    mean = scratch.take(shape, np.float64)
    count = x.shape[2] * x.shape[3]

    def run() -> None:
        np.sum(x, axis=(2, 3), keepdims=True, dtype=np.int64, out=total)
        np.divide(total, count, out=mean)
        np.copyto(out, mean, casting="unsafe")

    return run
