"""The dnnl pattern table forms TVM's composites, and the codegen fuses them into
oneDNN post-ops (checked on the region program and against the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import compile_region, partition_for_dnnl
from relaykit.backends.dnnl.compile.fuse import optimize
from relaykit.backends.dnnl.compile.lower import lower_function
from relaykit.ir import Call, Function
from relaykit.ir.functor import post_order

RNG = np.random.default_rng(7)
X = (1, 8, 8, 8)


def _w(*shape):
    return relay.const((RNG.standard_normal(shape) * 0.3).astype("float32"))


def _conv(x, co=8, k=3):
    return relay.nn.conv2d(x, _w(co, x_channels(x), k, k), padding=(k // 2, k // 2))


def x_channels(x):
    return 8


def composites(mod):
    names = []
    for _, fn in mod.items():
        for n in post_order(fn.body, skip=lambda n: False):
            if type(n) is Call and type(n.op) is Function and "Composite" in n.op.attrs:
                names.append((n.op.attrs["Composite"], n.op.attrs["PartitionedFromPattern"]))
    return names


def program_of(pmod):
    (fn,) = [f for _, f in pmod.items() if f.attrs.get("Compiler") == "dnnl"]
    return optimize(lower_function(fn))


CASES = [
    (
        "dnnl.conv2d_bias_relu",
        "nn.conv2d_nn.bias_add_nn.relu_",
        lambda x: relay.nn.relu(relay.nn.bias_add(_conv(x), _w(8))),
        {"conv+relu": 1},
    ),
    (
        "dnnl.conv2d_bias_tanh",
        "nn.conv2d_add_tanh_",
        lambda x: relay.tanh(_conv(x) + _w(1, 8, 1, 1)),
        {"conv+tanh": 1},
    ),
    (
        "dnnl.conv2d_sigmoid",
        "nn.conv2d_sigmoid_",
        lambda x: relay.sigmoid(_conv(x)),
        {"conv+sigmoid": 1},
    ),
    (
        "dnnl.conv2d_clip",
        "nn.conv2d_clip_",
        lambda x: relay.clip(_conv(x), 0.0, 6.0),
        {"conv+clip": 1},
    ),
    (
        "dnnl.conv2d_bias",
        "nn.conv2d_nn.bias_add_",
        lambda x: relay.nn.bias_add(_conv(x), _w(8)),
        {"conv": 1},
    ),
    (
        "dnnl.conv2d_bias_sum_relu",
        "nn.conv2d_nn.bias_add_add_nn.relu_",
        lambda x: relay.nn.relu(relay.nn.bias_add(_conv(x), _w(8)) + x),
        {"conv+sum+relu": 1},
    ),
    (
        "dnnl.conv2d_bias_sum",
        "nn.conv2d_add_add_",
        lambda x: (_conv(x) + _w(1, 8, 1, 1)) + relay.nn.relu(x),
        {"conv+sum": 1, "eltwise": 1},
    ),
    (
        "dnnl.dense_bias_relu",
        "nn.dense_nn.bias_add_nn.relu_",
        lambda x: relay.nn.relu(
            relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(x), _w(10, 512)), _w(10))
        ),
        {"dense+relu": 1},
    ),
    (
        "dnnl.dense_relu",
        "nn.dense_nn.relu_",
        lambda x: relay.nn.relu(relay.nn.dense(relay.nn.batch_flatten(x), _w(10, 512))),
        {"dense+relu": 1},
    ),
    (
        "dnnl.dense_bias",
        "nn.dense_add_",
        lambda x: relay.nn.dense(relay.nn.batch_flatten(x), _w(10, 512)) + _w(10),
        {"dense": 1},
    ),
    (
        "dnnl.channel_shuffle",
        "reshape_transpose_reshape_",
        lambda x: relay.reshape(
            relay.transpose(relay.reshape(x, (1, 2, 4, 8, 8)), (0, 2, 1, 3, 4)), (1, 8, 8, 8)
        ),
        {"shuffle": 1},
    ),
]


@pytest.mark.parametrize(
    "name,from_pattern,build,program", [c for c in CASES], ids=[c[0] for c in CASES]
)
def test_pattern_forms_composite_and_fuses(dnnl, name, from_pattern, build, program):
    mod = dnnl.module_of(build, X)
    pmod = dnnl.check(mod, None, dnnl.random_inputs(mod))
    assert (name, from_pattern) in composites(pmod)
    assert program_of(pmod).op_counts() == program


def test_pattern_check_keeps_unsupported_matches_out(dnnl):
    """conv2d + relu in NHWC/OHWI matches the pattern's shape but oneDNN rules decline it."""
    w = relay.const(np.ones((4, 3, 3, 8), "float32"))
    mod = dnnl.module_of(
        lambda x: relay.nn.relu(relay.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="OHWI")),
        (1, 6, 6, 8),
    )
    pmod = partition_for_dnnl(mod)
    assert composites(pmod) == []
    assert dnnl.host_ops(pmod) == ["nn.conv2d"]


def test_batch_norm_folds_into_convolution(dnnl):
    """conv -> batch_norm -> relu: one convolution with a ReLU post-op, no binary nodes."""
    from relaykit.testing import layers

    x = relay.var("data", shape=X)
    y = layers.conv2d(x, name="c", channels=8, kernel_size=(3, 3), padding=(1, 1))
    y = relay.nn.relu(layers.batch_norm_infer(y, name="bn"))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    params = {
        p.name_hint: RNG.uniform(0.5, 1.5, tuple(p.type_annotation.shape)).astype("float32")
        for p in mod["main"].params[1:]
    }
    inputs = {"data": RNG.standard_normal(X).astype("float32")}
    pmod = dnnl.check(mod, params, inputs)
    assert program_of(pmod).op_counts() == {"conv+relu": 1}


def test_residual_block_fuses_sum_and_reuses_the_buffer(dnnl):
    """relu(conv(relu(conv(x))) + x) : two convolutions, the second accumulating into x."""

    def block(x):
        y = relay.nn.relu(_conv(relay.nn.relu(_conv(x, k=1))))
        return relay.nn.relu(_conv(y) + relay.nn.relu(_conv(x, k=1)))

    mod = dnnl.module_of(block, X)
    pmod = dnnl.check(mod, None, dnnl.random_inputs(mod))
    counts = program_of(pmod).op_counts()
    assert sum(counts.values()) == 4 and all(k.startswith("conv") for k in counts), counts
    assert sum(n for k, n in counts.items() if "+sum+relu" in k) == 1, counts
    (fn,) = dnnl.dnnl_functions(pmod)
    steps = compile_region(fn).steps()
    assert not any(s.startswith("copy residual") for s in steps), steps


def test_affine_chain_after_concat_is_one_primitive(dnnl):
    """DenseNet's pre-activation: concat -> (x * s + t) * s2 + t2 -> relu."""

    def body(x):
        c = relay.concatenate([_conv(x), x], axis=1)
        y = c * _w(1, 16, 1, 1) + _w(1, 16, 1, 1)
        y = relay.nn.relu(y * _w(1, 16, 1, 1) + _w(16, 1, 1))
        return relay.nn.conv2d(y, _w(8, 16, 1, 1))

    mod = dnnl.module_of(body, X)
    pmod = dnnl.check(mod, None, dnnl.random_inputs(mod))
    counts = program_of(pmod).op_counts()
    assert counts.get("binary+binary_add+relu") == 1, counts
