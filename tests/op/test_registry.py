"""The operator table as a whole: every op complete, constructors exported,
make_call's checks."""

from __future__ import annotations

import inspect

import pytest

from relaykit import op
from relaykit.errors import AttrError, IRError, OpNotFoundError
from relaykit.ir import Var, list_op_names
from relaykit.ir.types import TensorType
from relaykit.op import OpPattern, make_call, nn

REQUIRED = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "negative", "exp",
    "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "abs", "round", "floor", "ceil", "clip",
    "cast", "left_shift", "right_shift", "where", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "nn.conv2d",
    "nn.conv2d_transpose", "nn.dense", "nn.batch_matmul", "nn.bias_add", "nn.relu",
    "nn.leaky_relu", "nn.prelu", "nn.softmax", "nn.log_softmax", "nn.max_pool2d",
    "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.adaptive_avg_pool2d",
    "nn.batch_norm", "nn.layer_norm", "nn.dropout", "nn.batch_flatten", "nn.pad", "reshape",
    "transpose", "squeeze", "expand_dims", "concatenate", "split", "strided_slice", "take", "sum",
    "mean", "max", "min", "prod", "argmax", "argmin", "zeros", "ones", "full", "zeros_like",
    "ones_like", "copy", "annotation.stop_fusion", "annotation.compiler_begin",
    "annotation.compiler_end",
]  # fmt: skip


@pytest.mark.parametrize("name", REQUIRED)
def test_required_op_is_complete_and_has_a_constructor(name):
    o = op.get(name)
    assert callable(o.get_attr("FTypeRelation")) and callable(o.get_attr("FCompute"))
    assert o.get_attr("TOpPattern") in vars(OpPattern).values()
    namespace, _, short = name.rpartition(".")
    module = {"": op, "nn": op.nn, "annotation": op.annotation}[namespace]
    assert callable(getattr(module, short)), f"no constructor relaykit.op.{name}"


def test_every_registered_op_is_complete():
    for name in list_op_names():
        o = op.get(name)
        assert o.get_attr("FTypeRelation") is not None, name
        assert o.get_attr("TOpPattern") is not None, name


def test_patterns_follow_tvm():
    assert op.get("add").get_attr("TOpPattern") == OpPattern.BROADCAST
    assert op.get("exp").get_attr("TOpPattern") == OpPattern.ELEMWISE
    assert op.get("reshape").get_attr("TOpPattern") == OpPattern.INJECTIVE
    assert op.get("sum").get_attr("TOpPattern") == OpPattern.COMM_REDUCE
    assert op.get("nn.conv2d").get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE
    assert op.get("nn.softmax").get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE


def test_all_lists_are_accurate():
    for module in (op, op.nn, op.annotation, op.tensor, op.transform, op.reduce):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_constructor_signatures_match_tvm():
    params = inspect.signature(nn.conv2d).parameters
    assert list(params) == [
        "data",
        "weight",
        "strides",
        "padding",
        "dilation",
        "groups",
        "channels",
        "kernel_size",
        "data_layout",
        "kernel_layout",
        "out_layout",
        "out_dtype",
    ]
    assert inspect.signature(op.add).parameters.keys() == {"lhs", "rhs"}
    assert list(inspect.signature(op.strided_slice).parameters) == [
        "data",
        "begin",
        "end",
        "strides",
        "axes",
        "slice_mode",
    ]
    assert inspect.signature(nn.batch_matmul).parameters["transpose_b"].default is True


def test_make_call_unknown_attribute_suggests():
    x = Var("x", TensorType((1, 3, 4, 4)))
    with pytest.raises(AttrError, match=r"no attribute 'stride' \(did you mean 'strides'\?\)"):
        make_call("nn.conv2d", [x, x], stride=(1, 1))


def test_make_call_arity_and_input_kind():
    x = Var("x", TensorType((2,)))
    with pytest.raises(IRError, match="operator add takes 2 inputs, got 1"):
        make_call("add", [x])
    with pytest.raises(IRError, match="input 1 of add must be a relay expression.*relay.const"):
        op.add(x, 1.0)
    with pytest.raises(IRError, match="nn.relu takes 1 inputs, got 2"):
        make_call("nn.relu", [x, x])


def test_unknown_op_suggests_close_names():
    with pytest.raises(OpNotFoundError, match="did you mean nn.conv2d"):
        op.get("nn.conv2")


def test_defaults_fill_in_schema_order():
    call = nn.dense(Var("x", TensorType((1, 2))), Var("w", TensorType((3, 2))))
    assert dict(call.attrs) == {"units": None, "out_dtype": ""}
    assert call.attrs.type_key == "relay.attrs.DenseAttrs"
    pool = nn.avg_pool2d(Var("x", TensorType((1, 1, 4, 4))), 2)
    assert list(pool.attrs) == [
        "pool_size",
        "strides",
        "dilation",
        "padding",
        "layout",
        "out_layout",
        "ceil_mode",
        "count_include_pad",
    ]


def test_attrs_without_default_name_real_attributes():
    names = 0
    for name in list_op_names():
        fields = op.get(name).get_attr("attrs_without_default") or ()
        names += len(fields)
        for field in fields:
            assert field in op.get(name).attrs_schema, (name, field)
    assert names >= 20
    assert op.get("nn.conv2d").get_attr("attrs_without_default") is None


def test_star_import_does_not_export_submodules_that_clash_with_relay():
    for name in ("transform", "tensor", "reduce"):
        assert name not in op.__all__
        assert inspect.ismodule(getattr(op, name))
    assert "nn" in op.__all__ and "annotation" in op.__all__


def test_support_levels_follow_tvm():
    from relaykit.ir.op import get_op

    assert [get_op(n).support_level for n in ("exp", "add", "floor", "negative", "less")] == [
        1,
        1,
        3,
        3,
        4,
    ]
