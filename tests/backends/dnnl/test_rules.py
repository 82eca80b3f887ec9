"""The dnnl rules decline what oneDNN cannot run, with a reason explain() shows."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import check_call, partition_for_dnnl
from relaykit.byoc import explain
from relaykit.transform import InferType

W = relay.const(np.ones((4, 8, 3, 3), "float32"))


def _call(expr_fn, *shapes, dtype="float32"):
    xs = [relay.var(f"x{i}", shape=s, dtype=dtype) for i, s in enumerate(shapes)]
    mod = InferType()(tvm.IRModule.from_expr(relay.Function(xs, expr_fn(*xs))))
    return mod, mod["main"].body


DECLINED = [
    ("float16", lambda x: relay.nn.relu(x), [(1, 8)], "float16", "float32 only"),
    (
        "nhwc_ohwi",
        lambda x: relay.nn.conv2d(
            x,
            relay.const(np.ones((4, 3, 3, 8), "float32")),
            data_layout="NHWC",
            kernel_layout="OHWI",
        ),
        [(1, 6, 6, 8)],
        "float32",
        "layout NHWC/OHWI",
    ),
    (
        "var_weight",
        lambda x, w: relay.nn.conv2d(x, w),
        [(1, 8, 6, 6), (4, 8, 3, 3)],
        "float32",
        "not a constant",
    ),
    (
        "adaptive",
        lambda x: relay.nn.adaptive_avg_pool2d(x, (4, 4)),
        [(1, 8, 6, 6)],
        "float32",
        "must divide",
    ),
    (
        "broadcast_lhs",
        lambda x, y: relay.subtract(y, x),
        [(1, 8, 6, 6), (8, 1, 1)],
        "float32",
        "broadcasts the second operand only",
    ),
    (
        "avg_ceil_count_pad",
        lambda x: relay.nn.avg_pool2d(
            x, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=True
        ),
        [(1, 8, 8, 8)],
        "float32",
        "ceil_mode",
    ),
    ("lrn_even", lambda x: relay.nn.lrn(x, size=4), [(1, 8, 6, 6)], "float32", "even size"),
    ("lrn_axis", lambda x: relay.nn.lrn(x, axis=3), [(1, 8, 6, 6)], "float32", "channels"),
    ("rank7", lambda x: relay.nn.relu(x), [(1,) * 7], "float32", "ranks 1 to 6"),
    (
        "pad",
        lambda x: relay.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))),
        [(1, 8, 6, 6)],
        "float32",
        "no oneDNN primitive",
    ),
    ("int_add", lambda x, y: x + y, [(2, 3), (2, 3)], "int32", "float32 only"),
]


@pytest.mark.parametrize(
    "build,shapes,dtype,reason", [c[1:] for c in DECLINED], ids=[c[0] for c in DECLINED]
)
def test_rule_declines_with_reason(dnnl, build, shapes, dtype, reason):
    _, call = _call(build, *shapes, dtype=dtype)
    verdict = check_call(call)
    assert not verdict
    assert reason in verdict.reason


def test_explain_shows_the_reason(dnnl):
    x = relay.var("x", shape=(1, 8, 6, 6))
    w = relay.var("w", shape=(4, 8, 3, 3))
    body = relay.nn.adaptive_avg_pool2d(relay.nn.relu(relay.nn.conv2d(x, w)), (3, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], body))
    report = explain(mod, "dnnl")
    by_op = {r.op: r for r in report.ops}
    assert by_op["nn.relu"].placement != "host"
    assert by_op["nn.conv2d"].placement == "host"
    assert "not a constant" in by_op["nn.conv2d"].reasons["dnnl"]
    assert "must divide" in by_op["nn.adaptive_avg_pool2d"].reasons["dnnl"]


def test_accepted_calls(dnnl):
    _, call = _call(lambda x: relay.nn.conv2d(x, W, padding=(1, 1)), (1, 8, 6, 6))
    assert check_call(call) is True
    _, call = _call(lambda x: x * relay.const(2.0), (1, 8))
    assert check_call(call) is True


def test_declined_ops_stay_on_host_and_the_rest_runs(dnnl):
    """A model with an unsupported op in the middle: two regions around it."""

    def body(x):
        y = relay.nn.relu(relay.nn.conv2d(x, W, padding=(1, 1)))
        y = relay.nn.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)))
        return relay.nn.softmax(relay.nn.batch_flatten(relay.nn.max_pool2d(y, (2, 2), (2, 2))))

    mod = dnnl.module_of(body, (1, 8, 6, 6))
    pmod = dnnl.check(mod, None, dnnl.random_inputs(mod), expect_host=("nn.pad",))
    assert len(dnnl.dnnl_functions(pmod)) == 2


def test_params_are_bound_so_weights_are_constants(dnnl):
    x = relay.var("x", shape=(1, 8, 6, 6))
    w = relay.var("w", shape=(4, 8, 3, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
    assert dnnl.host_ops(partition_for_dnnl(mod)) == ["nn.conv2d"]
    params = {"w": np.random.default_rng(0).standard_normal((4, 8, 3, 3)).astype("float32")}
    assert dnnl.host_ops(partition_for_dnnl(mod, params)) == []


def test_user_rule_overrides_are_kept(dnnl):
    """A rule the user registers at a higher level wins; ours stays otherwise."""
    from relaykit.byoc import decline, scoped_registries

    mod = dnnl.module_of(lambda x: relay.nn.relu(relay.tanh(x)), (1, 8))
    with scoped_registries():
        tvm.ir.register_op_attr("tanh", "target.dnnl", lambda c: decline("user says no"), level=20)
        pmod = partition_for_dnnl(mod)
        assert dnnl.host_ops(pmod) == ["tanh"]
    assert dnnl.host_ops(partition_for_dnnl(mod)) == []
