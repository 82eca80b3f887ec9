"""The layer wrappers: parameter names, deduced shapes, attributes, errors."""

from __future__ import annotations

import pytest

from relaykit.errors import IRError
from relaykit.ir import Call, TensorType, TupleGetItem, TupleType, Var
from relaykit.op import nn
from relaykit.testing import layers


def _x(shape: tuple[int, ...], dtype: str = "float32") -> Var:
    return Var("data", TensorType(shape, dtype))


def _ann(v: object) -> str:
    assert isinstance(v, Var)
    return f"{v.name_hint}: {v.type_annotation}"


def test_conv2d_creates_oihw_weight_from_input_channels() -> None:
    y = layers.conv2d(_x((2, 5, 9, 9)), channels=7, kernel_size=(3, 1), name="c")
    assert isinstance(y, Call) and y.op.name == "nn.conv2d"
    assert _ann(y.args[1]) == "c_weight: Tensor[(7, 5, 3, 1), float32]"
    assert y.attrs.channels == 7 and tuple(y.attrs.kernel_size) == (3, 1)


def test_conv2d_weight_follows_kernel_layout_groups_and_dtype() -> None:
    y = layers.conv2d(
        _x((1, 8, 8, 6), "float16"),
        channels=4,
        kernel_size=3,
        data_layout="NHWC",
        kernel_layout="HWIO",
        groups=2,
        name="c",
    )
    assert _ann(y.args[1]) == "c_weight: Tensor[(3, 3, 3, 4), float16]"
    dw = layers.conv2d(
        _x((1, 8, 8, 6)),
        channels=6,
        kernel_size=(3, 3),
        groups=6,
        data_layout="NHWC",
        kernel_layout="HWOI",
        name="dw",
    )
    assert _ann(dw.args[1]) == "dw_weight: Tensor[(3, 3, 6, 1), float32]"


def test_conv2d_keeps_a_given_weight() -> None:
    w = Var("w", TensorType((4, 3, 1, 1)))
    y = layers.conv2d(_x((1, 3, 4, 4)), weight=w, channels=4, kernel_size=(1, 1), name="unused")
    assert y.args[1] is w


def test_batch_norm_infer_parameters_follow_axis() -> None:
    out = layers.batch_norm_infer(_x((1, 4, 4, 6)), axis=3, epsilon=2e-5, name="bn")
    assert isinstance(out, TupleGetItem) and out.index == 0
    call = out.tuple_value
    assert call.op.name == "nn.batch_norm"
    assert [_ann(a) for a in call.args[1:]] == [
        "bn_gamma: Tensor[(6), float32]",
        "bn_beta: Tensor[(6), float32]",
        "bn_moving_mean: Tensor[(6), float32]",
        "bn_moving_var: Tensor[(6), float32]",
    ]
    assert call.attrs.axis == 3 and call.attrs.epsilon == pytest.approx(2e-5)


def test_dense_add_bias_names_shapes_and_axis() -> None:
    out = layers.dense_add_bias(_x((3, 20)), units=5, name="fc")
    assert out.op.name == "nn.bias_add" and out.attrs.axis == -1
    dense = out.args[0]
    assert dense.op.name == "nn.dense" and dense.attrs.units == 5
    assert _ann(dense.args[1]) == "fc_weight: Tensor[(5, 20), float32]"
    assert _ann(out.args[1]) == "fc_bias: Tensor[(5), float32]"


def test_shapes_are_deduced_through_a_chain_of_operators() -> None:
    x = layers.conv2d(
        _x((1, 3, 16, 16)),
        channels=8,
        kernel_size=(3, 3),
        strides=(2, 2),
        padding=(1, 1),
        name="c0",
    )
    x = nn.max_pool2d(nn.relu(x), pool_size=(2, 2), strides=(2, 2))
    x = layers.dense_add_bias(nn.batch_flatten(x), units=3, name="fc")
    assert _ann(x.args[0].args[1]) == "fc_weight: Tensor[(3, 128), float32]"  # 8 * 4 * 4
    assert layers.static_type(nn.dropout_raw(x)) == TupleType(
        [TensorType((1, 3)), TensorType((1, 3))]
    )


def test_shape_deduction_on_deep_chains() -> None:
    """A 4000-layer chain builds without recursion (its timing is for benchmarks)."""
    x = _x((1, 4))
    for i in range(4000):
        x = nn.relu(layers.dense_add_bias(x, units=4, name=f"fc{i}"))
    assert layers.static_type(x).shape == (1, 4)


def test_errors_say_what_is_missing() -> None:
    with pytest.raises(IRError, match="needs name="):
        layers.conv2d(_x((1, 3, 4, 4)), channels=4, kernel_size=(1, 1))
    with pytest.raises(IRError, match="needs channels=... and kernel_size="):
        layers.conv2d(_x((1, 3, 4, 4)), name="c")
    with pytest.raises(IRError, match="needs units="):
        layers.dense_add_bias(_x((1, 3)), name="fc")
    with pytest.raises(IRError, match="cannot be split into 2 groups"):
        layers.conv2d(_x((1, 3, 4, 4)), channels=4, kernel_size=1, groups=2, name="c")
    with pytest.raises(IRError, match="%data has no type annotation"):
        layers.batch_norm_infer(Var("data"), name="bn")
    with pytest.raises(IRError, match="axis 4 is out of range"):
        layers.batch_norm_infer(_x((1, 2, 3, 3)), axis=4, name="bn")
    with pytest.raises(IRError, match="unknown data layout 'NCDHW'"):
        layers.conv_kernel_layout("NCDHW")


def test_conv_kernel_layout_table() -> None:
    assert layers.conv_kernel_layout("NCHW") == "OIHW"
    assert layers.conv_kernel_layout("NHWC") == "HWIO"
    assert layers.conv_kernel_layout("NCHW", is_depthwise=True) == "OIHW"
    assert layers.conv_kernel_layout("NHWC", is_depthwise=True) == "HWOI"
