"""TVM's other workloads (inception_v3, dqn, dcgan, squeezenet, densenet, lstm):
parameter names, output types, and forward passes against independent NumPy code."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from relaykit.errors import IRError
from relaykit.ir import Call, Function, IRModule, Let, post_order
from relaykit.testing import (
    count_ops,
    create_workload,
    dcgan,
    densenet,
    dqn,
    inception_v3,
    lstm,
    mlp,
    squeezenet,
)

TOL = {"rtol": 1e-4, "atol": 1e-5}


def _names(mod: IRModule) -> list[str]:
    return [p.name_hint for p in mod["main"].params]


def test_inception_v3_structure() -> None:
    mod, params = inception_v3.get_workload(batch_size=1, num_classes=10)
    main = mod["main"]
    assert str(main.checked_type.ret_type) == "Tensor[(1, 10), float32]"
    ops = count_ops(main)
    # stem 5 + A 3*7 + B 4 + C 4*10 + D 6 + E 2*9 convolutions, each with bn + relu
    assert ops["nn.conv2d"] == 5 + 21 + 4 + 40 + 6 + 18 == ops["nn.batch_norm"] == ops["nn.relu"]
    assert ops["concatenate"] == 11
    names = _names(mod)
    assert names[:2] == ["data", "conv_conv1_weight"]
    assert {"mixed_10_tower_1_mixed_conv_1_conv1_weight", "fc1_weight", "fc2_bias"} <= set(names)
    assert params["fc1_weight"].shape == (10, 2048)
    bns = [n for n in post_order(main) if isinstance(n, Call) and n.op.name == "nn.batch_norm"]
    assert {(b.attrs.epsilon, b.attrs.scale) for b in bns} == {(2e-5, False)}


def _run(mod: IRModule, *args: Any, **params: Any) -> np.ndarray:
    interpreter = pytest.importorskip("relaykit.execution.interpreter")
    out = interpreter.create_executor("debug", mod=mod).evaluate()(*args, **params)
    return out.numpy() if hasattr(out, "numpy") else np.asarray(out)


def _conv(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """Valid NCHW x OIHW convolution by explicit sums over the kernel."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def test_dqn_forward_matches_numpy() -> None:
    mod, params = dqn.get_workload(batch_size=2, num_actions=5, image_shape=(4, 36, 36))
    assert _names(mod) == [
        "data", "conv1_weight", "conv1_bias", "conv2_weight", "conv2_bias", "conv3_weight",
        "conv3_bias", "dense1_weight", "dense1_bias", "dense2_weight", "dense2_bias",
    ]  # fmt: skip
    rng = np.random.RandomState(0)
    p = {k: rng.uniform(-0.3, 0.3, v.shape).astype("float32") for k, v in params.items()}
    data = rng.uniform(-1, 1, (2, 4, 36, 36)).astype("float32")
    x = data.astype(np.float64)
    for i, stride in ((1, 4), (2, 2), (3, 1)):
        x = _conv(x, p[f"conv{i}_weight"], stride) + p[f"conv{i}_bias"].reshape(1, -1, 1, 1)
        x = np.maximum(x, 0)
    x = x.reshape(2, -1)
    x = np.maximum(x @ p["dense1_weight"].T + p["dense1_bias"], 0)
    ref = x @ p["dense2_weight"].T + p["dense2_bias"]
    np.testing.assert_allclose(_run(mod, data, **p), ref, **TOL)


