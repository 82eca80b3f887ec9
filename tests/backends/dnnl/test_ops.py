"""Every operator the dnnl rules accept runs on oneDNN and matches the interpreter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import partition_for

RNG = np.random.default_rng(42)


def _w(*shape: int, scale: float = 0.2) -> Any:
    return relay.const((RNG.standard_normal(shape) * scale).astype("float32"))


def _pos(*shape: int) -> Any:
    return relay.const(RNG.uniform(0.5, 1.5, shape).astype("float32"))


N4 = (1, 8, 10, 10)

# (id, expression builder, input shapes)
CASES: list[tuple[str, Callable[..., Any], tuple[tuple[int, ...], ...]]] = [
    ("conv3x3", lambda x: relay.nn.conv2d(x, _w(16, 8, 3, 3), padding=(1, 1)), (N4,)),
    ("conv_stride2", lambda x: relay.nn.conv2d(x, _w(16, 8, 3, 3), strides=(2, 2)), (N4,)),
    ("conv_asym_pad", lambda x: relay.nn.conv2d(x, _w(4, 8, 3, 2), padding=(0, 1, 2, 1)), (N4,)),
    ("conv_dilated", lambda x: relay.nn.conv2d(x, _w(8, 8, 3, 3), dilation=(2, 2)), (N4,)),
    ("conv_groups", lambda x: relay.nn.conv2d(x, _w(12, 4, 3, 3), groups=2, padding=1), (N4,)),
    ("conv_depthwise", lambda x: relay.nn.conv2d(x, _w(8, 1, 3, 3), groups=8, padding=1), (N4,)),
    ("conv1x1_rect", lambda x: relay.nn.conv2d(x, _w(5, 3, 1, 1)), ((1, 3, 7, 5),)),
    ("dense", lambda x: relay.nn.dense(x, _w(8, 16)), ((2, 16),)),
    (
        "dense_bias_relu",
        lambda x: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, _w(8, 16)), _w(8))),
        ((3, 16),),
    ),
    ("bias_add", lambda x: relay.nn.bias_add(x, _w(8)), (N4,)),
    ("bias_add_axis", lambda x: relay.nn.bias_add(x, _w(10), axis=3), (N4,)),
    ("relu", relay.nn.relu, (N4,)),
    ("leaky_relu", lambda x: relay.nn.leaky_relu(x, alpha=0.1), (N4,)),
    ("clip", lambda x: relay.clip(x, -0.5, 0.7), (N4,)),
    ("sigmoid", relay.sigmoid, (N4,)),
    ("tanh", relay.tanh, (N4,)),
    ("exp", relay.exp, ((4, 6),)),
    ("log_sqrt_abs", lambda x: relay.log(relay.sqrt(relay.abs(x) + relay.const(1.0))), (N4,)),
    ("negative", relay.negative, (N4,)),
    ("add", relay.add, (N4, N4)),
    ("add_broadcast", lambda x: relay.add(x, _w(1, 8, 1, 1)), (N4,)),
    ("add_broadcast_lhs", lambda x: relay.add(_w(8, 1, 1), x), (N4,)),
    ("add_rank3_var", relay.add, (N4, (8, 1, 1))),
    ("multiply", relay.multiply, (N4, N4)),
    ("multiply_scalar", lambda x: x * relay.const(0.5), (N4,)),
    # A zero scalar (QDQ models carry ``x + 0.0``): only a division by it is special.
    ("add_zero_relu", lambda x: relay.nn.relu(relay.add(x, relay.const(0.0))), (N4,)),
    ("subtract_zero", lambda x: x - relay.const(0.0), (N4,)),
    ("multiply_zero", lambda x: x * relay.const(0.0), (N4,)),
    ("subtract", relay.subtract, (N4, N4)),
    ("subtract_const", lambda x: x - _w(1, 1, 10, 1), (N4,)),
    ("const_minus_x", lambda x: relay.const(2.0) - x, (N4,)),
    ("divide", lambda x: x / _pos(1, 8, 1, 1), (N4,)),
    ("maximum", relay.maximum, (N4, N4)),
    ("minimum", lambda x: relay.minimum(x, _w(10)), (N4,)),
    ("max_pool", lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)), (N4,)),
    (
        "max_pool_ceil",
        lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), ceil_mode=True),
        ((1, 8, 9, 9),),
    ),
    ("avg_pool", lambda x: relay.nn.avg_pool2d(x, (2, 2), (2, 2)), (N4,)),
    (
        "avg_pool_count_pad",
        lambda x: relay.nn.avg_pool2d(x, (3, 3), (1, 1), padding=(1, 1), count_include_pad=True),
        (N4,),
    ),
    (
        "avg_pool_exclude_pad",
        lambda x: relay.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1)),
        (N4,),
    ),
    (
        "avg_pool_ceil",
        lambda x: relay.nn.avg_pool2d(x, (3, 3), (2, 2), ceil_mode=True),
        ((1, 8, 10, 10),),
    ),
    (
        "avg_pool_ceil_count_nopad",
        lambda x: relay.nn.avg_pool2d(x, (3, 3), (2, 2), ceil_mode=True, count_include_pad=True),
        ((1, 8, 10, 10),),
    ),
    ("global_avg_pool", relay.nn.global_avg_pool2d, (N4,)),
    ("global_max_pool", relay.nn.global_max_pool2d, (N4,)),
    ("adaptive_avg_pool", lambda x: relay.nn.adaptive_avg_pool2d(x, (5, 2)), (N4,)),
    ("adaptive_max_pool", lambda x: relay.nn.adaptive_max_pool2d(x, (2, 5)), (N4,)),
    ("softmax", relay.nn.softmax, ((2, 10),)),
    ("softmax_axis1", lambda x: relay.nn.softmax(x, axis=1), (N4,)),
    ("log_softmax", relay.nn.log_softmax, ((3, 7),)),
    ("concat_channels", lambda x, y: relay.concatenate([x, y], axis=1), (N4, (1, 4, 10, 10))),
    ("concat_width", lambda x, y: relay.concatenate([x, y, x], axis=3), (N4, (1, 8, 10, 3))),
    ("lrn", lambda x: relay.nn.lrn(x, size=5, alpha=1e-2, beta=0.75, bias=1.0), (N4,)),
    ("reshape", lambda x: relay.nn.relu(relay.reshape(x, (1, 80, 10))), (N4,)),
    ("batch_flatten", lambda x: relay.nn.relu(relay.nn.batch_flatten(x)), (N4,)),
    ("squeeze", lambda x: relay.squeeze(relay.nn.global_avg_pool2d(x), axis=[2, 3]), (N4,)),
    ("expand_dims", lambda x: relay.nn.relu(relay.expand_dims(x, 1)), ((4, 6),)),
    ("transpose", lambda x: relay.transpose(relay.nn.relu(x), (0, 2, 3, 1)), (N4,)),
    ("copy", lambda x: relay.copy(relay.nn.relu(x)), (N4,)),
    ("identity_output", lambda x, y: relay.Tuple([x, relay.nn.relu(y)]), (N4, N4)),
]


@pytest.mark.parametrize("build_expr,shapes", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_op_matches_interpreter(dnnl, build_expr, shapes):
    mod = dnnl.module_of(build_expr, *shapes)
    inputs = dnnl.random_inputs(mod)
    dnnl.check(mod, None, inputs, rtol=1e-4, atol=1e-5)


def _unfolded(mod: tvm.IRModule) -> tvm.IRModule:
    """Partition without the pre-partition optimisations (batch_norm, dropout stay)."""
    from relaykit.transform import InferType

    return partition_for(InferType()(mod), "dnnl", optimize=False)


@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False)])
def test_batch_norm_not_folded(dnnl, center, scale):
    def body(x):
        y = relay.nn.conv2d(x, _w(8, 8, 3, 3), padding=(1, 1))
        bn = relay.nn.batch_norm(y, _pos(8), _w(8), _w(8), _pos(8), center=center, scale=scale)
        z = relay.nn.batch_norm(relay.nn.relu(bn[0]), _pos(8), _w(8), _w(8), _pos(8))[0]
        return relay.nn.dropout(z, 0.3)

    mod = dnnl.module_of(body, N4)
    pmod = _unfolded(mod)
    assert dnnl.host_ops(pmod) == []
    fn = dnnl.dnnl_functions(pmod)[0]
    assert "nn.batch_norm" in fn.astext() and "nn.dropout" in fn.astext()
    inputs = dnnl.random_inputs(mod)
    got = dnnl.run_lib(dnnl.build(pmod), inputs)
    want = dnnl.reference(mod, None, inputs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)


def test_batch_norm_statistics_as_outputs(dnnl):
    """Every output of batch_norm can leave the region."""
    mean, var = _w(8), _pos(8)
    mod = dnnl.module_of(
        lambda x: relay.Tuple(list(relay.nn.batch_norm(x, _pos(8), _w(8), mean, var))), N4
    )
    pmod = _unfolded(mod)
    inputs = dnnl.random_inputs(mod)
    got = dnnl.run_lib(dnnl.build(pmod), inputs)
    want = dnnl.reference(mod, None, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_multiple_outputs_and_shared_tensors(dnnl):
    """A region returning an intermediate tensor that it also keeps using."""

    def body(x):
        a = relay.nn.relu(relay.nn.conv2d(x, _w(8, 8, 1, 1)))
        b = relay.nn.conv2d(a, _w(8, 8, 3, 3), padding=(1, 1)) + a
        return relay.Tuple([a, relay.nn.relu(b), a])

    mod = dnnl.module_of(body, N4)
    dnnl.check(mod, None, dnnl.random_inputs(mod))


def test_erf_matches_float64_over_its_whole_range(dnnl):
    """The region's vectorized erf (a quantized encoder's GELU) against math.erf in
    float64: small and large arguments, the switch at 0.5, saturation, infinities, NaN."""
    import math

    x = relay.var("x", shape=(4096,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.erf(x)))
    mod = partition_for(mod, "dnnl")
    assert len(dnnl.dnnl_functions(mod)) == 1
    special = [0.0, -0.0, 1e-30, -1e-8, 1e-3, 0.4999, 0.5, 0.50001, -0.7, 3.99, 4.0, 4.01,
               10.0, -10.0, np.inf, -np.inf, np.nan]  # fmt: skip
    v = np.concatenate([special, np.linspace(-6, 6, 4096 - len(special))]).astype("float32")
    (got,) = dnnl.run_lib(dnnl.build(mod), {"x": v})
    want = np.array([math.erf(float(a)) for a in v])
    assert np.isnan(got[len(special) - 1])
    ok = ~np.isnan(want)
    err = np.abs(got[ok] - want[ok])
    assert np.all(err <= 1e-6 * np.abs(want[ok]) + 1e-37)
    assert got[special.index(np.inf)] == 1.0 and got[special.index(-np.inf)] == -1.0
