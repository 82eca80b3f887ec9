"""The graph executor's in-place host kernels agree with the reference kernels."""

import numpy as np
import pytest

from relaykit.backends.host.kernels import Scratch, bind_kernel, host_kernel_names
from relaykit.ir.op import get_op
from relaykit.op.define import make_attrs

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def compare(op_name, inputs, **attrs):
    """Bind with a real scratch arena (measured first, as the executor does) and compare."""
    a = make_attrs(get_op(op_name), attrs)
    ref = get_op(op_name).get_attr("FCompute")(inputs, a)
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    outs = [np.full(r.shape, np.nan if r.dtype.kind == "f" else 7, r.dtype) for r in refs]
    measure = Scratch(None)
    bind_kernel(op_name, a, list(inputs), outs, measure)
    arena = np.full(measure.peak + 64, 0xAB, np.uint8)  # garbage: kernels must not rely on it
    run = bind_kernel(op_name, a, list(inputs), outs, Scratch(arena))
    for _ in range(2):  # a second run sees the scratch left by the first
        run()
    for o, r in zip(outs, refs, strict=True):
        np.testing.assert_allclose(o, r, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(
    "xs, ws, attrs",
    [
        ((1, 3, 8, 8), (4, 3, 3, 3), {}),
        ((2, 4, 9, 7), (5, 4, 3, 3), {"padding": (1, 1), "strides": (2, 2)}),
        ((1, 2, 9, 9), (3, 2, 3, 2), {"padding": (0, 1, 2, 1), "dilation": (2, 1)}),
        ((1, 4, 6, 6), (6, 2, 3, 3), {"groups": 2, "padding": (1, 1)}),
        ((1, 64, 6, 6), (64, 1, 3, 3), {"groups": 64, "padding": (1, 1)}),  # depthwise
        ((2, 8, 5, 5), (4, 8, 1, 1), {}),  # pointwise: no im2col
        ((1, 8, 8, 8), (4, 8, 1, 1), {"strides": (2, 2)}),
        ((1, 3, 7, 7), (2, 3, 7, 7), {"padding": (3, 3), "strides": (2, 2)}),
    ],
)
def test_conv2d(xs, ws, attrs):
    compare("nn.conv2d", [rand(*xs), rand(*ws)], **attrs)


def test_conv2d_other_layouts_fall_back():
    x, w = rand(1, 6, 6, 3), rand(3, 3, 3, 4)
    compare("nn.conv2d", [x, w], data_layout="NHWC", kernel_layout="HWIO", padding=(1, 1))


@pytest.mark.parametrize(
    "attrs",
    [
        {"pool_size": (2, 2), "strides": (2, 2)},
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)},
        {"pool_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
        {"pool_size": (2, 3), "dilation": (2, 1), "padding": (0, 1, 1, 0)},
    ],
)
def test_max_pool2d(attrs):
    compare("nn.max_pool2d", [rand(2, 3, 9, 8)], **attrs)


@pytest.mark.parametrize(
    "op_name, shapes",
    [
        ("add", [(2, 3, 4), (3, 1)]),
        ("subtract", [(4,), (2, 4)]),
        ("multiply", [(2, 1), (1, 5)]),
        ("divide", [(3, 3), (3, 3)]),
        ("maximum", [(5,), ()]),
        ("less", [(3, 2), (2,)]),
        ("power", [(4,), (4,)]),
    ],
)
def test_binary(op_name, shapes):
    ins = [rand(*s) for s in shapes]
    if op_name == "power":
        ins[0] = np.abs(ins[0])
    compare(op_name, ins)


@pytest.mark.parametrize(
    "op_name",
    ["exp", "log", "sqrt", "tanh", "negative", "abs", "nn.relu", "rsqrt", "floor", "sign"],
)
def test_unary(op_name):
    x = rand(3, 5)
    if op_name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    compare(op_name, [x])


def test_integer_and_bool_variants():
    compare("add", [np.arange(6, dtype="int32"), np.full(6, 3, "int32")])
    compare("divide", [np.arange(-6, 6, dtype="int32"), np.full(12, 4, "int32")])  # trunc div
    compare("logical_and", [np.array([True, False, True]), np.array([True, True, False])])
    compare("nn.relu", [np.arange(-3, 3, dtype="int64")])


def test_linear_algebra_and_normalisation():
    compare("nn.dense", [rand(3, 7), rand(5, 7)])
    compare("nn.dense", [rand(2, 3, 7), rand(5, 7)])
    compare("nn.batch_matmul", [rand(2, 3, 4), rand(2, 5, 4)], transpose_b=True)
    compare("nn.batch_matmul", [rand(2, 4, 3), rand(2, 4, 5)], transpose_a=True)
    compare("nn.bias_add", [rand(2, 3, 4, 4), rand(3)])
    compare("nn.bias_add", [rand(2, 3, 4), rand(4)], axis=-1)
    compare("nn.softmax", [rand(3, 7)], axis=-1)
    compare("nn.softmax", [rand(3, 7, 2)], axis=1)
    compare("nn.global_avg_pool2d", [rand(2, 3, 5, 4)])


def test_data_movement():
    compare("concatenate", [(rand(2, 3), rand(4, 3))], axis=0)
    compare("transpose", [rand(2, 3, 4)], axes=(2, 0, 1))
    compare("transpose", [rand(2, 3, 4)])
    compare("cast", [rand(5) * 10], dtype="int32")
    compare("clip", [rand(6)], a_min=-0.5, a_max=0.5)
    compare("copy", [rand(3)])


def test_fallback_kernels_and_multiple_outputs():
    compare("sigmoid", [rand(4, 4)])  # no dedicated kernel: reference kernel + copy
    compare("split", [rand(6, 2)], indices_or_sections=3)
    compare("nn.avg_pool2d", [rand(1, 2, 6, 6)], pool_size=(3, 3), padding=(1, 1))


@pytest.mark.parametrize("op_name", ["add", "nn.relu", "exp", "sigmoid", "nn.bias_add"])
def test_in_place_is_safe(op_name):
    x = rand(2, 3, 4, 4)
    ins = [x, rand(3)] if op_name == "nn.bias_add" else [x, rand(4, 4)] if op_name == "add" else [x]
    a = make_attrs(get_op(op_name), {})
    ref = get_op(op_name).get_attr("FCompute")([i.copy() for i in ins], a)
    bind_kernel(op_name, a, ins, [x], Scratch(None))()  # output is input 0
    np.testing.assert_allclose(x, ref, rtol=1e-6)


def test_dedicated_kernels_exist_for_the_hot_operators():
    names = set(host_kernel_names())
    assert {"nn.conv2d", "nn.dense", "add", "multiply", "nn.relu", "nn.max_pool2d"} <= names
