"""Same numbers on every backend: NaN, +-Inf, -0.0 and denormals through each operator.

Each case is one operator (or a fused composite) fed special values; it runs on
the host and on every backend that takes it (the test checks the operator was
offloaded), and is compared with NumPy computing the operator directly.
Elementwise results must be bit-identical, signed zeros included; reductions
(dense, conv2d, softmax, pooling) must agree on NaN and on the sign of every
infinity, and be close elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, jsonref
from relaykit.contrib import graph_executor
from relaykit.ir.expr import Call, Function
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op

TINY = np.float32(1e-45)  # the smallest denormal
SPECIAL = np.array(
    [np.nan, np.inf, -np.inf, -0.0, 0.0, TINY, -TINY, 1e-39, 1.1754944e-38, 1.0, -2.5, 3.4e38],
    "float32",
)
RNG = np.random.default_rng(0)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def _sprinkle(x: np.ndarray, seed: int) -> np.ndarray:
    """``x`` with NaN, +-Inf, -0.0 and denormals at a few places (no huge finite values,
    whose overflow in a sum would depend on the order of the additions)."""
    out = x.copy()
    flat = out.reshape(-1)
    places = np.random.default_rng(seed).choice(flat.size, 6, replace=False)
    flat[places] = [np.nan, np.inf, -np.inf, -0.0, TINY, 1e-39]
    return out


# -- NumPy references (float64 where they sum) ---------------------------------------------------


def np_dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    # products then a sum, elementwise: no BLAS, so IEEE rules apply term by term
    return (x.astype(np.float64)[:, None, :] * w.astype(np.float64)[None, :, :]).sum(-1)


def np_conv2d(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Stride 1; padded taps are skipped (as every backend does), not multiplied by 0."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow))
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    for i in range(kh):
        for j in range(kw):
            for p in range(oh):
                for q in range(ow):
                    r, s = p + i - pad, q + j - pad
                    if 0 <= r < h and 0 <= s < wd:
                        out[:, :, p, q] += np.einsum("nc,oc->no", x64[:, :, r, s], w64[:, :, i, j])
    return out


def np_max_pool(x: np.ndarray, k: int, pad: int) -> np.ndarray:
    """Stride 1; the padding never wins (-inf)."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    oh, ow = xp.shape[2] - k + 1, xp.shape[3] - k + 1
    taps = [xp[:, :, i : i + oh, j : j + ow] for i in range(k) for j in range(k)]
    return np.max(np.stack(taps), axis=0)  # NaN propagates


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- cases --------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    #: (inputs by name, weights by name) -> relay body
    body: Callable[..., Any]
    inputs: dict[str, np.ndarray]
    params: dict[str, np.ndarray]
    reference: Callable[..., np.ndarray]
    exact: bool
    backends: tuple[str, ...]
    #: operators that must leave the host on every backend of ``backends``
    offloaded: tuple[str, ...]


GRID_A = np.repeat(SPECIAL, SPECIAL.size).reshape(SPECIAL.size, SPECIAL.size)
GRID_B = np.tile(SPECIAL, SPECIAL.size).reshape(SPECIAL.size, SPECIAL.size)
X_DENSE = _sprinkle(_rand(4, 8), 1)
W_DENSE = _rand(5, 8)
B_DENSE = _rand(5)
X_CONV = _sprinkle(_rand(1, 2, 6, 6), 2)
W_CONV = _rand(3, 2, 3, 3)
B_CONV = _rand(3)
X_POOL = _sprinkle(_rand(1, 2, 6, 6), 3)
X_SOFTMAX = np.array(
    [
        [0.5, np.nan, 1.0, -1.0],
        [0.5, np.inf, 1.0, -1.0],
        [0.5, -np.inf, 1.0, -1.0],
        [-np.inf, -np.inf, -np.inf, -np.inf],
        [100.0, 80.0, -0.0, TINY],
    ],
    "float32",
)
ALL = ("host", "ccompiler", "jsonref", "dnnl")


def _v(name: str, arr: np.ndarray) -> Any:
    return relay.var(name, shape=arr.shape)


