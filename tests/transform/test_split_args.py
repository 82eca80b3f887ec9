"""Kernel argument limits (Target.max_function_args): SplitArgs and FuseOps."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError
from relaykit.ir import Call, IRModule, post_order
from relaykit.transform import InferType, SplitArgs


def _concat_widths(expr: relay.Expr) -> list[int]:
    """How many tensors each concatenate of ``expr`` joins."""
    out = []
    for node in post_order(expr):
        if isinstance(node, Call) and getattr(node.op, "name", "") == "concatenate":
            tup = node.args[0]
            if isinstance(tup, Call):  # behind stop_fusion
                tup = tup.args[0]
            out.append(len(tup.fields))
    return out


@pytest.mark.parametrize("count,limit", [(10, 4), (31, 31), (7, 3), (300, 128)])
def test_every_concatenate_fits_and_values_are_unchanged(count: int, limit: int) -> None:
    xs = [relay.var(f"x{i}", shape=(1, 2), dtype="float32") for i in range(count)]
    mod = InferType()(IRModule.from_expr(relay.Function(xs, relay.concatenate(xs, axis=0))))
    out = SplitArgs(limit)(mod)
    widths = _concat_widths(out["main"].body)
    assert max(widths) + 1 <= limit  # inputs plus the output buffer
    assert sum(widths) - (len(widths) - 1) == count  # each partial result fed on once
    data = [np.full((1, 2), i, "float32") for i in range(count)]
    got = relay.create_executor("debug", mod=out).evaluate()(*data).numpy()
    np.testing.assert_array_equal(got, np.concatenate(data, axis=0))


def test_few_arguments_and_zero_limit_leave_the_program() -> None:
    xs = [relay.var(f"x{i}", shape=(2,)) for i in range(3)]
    mod = InferType()(IRModule.from_expr(relay.Function(xs, relay.concatenate(xs, axis=0))))
    assert SplitArgs(10)(mod)["main"].body.op.name == "concatenate"
    assert _concat_widths(SplitArgs(0)(mod)["main"].body) == [3]
    assert _concat_widths(SplitArgs(10)(mod)["main"].body) == [3]


def test_dynamic_dimensions_count_their_sizes_and_strides() -> None:
    # each input with one unknown dimension of a rank-2 tensor takes 1 + 1 + 2 arguments
    xs = [relay.var(f"x{i}", shape=(relay.Any(), 2)) for i in range(6)]
    mod = InferType()(IRModule.from_expr(relay.Function(xs, relay.concatenate(xs, axis=0))))
    widths = _concat_widths(SplitArgs(12)(mod)["main"].body)
    # the output takes 1 + 2 strides, leaving 9: two dynamic inputs (8) per kernel
    assert all(4 * w <= 9 for w in widths) and widths[0] == 2


def test_a_limit_below_the_outputs_is_an_argument_error() -> None:
    xs = [relay.var(f"x{i}", shape=(relay.Any(), 2)) for i in range(3)]
    mod = InferType()(IRModule.from_expr(relay.Function(xs, relay.concatenate(xs, axis=0))))
    with pytest.raises(ArgumentError, match="max_function_args"):
        SplitArgs(2)(mod)


def test_a_limit_that_is_not_an_int_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError, match="SplitArgs takes the number of arguments.*'128'"):
        SplitArgs("128")  # type: ignore[arg-type]
    assert SplitArgs(np.int64(16)).max_function_args == 16


def test_target_max_function_args() -> None:
    assert tvm.target.Target("opencl").max_function_args == 128
    assert tvm.target.Target("metal").max_function_args == 31
    assert tvm.target.Target("cuda").max_function_args == 0
    assert tvm.target.Target("opencl -max_function_args=16").max_function_args == 16


@pytest.mark.parametrize("target,limit", [("opencl", 128), ("metal", 31)])
def test_fuse_ops_keeps_kernels_within_the_target_argument_limit(target: str, limit: int) -> None:
    # sum of exp(x_i + 1) over 60 inputs: one fused kernel would take 60 buffers plus its
    # output, past Metal's 31; each fused function must take at most limit - 1 inputs
    xs = [relay.var(f"x{i}", shape=(2, 3)) for i in range(60)]
    terms = [relay.exp(relay.add(x, relay.const(1.0))) for x in xs]
    total = terms[0]
    for t in terms[1:]:
        total = relay.add(total, t)
    mod = InferType()(IRModule.from_expr(relay.Function(xs, total)))
    with tvm.target.Target(target):
        fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    prims = [
        n.op
        for n in post_order(fused["main"].body)
        if isinstance(n, Call) and isinstance(n.op, relay.Function)
    ]
    assert max(len(p.params) for p in prims) <= limit - 1
    assert (len(prims) == 1) == (limit > 61)  # opencl fits it all in one kernel
    data = [np.full((2, 3), 0.01 * i, "float32") for i in range(60)]
    got = relay.create_executor("debug", mod=fused).evaluate()(*data).numpy()
    np.testing.assert_allclose(got, sum(np.exp(d.astype("float64") + 1) for d in data), rtol=1e-5)
