"""What the CNN speed work changed in the dnnl runtime, checked against NumPy.

- A convolution's fused relu is oneDNN's max(x, 0) (no exp per element); a standalone
  relu still keeps NaN (tests/contrib/dnnl/test_transformers.py).
- Small steps of a multi-threaded region are built for and run on one thread, the big
  ones on the region's threads; the results do not depend on it.
"""

from __future__ import annotations

import numpy as np

from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion


def _conv_nchw(x: np.ndarray, w: np.ndarray, b: np.ndarray, pad: int) -> np.ndarray:
    """Direct NumPy convolution (stride 1), float64."""
    n, _, h, wd = x.shape
    o, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out + b.reshape(1, -1, 1, 1)


def _program(layout: str) -> tuple[Program, dict[str, np.ndarray]]:
    """conv 3x3 (16 -> 32, 28x28) + relu -> average pooling to 2x2 -> conv 1x1 (32 -> 8)
    + relu -> softmax: the first conv and the pooling are big, the rest small."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.2
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((8, 32, 1, 1)).astype(np.float32) * 0.2
    b2 = rng.standard_normal(8).astype(np.float32) * 0.1
    p = Program(layout=layout)
    x = p.add_input((1, 16, 28, 28))
    y1 = p.new_tensor((1, 32, 28, 28))
    relu = [{"op": "relu"}]

    def conv(w: np.ndarray, b: np.ndarray, pad: int) -> dict:
        return {"weight": p.add_constant(w), "bias": p.add_constant(b), "strides": [1, 1],
                "dilation": [1, 1], "groups": 1, "pad": [pad] * 4}  # fmt: skip

    p.nodes.append(Node("conv", [x], y1, conv(w1, b1, 1), relu))
    y2 = p.new_tensor((1, 32, 2, 2))
    p.nodes.append(Node("pool", [y1], y2, {"alg": "avg_exclude", "kernel": [14, 14],
                                           "strides": [14, 14], "dilation": [1, 1],
                                           "pad_l": [0, 0], "pad_r": [0, 0]}))  # fmt: skip
    y3 = p.new_tensor((1, 8, 2, 2))
    p.nodes.append(Node("conv", [y2], y3, conv(w2, b2, 0), relu))
    y4 = p.new_tensor((1, 8, 2, 2))
    p.nodes.append(Node("softmax", [y3], y4, {"axis": 1}))
    p.outputs.append(y4)
    return p, {"w1": w1, "b1": b1, "w2": w2, "b2": b2}


def _reference(x: np.ndarray, k: dict[str, np.ndarray]) -> np.ndarray:
    y1 = np.maximum(_conv_nchw(x, k["w1"], k["b1"], 1), 0)
    y2 = y1.reshape(1, 32, 2, 14, 2, 14).mean(axis=(3, 5))
    y3 = np.maximum(_conv_nchw(y2, k["w2"], k["b2"], 0), 0)
    e = np.exp(y3 - y3.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_small_steps_run_on_one_thread_and_agree_with_numpy():
    x = np.random.default_rng(1).standard_normal((1, 16, 28, 28)).astype(np.float32)
    for layout in ("blocked", "nhwc"):
        program, k = _program(layout)
        want = _reference(x, k)
        region = DnnlRegion.from_program(program, name="mixed", num_threads=2)
        assert region.num_threads == 2
        steps = region.steps()
        big = [s for s in steps if s.startswith(("conv", "pool"))]  # the pooling reads 25,088
        small = [s for s in steps if s.startswith("softmax") or " w=8x32x1x1" in s]
        big = [s for s in big if s not in small]
        assert big and all("threads=1" not in s for s in big), steps
        assert small and all("threads=1" in s for s in small), steps
        for _ in range(3):  # alternating thread counts across calls keep the results
            np.testing.assert_allclose(region(x), want, rtol=1e-4, atol=1e-6)
        single = DnnlRegion.from_program(program, name="single", num_threads=1)
        assert all("threads=1" not in s for s in single.steps())
        np.testing.assert_allclose(single(x), want, rtol=1e-4, atol=1e-6)


def test_fused_conv_relu_is_max_with_zero():
    # finite inputs: the fused relu clamps negatives to +0, keeps positives exactly
    rng = np.random.default_rng(2)
    w = rng.standard_normal((16, 4, 1, 1)).astype(np.float32)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    p = Program(layout="blocked")
    t = p.add_input(x.shape)
    y = p.new_tensor((1, 16, 8, 8))
    p.nodes.append(Node("conv", [t], y, {"weight": p.add_constant(w), "bias": -1,
                                         "strides": [1, 1], "dilation": [1, 1],
                                         "pad": [0, 0, 0, 0], "groups": 1},
                        [{"op": "relu"}]))  # fmt: skip
    p.outputs.append(y)
    region = DnnlRegion.from_program(p, name="relu", num_threads=1)
    got = region(x)
    want = np.maximum(np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert (got >= 0).all() and not np.signbit(got[got == 0]).any()
    assert any("+relu" in s for s in region.steps())
