"""Properties on random graphs: random operators, fan-out, diamonds, tuples, If/Let,
one to three targets with random support sets, rule styles, patterns and pins.

For every graph: the partitioned module type-checks to the original type, the
merged regions form no cycle, and it evaluates to the original's values (region
functions evaluated by the reference interpreter).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import configure_target, decline, pin, scoped_registries
from relaykit.dataflow_pattern import is_constant, is_op, wildcard
from relaykit.op.define import make_call
from relaykit.transform import InferType

SHAPE = (2, 3)
UNARY = ("nn.relu", "abs", "negative", "tanh", "sigmoid", "annotation.stop_fusion")
BINARY = ("add", "multiply", "subtract", "maximum")
OPS = UNARY + BINARY + ("concatenate",)


def _patterns():
    w = wildcard
    return [
        is_op("nn.relu")(is_op("add")(w(), w())),
        is_op("abs")(w()),
        is_op("multiply")(w(), is_constant()),
        is_op("tanh")(is_op("negative")(w())),
        is_op("nn.relu")(w()).optional(lambda x: is_op("abs")(x)),
    ]


@st.composite
def programs(draw):
    """A random Relay function over (2, 3) float32 tensors."""
    inputs = [relay.var(f"x{i}", shape=SHAPE) for i in range(draw(st.integers(1, 2)))]
    values = list(inputs)
    tuples = []

    def pick():
        # Bias towards recent values (chains), but reach back (fan-out, diamonds).
        i = draw(st.integers(0, len(values) - 1))
        j = draw(st.integers(max(0, len(values) - 3), len(values) - 1))
        return values[max(i, j) if draw(st.booleans()) else i]

    def unary(x):
        return make_call(draw(st.sampled_from(UNARY)), [x])

    def binary(a, b):
        return make_call(draw(st.sampled_from(BINARY)), [a, b])

    for _ in range(draw(st.integers(3, 30))):
        kind = draw(
            st.sampled_from(
                [
                    "unary",
                    "unary",
                    "binary",
                    "binary",
                    "const",
                    "tuple",
                    "getitem",
                    "concat",
                    "if",
                    "let",
                ]
            )
        )
        if kind == "unary":
            values.append(unary(pick()))
        elif kind == "binary":
            values.append(binary(pick(), pick()))
        elif kind == "const":
            c = relay.const(np.full(SHAPE, draw(st.sampled_from([0.5, 2.0, -1.0])), "float32"))
            values.append(binary(pick(), c))
        elif kind == "tuple":
            tuples.append(relay.Tuple([pick() for _ in range(draw(st.integers(1, 3)))]))
        elif kind == "getitem" and tuples:
            t = draw(st.sampled_from(tuples))
            values.append(relay.TupleGetItem(t, draw(st.integers(0, len(t.fields) - 1))))
        elif kind == "concat":
            parts = relay.Tuple([pick(), pick()])
            values.append(relay.split(relay.concatenate(parts, axis=0), 2, axis=0)[0])
        elif kind == "if":
            cond = relay.less(relay.sum(pick()), relay.const(0.0))
            values.append(relay.If(cond, unary(pick()), binary(pick(), pick())))
        elif kind == "let":
            v = relay.var("v", shape=SHAPE)
            values.append(relay.Let(v, unary(pick()), binary(v, pick())))
    outs = [values[-1]] + [pick() for _ in range(draw(st.integers(0, 2)))]
    if tuples and draw(st.booleans()):
        outs.append(draw(st.sampled_from(tuples)))
    if draw(st.booleans()):
        outs.append(relay.Tuple([]))
    body = outs[0] if len(outs) == 1 else relay.Tuple(outs)
    return relay.Function(inputs, body)


def _rule(style):
    if style == "new":
        return lambda expr: True
    if style == "old":
        return lambda attrs, args: True
    if style == "typed":  # accepts calls whose first input is not a projection
        return lambda expr: (
            not isinstance(expr.args[0], relay.TupleGetItem) or decline("no projections")
        )
    return lambda expr: decline("never")


@st.composite
def setups(draw):
    """Targets with support sets and rule styles, a pattern table, pins and options."""
    names = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    support = {
        t: draw(st.lists(st.sampled_from(OPS), unique=True, max_size=len(OPS))) for t in names
    }
    styles = {t: draw(st.sampled_from(["new", "old", "typed", "decline"])) for t in names}
    candidates = _patterns()
    chosen = draw(st.lists(st.integers(0, len(candidates) - 1), unique=True, max_size=3))
    table = [(f"{draw(st.sampled_from(names))}.p{i}", candidates[i]) for i in chosen]
    pins = []
    if draw(st.booleans()):
        pins.append(pin(draw(st.sampled_from(OPS)), to=draw(st.sampled_from(["host", *names]))))
    min_ops = {t: draw(st.integers(0, 2)) for t in names}
    include_non_call_ops = draw(st.booleans())
    return names, support, styles, table, pins, min_ops, include_non_call_ops


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(func=programs(), setup=setups())
def test_partitioning_preserves_types_values_and_acyclicity(byoc, func, setup):
    names, support, styles, table, pins, min_ops, include_non_call_ops = setup
    mod = InferType()(tvm.IRModule.from_expr(func))
    with scoped_registries():
        for t in names:
            byoc.supported(t, *support[t], rule=_rule(styles[t]))
            configure_target(t, min_region_ops=min_ops[t])
        st_ = byoc.stages(mod, names, table, pin=pins, include_non_call_ops=include_non_call_ops)
    assert byoc.region_graph_is_acyclic(st_["MergeCompilerRegions"])
    out = st_["PartitionGraph"]
    rechecked = InferType()(tvm.IRModule(dict(out.functions)))
    assert rechecked["main"].checked_type == mod["main"].checked_type
    for fn in byoc.region_functions(out).values():
        assert fn.attrs["Compiler"] in names
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(func=programs())
def test_everything_supported_merges_within_each_scope(byoc, func):
    """With every operator supported, a function without If/Let becomes one region."""
    mod = InferType()(tvm.IRModule.from_expr(func))
    nodes = list(tvm.ir.post_order(func))
    control = any(isinstance(n, (relay.If, relay.Let)) for n in nodes)
    has_ops = any(isinstance(n, relay.Call) for n in nodes)
    with scoped_registries():
        byoc.supported("all", *OPS, "sum", "less", "split")
        out = byoc.partition(mod, "all")
    n = len(byoc.region_functions(out))
    if not control:
        assert n == (1 if has_ops else 0)
    inputs = byoc.random_inputs(mod)
    byoc.assert_same_values(byoc.evaluate(out, inputs), byoc.evaluate(mod, inputs))
