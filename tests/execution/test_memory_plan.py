"""The static memory plan: reuse by liveness, in place, views, outputs kept; and that
planned execution computes what the interpreter computes on random graphs."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import relaykit as tvm
from relaykit import relay
from relaykit.execution.graph_plan import EntrySpec, PlanNode
from relaykit.execution.lower import lower_to_plan
from relaykit.execution.memory_plan import memory_report, plan_memory
from relaykit.transform import InferType


def op(name, ins, outs, view=False):
    return PlanNode("op", name, tuple(ins), tuple(outs), groups=(-1,) * len(ins), view=view)


def spec(n):
    return EntrySpec((n,), "float32")


def test_a_chain_uses_two_blocks_and_outputs_are_never_reused():
    # x -> a -> b -> c -> d (out): out-of-place ops ping-pong between two blocks.
    entries = [spec(100)] * 5
    nodes = [PlanNode("input", "x", outputs=(0,))] + [
        op("nn.softmax", [i], [i + 1]) for i in range(4)
    ]
    planned, storage = plan_memory(entries, nodes, heads=[4])
    pool = [s for s in storage if s.kind == "pool"]
    assert len(pool) == 2 and all(s.nbytes == 400 for s in pool)
    assert planned[1].storage == planned[3].storage != planned[2].storage
    assert planned[4].storage not in (planned[3].storage,)


def test_elementwise_ops_write_in_place_into_dying_inputs():
    entries = [spec(10)] * 4
    nodes = [
        PlanNode("input", "x", outputs=(0,)),
        op("exp", [0], [1]),
        op("nn.relu", [1], [2]),
        op("negative", [2], [3]),
    ]
    planned, _storage = plan_memory(entries, nodes, heads=[3], inplace_ops={"nn.relu", "negative"})
    assert planned[1].storage == planned[2].storage == planned[3].storage
    # never into a graph input
    planned, _ = plan_memory(entries[:2], nodes[:2], heads=[1], inplace_ops={"exp"})
    assert planned[1].storage != planned[0].storage


def test_no_in_place_while_the_input_is_still_needed():
    entries = [spec(10)] * 4
    nodes = [
        PlanNode("input", "x", outputs=(0,)),
        op("exp", [0], [1]),
        op("nn.relu", [1], [2]),
        op("add", [1, 2], [3]),
    ]
    nodes[3] = PlanNode("op", "add", (1, 2), (3,), groups=(-1, -1))
    planned, _ = plan_memory(entries, nodes, heads=[3], inplace_ops={"nn.relu"})
    assert planned[2].storage != planned[1].storage


def test_views_share_storage_and_extend_liveness():
    entries = [spec(8), spec(8), EntrySpec((2, 4), "float32"), spec(8), spec(8)]
    nodes = [
        PlanNode("input", "x", outputs=(0,)),
        op("exp", [0], [1]),
        op("reshape", [1], [2], view=True),
        op("exp", [0], [3]),  # must not take the block of 1: its view 2 is read below
        PlanNode("op", "add", (2, 3), (4,), groups=(-1, -1)),
    ]
    planned, _ = plan_memory(entries, nodes, heads=[4])
    assert planned[2].storage == planned[1].storage
    assert planned[3].storage != planned[1].storage


def test_report_on_a_workload():
    from relaykit.testing import vgg

    mod, params = vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32))
    lib = relay.build(mod, target="llvm", params=params)
    report = memory_report(lib.plan)
    assert report.unplanned > 3 * report.planned
    assert report.live_peak <= report.planned


_UNARY = ["exp", "nn.relu", "negative", "tanh", "sigmoid"]
_BINARY = ["add", "multiply", "subtract", "maximum"]


@st.composite
def random_graphs(draw):
    """A random DAG over (4, 6) tensors: unary/binary elementwise ops, softmax, reshape
    round trips, and some values used late or several times."""
    n_inputs = draw(st.integers(1, 3))
    xs = [relay.var(f"x{i}", shape=(4, 6)) for i in range(n_inputs)]
    values = list(xs)
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["unary", "binary", "softmax", "reshape"]))
        a = draw(st.sampled_from(values))
        if kind == "unary":
            values.append(relay.Call(tvm.ir.get_op(draw(st.sampled_from(_UNARY))), [a]))
        elif kind == "binary":
            b = draw(st.sampled_from(values))
            values.append(relay.Call(tvm.ir.get_op(draw(st.sampled_from(_BINARY))), [a, b]))
        elif kind == "softmax":
            values.append(relay.nn.softmax(a))
        else:
            values.append(relay.reshape(relay.reshape(a, (24,)), (4, 6)))
    outs = draw(st.lists(st.sampled_from(values[n_inputs:] or values), min_size=1, max_size=3))
    body = outs[0] if len(outs) == 1 else relay.Tuple(outs)
    return relay.Function(xs, body)


@settings(max_examples=60, deadline=None)
@given(random_graphs(), st.integers(0, 2**31 - 1))
def test_planned_execution_matches_the_interpreter(f, seed):
    mod = InferType()(tvm.IRModule.from_expr(f))
    plan, _ = lower_to_plan(mod)
    # The plan is consistent: tensors sharing a block are never alive at once (a tensor
    # may be born at the step its predecessor in the block is last read: in place).
    root = list(range(len(plan.entries)))
    for node in plan.nodes:
        if node.kind == "op" and node.view:
            root[node.outputs[0]] = root[node.inputs[0]]
    span: dict[int, list[int]] = {}
    for step, node in enumerate(plan.nodes):
        for e in node.outputs:
            span.setdefault(root[e], [step, step])
        for e in (*node.inputs, *node.outputs):
            span[root[e]][1] = max(span[root[e]][1], step)
    for h in plan.heads:
        span[root[h]][1] = len(plan.nodes)
    by_block: dict[int, list[list[int]]] = {}
    for r, (born, dies) in span.items():
        if plan.storage[plan.entries[r].storage].kind == "pool":
            by_block.setdefault(plan.entries[r].storage, []).append([born, dies])
    for spans in by_block.values():
        spans.sort()
        for (_, d0), (b1, _) in itertools.pairwise(spans):
            assert b1 >= d0
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal((4, 6)).astype("float32") for _ in f.params]
    got = relay.create_executor("graph", mod=mod).evaluate()(*args)
    ref = relay.create_executor("debug", mod=mod).evaluate()(*args)
    got = got if isinstance(got, (tuple, list)) else (got,)  # graph executor: a list
    ref = ref if isinstance(ref, tuple) else (ref,)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)
