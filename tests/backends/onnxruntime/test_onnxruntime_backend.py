"""The onnxruntime backend: each exported operator against NumPy (float64), whole
partitioned models, artifacts loaded without native code, threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the onnxruntime backend needs onnxruntime")
pytest.importorskip("onnx", reason="the onnxruntime backend needs onnx")

import relaykit as tvm
from relaykit import relay
from relaykit.backends import get_backend
from relaykit.byoc import partition_for, region_functions
from relaykit.errors import CodegenError

RNG = np.random.default_rng(7)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def _run_on_ort(body_fn: Callable[..., Any], inputs: dict[str, np.ndarray]) -> tuple[Any, Any]:
    """Partition ``body_fn(*vars)`` for onnxruntime, build and run; the outputs and the
    partitioned module."""
    vs = [relay.var(k, shape=v.shape, dtype=str(v.dtype)) for k, v in inputs.items()]
    mod = tvm.IRModule.from_expr(relay.Function(vs, body_fn(*vs)))
    part = partition_for(mod, "onnxruntime")
    lib = relay.build(part, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    outs = [m.get_output(i).numpy() for i in range(m.get_num_outputs())]
    return outs, part


def _offloaded(part: Any) -> int:
    return sum(1 for g in region_functions(part) if part[g].attrs.get("Compiler") == "onnxruntime")


def _conv_ref(x: np.ndarray, w: np.ndarray, pad: int, stride: int) -> np.ndarray:
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out


def test_conv2d_bias_relu_matches_numpy() -> None:
    x, w, b = _rand(1, 3, 9, 9), _rand(4, 3, 3, 3), _rand(4)

    def body(xv: Any) -> Any:
        y = relay.nn.conv2d(xv, relay.const(w), padding=(1, 1), strides=(2, 2))
        return relay.nn.relu(relay.nn.bias_add(y, relay.const(b)))

    (got,), part = _run_on_ort(body, {"x": x})
    want = np.maximum(_conv_ref(x, w, 1, 2) + b.reshape(1, 4, 1, 1), 0)
    assert _offloaded(part) == 1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_dense_batch_matmul_softmax() -> None:
    x, w = _rand(2, 8), _rand(5, 8)
    a, bm = _rand(3, 4, 6), _rand(3, 5, 6)
    (d, s), part = _run_on_ort(
        lambda xv, av, bv: relay.Tuple(
            [relay.nn.dense(xv, relay.const(w)), relay.nn.softmax(relay.nn.batch_matmul(av, bv))]
        ),
        {"x": x, "a": a, "b": bm},
    )
    np.testing.assert_allclose(
        d, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-5
    )
    logits = np.einsum("bik,bjk->bij", a.astype(np.float64), bm.astype(np.float64))
    e = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    assert _offloaded(part) >= 1


def test_pooling_and_reductions() -> None:
    x = _rand(1, 2, 6, 6)
    (mp, ap, gap, sm, mx), _ = _run_on_ort(
        lambda xv: relay.Tuple(
            [
                relay.nn.max_pool2d(xv, (2, 2), strides=(2, 2)),
                relay.nn.avg_pool2d(
                    xv, (3, 3), strides=(1, 1), padding=(1, 1), count_include_pad=True
                ),
                relay.nn.global_avg_pool2d(xv),
                relay.sum(xv, axis=(1, 3), keepdims=True),
                relay.max(xv, axis=2),
            ]
        ),
        {"x": x},
    )
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mp, x64.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5)), rtol=1e-6)
    padded = np.pad(x64, ((0, 0), (0, 0), (1, 1), (1, 1)))
    avg = sum(padded[:, :, i : i + 6, j : j + 6] for i in range(3) for j in range(3)) / 9
    np.testing.assert_allclose(ap, avg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gap, x64.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sm, x64.sum(axis=(1, 3), keepdims=True), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mx, x64.max(axis=2), rtol=1e-6)


def test_batch_norm_and_layer_norm() -> None:
    x = _rand(2, 3, 4, 4)
    g, bt, mu, var = _rand(3), _rand(3), _rand(3), np.abs(_rand(3)) + 0.5
    t = _rand(2, 5, 8)
    lg, lb = _rand(8), _rand(8)

    def body(xv: Any, tv: Any) -> Any:
        bn = relay.nn.batch_norm(xv, *(relay.const(a) for a in (g, bt, mu, var)), epsilon=1e-3)[0]
        ln = relay.nn.layer_norm(tv, relay.const(lg), relay.const(lb), epsilon=1e-5)
        return relay.Tuple([bn, ln])

    (bn, ln), _ = _run_on_ort(body, {"x": x, "t": t})
    c = (slice(None), None, None)
    want_bn = (x - mu[c]) / np.sqrt(var[c].astype(np.float64) + 1e-3) * g[c] + bt[c]
    np.testing.assert_allclose(bn, want_bn, rtol=1e-4, atol=1e-5)
    t64 = t.astype(np.float64)
    norm = (t64 - t64.mean(-1, keepdims=True)) / np.sqrt(t64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln, norm * lg + lb, rtol=1e-4, atol=1e-4)


def test_shapes_and_elementwise() -> None:
    x, y = _rand(2, 3, 4), _rand(2, 3, 4)

    def body(xv: Any, yv: Any) -> Any:
        z = relay.transpose(relay.reshape(xv * yv - relay.exp(yv), (6, 4)), (1, 0))
        cat = relay.concatenate([xv, relay.sigmoid(yv)], axis=1)
        sl = relay.strided_slice(cat, begin=[0, 1, 0], end=[2, 5, 4], strides=[1, 2, 1])
        parts = relay.split(xv, 2, axis=2)
        return relay.Tuple([z, sl, relay.nn.relu(parts[1]), relay.clip(yv, -0.5, 0.5)])

    (z, sl, p1, cl), part = _run_on_ort(body, {"x": x, "y": y})
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    np.testing.assert_allclose(z, (x64 * y64 - np.exp(y64)).reshape(6, 4).T, rtol=1e-5, atol=1e-6)
    cat = np.concatenate([x64, 1 / (1 + np.exp(-y64))], axis=1)
    np.testing.assert_allclose(sl, cat[0:2, 1:5:2, 0:4], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p1, np.maximum(x64[:, :, 2:], 0), rtol=1e-6)
    np.testing.assert_allclose(cl, np.clip(y64, -0.5, 0.5), rtol=1e-6)
    assert _offloaded(part) >= 1


def _mlp_ref(x: np.ndarray, ws: list[np.ndarray], bs: list[np.ndarray]) -> np.ndarray:
    h = x.astype(np.float64)
    for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
        h = h @ w.T.astype(np.float64) + b
        if i < len(ws) - 1:
            h = np.maximum(h, 0)
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _mlp(ws: list[np.ndarray], bs: list[np.ndarray]) -> Any:
    x = relay.var("x", shape=(4, ws[0].shape[1]))
    h: Any = x
    for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
        h = relay.nn.bias_add(relay.nn.dense(h, relay.const(w)), relay.const(b))
        if i < len(ws) - 1:
            h = relay.nn.relu(h)
    return tvm.IRModule.from_expr(relay.Function([x], relay.nn.softmax(h)))


def test_artifact_loads_without_native_code_and_runs_in_threads(tmp_path: Any) -> None:
    ws = [_rand(16, 12), _rand(6, 16)]
    bs = [_rand(16), _rand(6)]
    part = partition_for(_mlp(ws, bs), "onnxruntime")
    lib = relay.build(part, target="llvm")
    path = tmp_path / "m.rkmod"
    lib.export_library(str(path))
    loaded = tvm.runtime.load_module(str(path), allow_native=False)
    xs = [_rand(4, 12) for _ in range(6)]
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        m = tvm.contrib.graph_executor.GraphModule(loaded["default"](tvm.cpu()))
        for _ in range(5):
            m.set_input("x", xs[i])
            m.run()
        results[i] = m.get_output(0).numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i], _mlp_ref(x, ws, bs), rtol=1e-4, atol=1e-6)


def test_rules_decline_what_the_exporter_cannot_take() -> None:
    x = relay.var("x", shape=(1, 4, 4, 3))
    w = relay.const(_rand(3, 3, 3, 3))
    nhwc = relay.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO")
    mod = tvm.IRModule.from_expr(relay.Function([x], nhwc))
    part = partition_for(mod, "onnxruntime")
    assert _offloaded(part) == 0  # NHWC stays on the host
    xi = relay.var("i", shape=(4,), dtype="int32")
    part = partition_for(tvm.IRModule.from_expr(relay.Function([xi], xi + xi)), "onnxruntime")
    assert _offloaded(part) == 0  # int32 is declined


def test_codegen_names_an_operator_it_cannot_export() -> None:
    x = relay.var("x", shape=(2, 2))
    func = relay.Function([x], relay.nn.relu(x))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    fn = mod["main"].with_attr("global_symbol", "r0")
    get_backend("onnxruntime").codegen(fn)  # a supported one converts
    bad = relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x], relay.argsort(x)))
    )["main"].with_attr("global_symbol", "r1")
    with pytest.raises(CodegenError, match="argsort"):
        get_backend("onnxruntime").codegen(bad)


@pytest.mark.parametrize(("env", "want"), [(None, "0"), ("1", "1"), ("0", "0")])
def test_idle_worker_threads_spin_only_when_asked(
    env: str | None, want: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from relaykit.backends.onnxruntime.runtime import SPINNING_ENV, OnnxRuntimeModule

    if env is None:
        monkeypatch.delenv(SPINNING_ENV, raising=False)
    else:
        monkeypatch.setenv(SPINNING_ENV, env)
    x = _rand(3, 4)
    outs, part = _run_on_ort(lambda v: relay.exp(relay.nn.relu(v)), {"x": x})
    np.testing.assert_allclose(outs[0], np.exp(np.maximum(x.astype(np.float64), 0)), rtol=1e-5)
    lib = relay.build(part, target="llvm")
    mods = [m for m in lib.get_lib().imported_modules if isinstance(m, OnnxRuntimeModule)]
    assert len(mods) == 1
    opts = mods[0].session.get_session_options()
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == want