CASES = [
    Case(
        "relu",
        lambda x: relay.nn.relu(x),
        {"x": SPECIAL},
        {},
        lambda x: np.maximum(x, np.float32(0)),
        True,
        ALL,
        ("nn.relu",),
    ),
    *[
        Case(
            op,
            lambda x, y, op=op: getattr(relay, op)(x, y),
            {"x": GRID_A, "y": GRID_B},
            {},
            lambda x, y, op=op: getattr(np, op)(x, y),
            True,
            ALL,
            (op,),
        )
        for op in ("add", "subtract", "multiply")
    ],
    Case(
        "dense",
        lambda x, w: relay.nn.dense(x, w),
        {"x": X_DENSE},
        {"w": W_DENSE},
        np_dense,
        False,
        ALL,
        ("nn.dense",),
    ),
    Case(
        "dense_bias_relu",
        lambda x, w, b: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b)),
        {"x": X_DENSE},
        {"w": W_DENSE, "b": B_DENSE},
        lambda x, w, b: np.maximum(np_dense(x, w) + b, 0),
        False,
        ALL,
        ("nn.dense", "nn.relu"),
    ),
    Case(
        "conv2d",
        lambda x, w: relay.nn.conv2d(x, w, padding=(1, 1), channels=3, kernel_size=(3, 3)),
        {"x": X_CONV},
        {"w": W_CONV},
        lambda x, w: np_conv2d(x, w, 1),
        False,
        ALL,
        ("nn.conv2d",),
    ),
    Case(
        "conv2d_bias_relu",
        lambda x, w, b: relay.nn.relu(
            relay.nn.bias_add(
                relay.nn.conv2d(x, w, padding=(1, 1), channels=3, kernel_size=(3, 3)), b
            )
        ),
        {"x": X_CONV},
        {"w": W_CONV, "b": B_CONV},
        lambda x, w, b: np.maximum(np_conv2d(x, w, 1) + b[None, :, None, None], 0),
        False,
        ALL,
        ("nn.conv2d", "nn.relu"),
    ),
    Case(
        "max_pool2d",
        lambda x: relay.nn.max_pool2d(x, pool_size=(3, 3), padding=(1, 1)),
        {"x": X_POOL},
        {},
        lambda x: np_max_pool(x, 3, 1),
        True,
        ("host", "jsonref", "dnnl"),
        ("nn.max_pool2d",),
    ),
    Case(
        "global_avg_pool2d",
        lambda x: relay.nn.global_avg_pool2d(x),
        {"x": X_POOL},
        {},
        lambda x: x.astype(np.float64).mean(axis=(2, 3), keepdims=True),
        False,
        ("host", "jsonref", "dnnl"),
        ("nn.global_avg_pool2d",),
    ),
    Case(
        "softmax",
        lambda x: relay.nn.softmax(x),
        {"x": X_SOFTMAX},
        {},
        np_softmax,
        False,
        ("host", "jsonref", "dnnl"),
        ("nn.softmax",),
    ),
]


def _host_ops(mod: tvm.IRModule) -> list[str]:
    body = mod["main"].body
    return [
        n.op.name
        for n in post_order(body, skip=lambda n: type(n) is Function)
        if type(n) is Call and type(n.op) is Op
    ]


def _partition(backend: str, mod: tvm.IRModule, params: dict[str, np.ndarray]) -> Any:
    if backend == "ccompiler":
        return ccompiler.partition_for_ccompiler(mod, params)
    if backend == "jsonref":
        return jsonref.partition_for_jsonref(mod, params)
    dnnl = pytest.importorskip("relaykit.backends.dnnl")
    try:
        dnnl.find_onednn()
    except dnnl.DnnlNotFoundError as err:
        pytest.skip(f"the dnnl backend is not available: {err}")
    return dnnl.partition_for_dnnl(mod, params)


def run_case(case: Case, backend: str) -> np.ndarray:
    names = [*case.inputs, *case.params]
    arrays = {**case.inputs, **case.params}
    args = [_v(n, arrays[n]) for n in names]
    mod = tvm.IRModule.from_expr(relay.Function(args, case.body(*args)))
    if backend == "host":
        lib = relay.build(mod, target="llvm", params=case.params)
    else:
        part = _partition(backend, mod, case.params)
        left = set(_host_ops(part)) & set(case.offloaded)
        assert not left, f"{backend} left {sorted(left)} on the host:\n{part}"
        lib = relay.build(part, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(**case.inputs)
    return m.get_output(0).numpy()


def assert_same_numbers(got: np.ndarray, want: np.ndarray, exact: bool) -> None:
    want32 = want.astype(np.float32)
    assert got.dtype == np.float32 and got.shape == want32.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want32), err_msg="NaN positions")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want32), err_msg="+inf")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want32), err_msg="-inf")
    if exact:  # bit for bit, -0.0 and denormals included
        np.testing.assert_array_equal(got.view(np.uint32), want32.view(np.uint32))
    else:
        finite = np.isfinite(want32)
        np.testing.assert_allclose(got[finite], want32[finite], rtol=1e-5, atol=1e-6)


_VMAXPS = "oneDNN's JIT kernels take maxima with vmaxps, which returns the non-NaN operand"
#: What oneDNN computes differently (the dnnl backend's native code, owned by its helper).
DNNL_DIFFERS = {
    "relu": f"dnnl relu turns NaN into 0 ({_VMAXPS})",
    "dense_bias_relu": f"dnnl's fused relu turns NaN into 0 ({_VMAXPS})",
    "conv2d_bias_relu": f"dnnl's fused relu turns NaN into 0 ({_VMAXPS})",
    "max_pool2d": f"dnnl max pooling drops NaN ({_VMAXPS})",
    "softmax": f"dnnl softmax keeps NaN/inf to their own element ({_VMAXPS} for the row max)",
}


@pytest.mark.parametrize(
    "case, backend",
    [(c, b) for c in CASES for b in c.backends],
    ids=[f"{c.name}-{b}" for c in CASES for b in c.backends],
)
def test_special_values(case, backend, request):
    if backend == "dnnl" and case.name in DNNL_DIFFERS:
        request.applymarker(pytest.mark.xfail(reason=DNNL_DIFFERS[case.name], strict=False))
    with np.errstate(all="ignore"):
        want = case.reference(*case.inputs.values(), *case.params.values())
    assert_same_numbers(run_case(case, backend), want, case.exact)