def test_dcgan_shapes_and_range() -> None:
    mod, params = dcgan.get_workload(batch_size=2, oshape=(3, 64, 64), ngf=4, random_len=8)
    main = mod["main"]
    assert str(main.checked_type.ret_type) == "Tensor[(2, 3, 64, 64), float32]"
    assert params["dense_weight"].shape == (4 * 4 * 4 * 8, 8)
    assert params["g2_deconv_weight"].shape == (32, 16, 4, 4)  # IOHW
    assert count_ops(main)["nn.conv2d_transpose"] == 4
    data = np.random.RandomState(3).uniform(-1, 1, (2, 8)).astype("float32")
    out = _run(mod, data, **params)
    assert out.shape == (2, 3, 64, 64) and np.abs(out).max() <= 1.0


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_squeezenet_structure(version: str) -> None:
    mod, params = squeezenet.get_workload(1, num_classes=10, version=version)
    main = mod["main"]
    assert str(main.checked_type.ret_type) == "Tensor[(1, 10), float32]"
    ops = count_ops(main)
    assert ops["concatenate"] == 8 and ops["nn.conv2d"] == 1 + 8 * 3 + 1
    assert ops["nn.max_pool2d"] == 3 and ops["nn.dropout"] == 1
    first = 96 if version == "1.0" else 64
    assert params["conv1_weight"].shape[0] == first
    assert "fire8_right_conv_bias" in params and "conv_final_bias" in params


def test_squeezenet_bad_version() -> None:
    with pytest.raises(IRError, match="version"):
        squeezenet.get_net(1, (3, 224, 224), 10, "2.0", "float32")


def test_densenet_structure() -> None:
    mod, params = densenet.get_workload(121, classes=10, batch_size=1)
    ops = count_ops(mod["main"])
    assert ops["nn.conv2d"] == 1 + 2 * (6 + 12 + 24 + 16) + 3
    assert ops["concatenate"] == 4
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(1, 10), float32]"
    # each block's output has growth_rate * layers channels; transitions halve the count
    assert params["conv_t_0_weight"].shape == ((64 + 6 * 32) // 2, 6 * 32, 1, 1)
    with pytest.raises(IRError, match="densenet_size"):
        densenet.get_net(100, 10, 1, (3, 224, 224), "float32")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_lstm_matches_numpy() -> None:
    iters, hidden, batch = 3, 4, 2
    mod, _ = lstm.get_workload(iters, hidden, batch_size=batch)
    main = mod["main"]
    assert Counter(type(n) for n in post_order(main))[Let] >= 3 * iters + 2
    names = _names(mod)
    assert names.count("data") == iters and "h2h_2_bias" in names
    rng = np.random.RandomState(5)
    args = [rng.uniform(-1, 1, p.type_annotation.shape).astype("float32") for p in main.params]
    h = c = np.zeros((batch, hidden))
    for i in range(iters):
        x, wi, bi, wh, bh = args[5 * i : 5 * i + 5]
        gates = x @ wi.T + bi + h @ wh.T + bh
        ig, fg, tg, og = np.split(gates, 4, axis=1)
        c = _sigmoid(fg) * c + _sigmoid(ig) * np.tanh(tg)
        h = _sigmoid(og) * np.tanh(c)
    assert [p.name_hint for p in main.params[:5]] == [
        "data", "i2h_0_weight", "i2h_0_bias", "h2h_0_weight", "h2h_0_bias",
    ]  # fmt: skip
    np.testing.assert_allclose(_run(mod, *args), h, **TOL)


def test_lstm_cell_is_a_typed_function() -> None:
    cell = lstm.lstm_cell(3, batch_size=1)
    assert isinstance(cell, Function) and len(cell.params) == 6
    assert (
        str(cell.ret_type)
        == "(Tensor[(1, 3), float32], (Tensor[(1, 3), float32], Tensor[(1, 3), float32]))"
    )


def test_create_workload_accepts_a_plain_function_initializer() -> None:
    """TVM lets ``initializer`` be any ``fn(name, array)``; it sees NumPy's global
    generator seeded with ``seed``."""
    seen: list[float] = []

    def fill(name: str, arr: np.ndarray) -> None:
        arr[...] = np.random.uniform(size=arr.shape)
        seen.append(float(arr.flat[0]))

    net = mlp.get_net(batch_size=1, num_classes=4, image_shape=(1, 4, 4), dtype="float32")
    _, params = create_workload(net, fill, seed=3)
    first = seen[0]
    np.random.seed(3)
    expected = np.random.uniform(size=params["fc1_weight"].shape).astype("float32").flat[0]
    assert first == float(expected)
    assert len(seen) == len(params)
