"""Structure of the built-in workloads: TVM's parameter names, shapes, operators, attributes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from relaykit.errors import IRError
from relaykit.ir import Call, Function, IRModule, TensorType, TupleGetItem, post_order
from relaykit.testing import count_ops, mlp, mobilenet, resnet, vgg
from relaykit.transform.infer_type import InferType


def _typed(net: Function) -> Function:
    return InferType()(IRModule.from_expr(net))["main"]


def _params(fn: Function) -> dict[str, tuple[int, ...]]:
    return {p.name_hint: p.type_annotation.shape for p in fn.params}


def _calls(fn: Function, name: str) -> list[Call]:
    return [n for n in post_order(fn) if isinstance(n, Call) and getattr(n.op, "name", "") == name]


def _op_sequence(fn: Function) -> list[str]:
    return [n.op.name for n in post_order(fn) if isinstance(n, Call)]


# -- MLP ----------------------------------------------------------------------------


def test_mlp_matches_tvm() -> None:
    mod, params = mlp.get_workload(batch_size=1)
    main = mod["main"]
    assert list(_params(main).items()) == [
        ("data", (1, 1, 28, 28)),
        ("fc1_weight", (128, 784)),
        ("fc1_bias", (128,)),
        ("fc2_weight", (64, 128)),
        ("fc2_bias", (64,)),
        ("fc3_weight", (10, 64)),
        ("fc3_bias", (10,)),
    ]
    assert _op_sequence(main) == [
        "nn.batch_flatten",
        "nn.dense",
        "nn.bias_add",
        "nn.relu",
        "nn.dense",
        "nn.bias_add",
        "nn.relu",
        "nn.dense",
        "nn.bias_add",
        "nn.softmax",
    ]
    assert [c.attrs.units for c in _calls(main, "nn.dense")] == [128, 64, 10]
    assert {c.attrs.axis for c in _calls(main, "nn.bias_add")} == {-1}
    assert main.checked_type.ret_type == TensorType((1, 10))
    assert sorted(params) == sorted(set(_params(main)) - {"data"})


def test_mlp_options() -> None:
    mod, params = mlp.get_workload(batch_size=4, num_classes=3, image_shape=(2, 5, 5))
    assert mod["main"].checked_type.ret_type == TensorType((4, 3))
    assert params["fc1_weight"].shape == (128, 50)


# -- VGG ----------------------------------------------------------------------------


def test_vgg11_parameters_are_tvms() -> None:
    main = _typed(vgg.get_net(1, (3, 224, 224), 1000, "float32", num_layers=11))
    convs = [
        ("conv1_1", 64, 3),
        ("conv2_1", 128, 64),
        ("conv3_1", 256, 128),
        ("conv3_2", 256, 256),
        ("conv4_1", 512, 256),
        ("conv4_2", 512, 512),
        ("conv5_1", 512, 512),
        ("conv5_2", 512, 512),
    ]
    expected = [("data", (1, 3, 224, 224))]
    for name, out_c, in_c in convs:
        expected += [(name + "_weight", (out_c, in_c, 3, 3)), (name + "_bias", (out_c,))]
    expected += [
        ("fc6_weight", (4096, 25088)),
        ("fc6_bias", (4096,)),
        ("fc7_weight", (4096, 4096)),
        ("fc7_bias", (4096,)),
        ("fc8_weight", (1000, 4096)),
        ("fc8_bias", (1000,)),
    ]
    assert list(_params(main).items()) == expected
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_vgg11_operators_and_attributes() -> None:
    main = vgg.get_net(1, (3, 224, 224), 1000, "float32")
    assert count_ops(main) == Counter(
        {
            "nn.conv2d": 8,
            "nn.bias_add": 11,
            "nn.relu": 10,
            "nn.max_pool2d": 5,
            "nn.batch_flatten": 1,
            "nn.dense": 3,
            "nn.dropout": 2,
            "nn.softmax": 1,
        }
    )
    for conv in _calls(main, "nn.conv2d"):
        assert tuple(conv.attrs.padding) == (1, 1, 1, 1)
        assert tuple(conv.attrs.kernel_size) == (3, 3)
        assert tuple(conv.attrs.strides) == (1, 1)
        assert conv.attrs.channels == conv.args[1].type_annotation.shape[0]
    for pool in _calls(main, "nn.max_pool2d"):
        assert tuple(pool.attrs.pool_size) == (2, 2) and tuple(pool.attrs.strides) == (2, 2)
    assert [c.attrs.rate for c in _calls(main, "nn.dropout")] == [0.5, 0.5]
    assert [c.attrs.units for c in _calls(main, "nn.dense")] == [4096, 4096, 1000]
    # conv biases on axis 1, dense biases on axis -1, as in TVM
    assert [c.attrs.axis for c in _calls(main, "nn.bias_add")] == [1] * 8 + [-1] * 3
    # dropout is used through its first field, as relay.nn.dropout does
    drops = [n for n in post_order(main) if isinstance(n, TupleGetItem)]
    assert [(d.index, d.tuple_value.op.name) for d in drops] == [(0, "nn.dropout")] * 2


def _is_conv_bias_relu(node: object) -> bool:
    return (
        isinstance(node, Call)
        and node.op.name == "nn.relu"
        and isinstance(node.args[0], Call)
        and node.args[0].op.name == "nn.bias_add"
        and isinstance(node.args[0].args[0], Call)
        and node.args[0].args[0].op.name == "nn.conv2d"
    )


def test_vgg11_has_the_byoc_demo_structure() -> None:
    """The BYOC demo finds 8 conv+bias+relu blocks in 5 groups between max pools, and
    3 dense layers: 5 + 3 = 8 partitions."""
    main = vgg.get_net(1, (3, 224, 224), 1000, "float32")
    blocks = [n for n in post_order(main) if _is_conv_bias_relu(n)]
    assert len(blocks) == 8
    groups, run = [], 0
    for op in _op_sequence(main):
        if op == "nn.conv2d":
            run += 1
        elif op == "nn.max_pool2d":
            groups.append(run)
            run = 0
    assert groups == [1, 1, 2, 2, 2]


def test_vgg11_blocks_match_the_seed_pattern() -> None:
    dfp = pytest.importorskip("relaykit.dataflow_pattern")
    conv = dfp.is_op("nn.conv2d")(dfp.wildcard(), dfp.wildcard())
    pattern = dfp.is_op("nn.relu")(dfp.is_op("nn.bias_add")(conv, dfp.wildcard()))
    main = vgg.get_net(1, (3, 224, 224), 1000, "float32")
    assert sum(1 for n in post_order(main) if pattern.match(n)) == 8


@pytest.mark.parametrize("num_layers", [11, 13, 16, 19])
def test_vgg_depths(num_layers: int) -> None:
    main = _typed(vgg.get_net(1, (3, 224, 224), 1000, "float32", num_layers=num_layers))
    ops = count_ops(main)
    assert ops["nn.conv2d"] + ops["nn.dense"] == num_layers
    assert ops["nn.max_pool2d"] == 5
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_vgg_batch_norm_variant() -> None:
    main = _typed(vgg.get_net(2, (3, 32, 32), 10, "float32", num_layers=13, batch_norm=True))
    params = _params(main)
    assert params["bn1_2_gamma"] == (64,) and params["bn5_2_moving_var"] == (512,)
    assert params["fc6_weight"] == (4096, 512)
    ops = count_ops(main)
    assert ops["nn.batch_norm"] == ops["nn.conv2d"] == 10
    seq = [op for op in _op_sequence(main) if op != "nn.max_pool2d"]
    assert seq[:4] == ["nn.conv2d", "nn.bias_add", "nn.batch_norm", "nn.relu"]
    assert [c.attrs.epsilon for c in _calls(main, "nn.batch_norm")] == [pytest.approx(1e-5)] * 10


def test_vgg_rejects_unknown_depth() -> None:
    with pytest.raises(IRError, match="invalid num_layers 12"):
        vgg.get_net(1, (3, 224, 224), 1000, "float32", num_layers=12)


# -- ResNet -------------------------------------------------------------------------

# The start of TVM's resnet-18 parameter list, from the Relay tutorial's printout.
RESNET18_HEAD = [
    ("data", (1, 3, 224, 224)),
    ("bn_data_gamma", (3,)),
    ("bn_data_beta", (3,)),
    ("bn_data_moving_mean", (3,)),
    ("bn_data_moving_var", (3,)),
    ("conv0_weight", (64, 3, 7, 7)),
    ("bn0_gamma", (64,)),
    ("bn0_beta", (64,)),
    ("bn0_moving_mean", (64,)),
    ("bn0_moving_var", (64,)),
    ("stage1_unit1_bn1_gamma", (64,)),
    ("stage1_unit1_bn1_beta", (64,)),
    ("stage1_unit1_bn1_moving_mean", (64,)),
    ("stage1_unit1_bn1_moving_var", (64,)),
    ("stage1_unit1_conv1_weight", (64, 64, 3, 3)),
    ("stage1_unit1_bn2_gamma", (64,)),
    ("stage1_unit1_bn2_beta", (64,)),
    ("stage1_unit1_bn2_moving_mean", (64,)),
    ("stage1_unit1_bn2_moving_var", (64,)),
    ("stage1_unit1_conv2_weight", (64, 64, 3, 3)),
    ("stage1_unit1_sc_weight", (64, 64, 1, 1)),
]


def test_resnet18_parameters_are_tvms() -> None:
    mod, params = resnet.get_workload(batch_size=1, num_layers=18)
    main = mod["main"]
    shapes = _params(main)
    assert list(shapes.items())[: len(RESNET18_HEAD)] == RESNET18_HEAD
    assert list(shapes)[len(RESNET18_HEAD)] == "stage1_unit2_bn1_gamma"
    assert sorted(n for n in shapes if "_sc_" in n) == [
        f"stage{i}_unit1_sc_weight" for i in range(1, 5)
    ]
    assert shapes["stage2_unit1_conv1_weight"] == (128, 64, 3, 3)
    assert shapes["stage2_unit1_sc_weight"] == (128, 64, 1, 1)
    assert shapes["stage4_unit2_conv2_weight"] == (512, 512, 3, 3)
    assert list(shapes.items())[-6:] == [
        ("bn1_gamma", (512,)),
        ("bn1_beta", (512,)),
        ("bn1_moving_mean", (512,)),
        ("bn1_moving_var", (512,)),
        ("fc1_weight", (1000, 512)),
        ("fc1_bias", (1000,)),
    ]
    assert len(shapes) == 1 + 4 * 19 + 21 + 2
    assert {k: v.shape for k, v in params.items()} == {
        k: v for k, v in shapes.items() if k != "data"
    }
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_resnet18_operators_and_attributes() -> None:
    main = resnet.get_net(1, 1000, num_layers=18)
    assert count_ops(main) == Counter(
        {
            "nn.batch_norm": 19,
            "nn.conv2d": 21,
            "nn.relu": 18,
            "nn.max_pool2d": 1,
            "add": 8,
            "nn.global_avg_pool2d": 1,
            "nn.batch_flatten": 1,
            "nn.dense": 1,
            "nn.bias_add": 1,
            "nn.softmax": 1,
        }
    )
    bns = _calls(main, "nn.batch_norm")
    assert [bn.attrs.epsilon for bn in bns] == [pytest.approx(2e-5)] * 19
    assert [bn.args[1].name_hint for bn in bns if not bn.attrs.scale] == ["bn_data_gamma"]
    stem = _calls(main, "nn.conv2d")[0]
    assert stem.args[1].name_hint == "conv0_weight"
    assert tuple(stem.attrs.strides) == (2, 2) and tuple(stem.attrs.padding) == (3, 3, 3, 3)
    (pool,) = _calls(main, "nn.max_pool2d")
    assert tuple(pool.attrs.pool_size) == (3, 3) and tuple(pool.attrs.strides) == (2, 2)
    assert tuple(pool.attrs.padding) == (1, 1, 1, 1)
    convs = {c.args[1].name_hint: c for c in _calls(main, "nn.conv2d")}
    sc2 = convs["stage2_unit1_sc_weight"]
    assert tuple(sc2.attrs.strides) == (2, 2) and tuple(sc2.attrs.padding) == (0, 0, 0, 0)
    # the projection reads the pre-activation (relu of bn1), as in TVM
    assert sc2.args[0].op.name == "nn.relu"
    assert sc2.args[0].args[0].tuple_value.args[1].name_hint == "stage2_unit1_bn1_gamma"


def test_resnet50_bottleneck_units() -> None:
    main = _typed(resnet.get_net(1, 1000, num_layers=50))
    shapes = _params(main)
    assert shapes["stage1_unit1_conv1_weight"] == (64, 64, 1, 1)
    assert shapes["stage1_unit1_conv2_weight"] == (64, 64, 3, 3)
    assert shapes["stage1_unit1_conv3_weight"] == (256, 64, 1, 1)
    assert shapes["stage1_unit1_sc_weight"] == (256, 64, 1, 1)
    assert shapes["stage4_unit3_conv3_weight"] == (2048, 512, 1, 1)
    assert shapes["fc1_weight"] == (1000, 2048)
    ops = count_ops(main)
    assert ops["nn.conv2d"] == 1 + 16 * 3 + 4 and ops["add"] == 16
    assert main.checked_type.ret_type == TensorType((1, 1000))


@pytest.mark.parametrize("num_layers,units", [(34, 16), (101, 33), (152, 50)])
def test_resnet_depths(num_layers: int, units: int) -> None:
    main = _typed(resnet.get_net(1, 1000, num_layers=num_layers))
    ops = count_ops(main)
    assert ops["add"] == units
    per_unit = 3 if num_layers >= 50 else 2
    assert ops["nn.conv2d"] == 1 + per_unit * units + 4
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_resnet_small_inputs() -> None:
    cifar = _typed(resnet.get_net(2, 10, num_layers=20, image_shape=(3, 28, 28)))
    shapes = _params(cifar)
    assert shapes["conv0_weight"] == (16, 3, 3, 3)
    assert "bn0_gamma" not in shapes and "stage4_unit1_sc_weight" not in shapes
    assert shapes["stage3_unit3_conv2_weight"] == (64, 64, 3, 3)
    assert shapes["fc1_weight"] == (10, 64)
    assert count_ops(cifar)["nn.max_pool2d"] == 0
    assert cifar.checked_type.ret_type == TensorType((2, 10))
    # 32 pixels: ImageNet layer plan with the 3x3 stem and no max pool
    small = _typed(resnet.get_net(1, 10, num_layers=18, image_shape=(3, 32, 32)))
    assert _params(small)["conv0_weight"] == (64, 3, 3, 3)
    assert count_ops(small)["nn.max_pool2d"] == 0


def test_resnet_nhwc() -> None:
    main = _typed(resnet.get_net(1, 1000, num_layers=18, layout="NHWC", image_shape=(224, 224, 3)))
    shapes = _params(main)
    assert shapes["data"] == (1, 224, 224, 3)
    assert shapes["conv0_weight"] == (7, 7, 3, 64)
    assert shapes["bn0_gamma"] == (64,)
    assert {bn.attrs.axis for bn in _calls(main, "nn.batch_norm")} == {3}
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_resnet_rejects_unknown_depths() -> None:
    with pytest.raises(IRError, match="no resnet with 19 layers; choices are 18, 34"):
        resnet.get_net(1, 1000, num_layers=19)
    with pytest.raises(IRError, match="6n\\+2"):
        resnet.get_net(1, 10, num_layers=21, image_shape=(3, 28, 28))


# -- MobileNet ----------------------------------------------------------------------


def test_mobilenet_parameters_and_operators_are_tvms() -> None:
    mod, params = mobilenet.get_workload(batch_size=1)
    main = mod["main"]
    shapes = _params(main)
    assert list(shapes.items())[:7] == [
        ("data", (1, 3, 224, 224)),
        ("conv_block_1_conv_weight", (32, 3, 3, 3)),
        ("conv_block_1_bn_gamma", (32,)),
        ("conv_block_1_bn_beta", (32,)),
        ("conv_block_1_bn_moving_mean", (32,)),
        ("conv_block_1_bn_moving_var", (32,)),
        ("separable_conv_block_1_weight", (32, 1, 3, 3)),
    ]
    assert shapes["separable_conv_block_1_conv2_weight"] == (64, 32, 1, 1)
    assert shapes["separable_conv_block_12_weight"] == (512, 1, 3, 3)
    assert shapes["separable_conv_block_13_conv2_weight"] == (1024, 1024, 1, 1)
    assert list(shapes.items())[-2:] == [("fc_weight", (1000, 1024)), ("fc_bias", (1000,))]
    assert len(params) == len(shapes) - 1 == 1 + 4 + 13 * 10 + 2
    assert count_ops(main) == Counter(
        {
            "nn.conv2d": 27,
            "nn.batch_norm": 27,
            "nn.relu": 27,
            "nn.global_avg_pool2d": 1,
            "nn.batch_flatten": 1,
            "nn.dense": 1,
            "nn.bias_add": 1,
            "nn.softmax": 1,
        }
    )
    convs = _calls(main, "nn.conv2d")
    depthwise = [c for c in convs if c.attrs.groups > 1]
    assert [c.attrs.groups for c in depthwise] == [c.attrs.channels for c in depthwise]
    assert len(depthwise) == 13
    assert [next(iter(c.attrs.strides)) for c in depthwise] == [
        1,
        2,
        1,
        2,
        1,
        2,
        1,
        1,
        1,
        1,
        1,
        2,
        1,
    ]
    (bias,) = _calls(main, "nn.bias_add")
    assert bias.attrs.axis == 1  # TVM's mobilenet calls bias_add with its default axis
    assert main.checked_type.ret_type == TensorType((1, 1000))


def test_mobilenet_nhwc_normalises_channels() -> None:
    main = _typed(mobilenet.mobile_net(10, (1, 64, 64, 3), layout="NHWC"))
    shapes = _params(main)
    assert shapes["conv_block_1_conv_weight"] == (3, 3, 3, 32)
    assert shapes["separable_conv_block_1_weight"] == (3, 3, 32, 1)
    assert shapes["conv_block_1_bn_gamma"] == (32,)  # TVM would normalise over the height
    assert main.checked_type.ret_type == TensorType((1, 10))


def test_mobilenet_shallow_variant() -> None:
    main = _typed(mobilenet.mobile_net(10, (1, 3, 224, 224), is_shallow=True, alpha=0.5))
    shapes = _params(main)
    assert "separable_conv_block_9_weight" not in shapes
    assert shapes["separable_conv_block_8_conv2_weight"] == (512, 512, 1, 1)
    assert main.checked_type.ret_type == TensorType((1, 10))


# -- all ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: mlp.get_workload(batch_size=2),
        lambda: vgg.get_workload(batch_size=1, num_classes=10, image_shape=(3, 32, 32)),
        lambda: resnet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
        lambda: mobilenet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
    ],
    ids=["mlp", "vgg11", "resnet18", "mobilenet"],
)
def test_workloads_are_deterministic(make) -> None:
    mod_a, a = make()
    mod_b, b = make()
    assert mod_a["main"] is not mod_b["main"]
    assert list(a) == list(b)
    for name in a:
        assert a[name].dtype == "float32"
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy())
    weights = [n for n in a if n.endswith("_weight")]
    assert weights and all(np.abs(a[n].numpy()).max() > 0 for n in weights)
