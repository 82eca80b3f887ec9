"""The placement search with deterministic cost sources: the choices the dynamic
programme must make, no cycles on random graphs, and the same outputs as NumPy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relaykit as tvm
from relaykit import relay
from relaykit.backends import Backend, register_backend
from relaykit.byoc import region_functions, scoped_registries
from relaykit.errors import PlacementError
from relaykit.execution.codegen import scoped_codegens
from relaykit.ir.expr import Call, Tuple
from relaykit.ir.functor import post_order
from relaykit.runtime.module import PythonModule
from relaykit.tuning import CallableCost, MockCostEstimator, Placement, Segment, place, search
from relaykit.tuning.search import maximal_runs, merged_runs

pytest.importorskip("onnxruntime", reason="placement tests use the onnxruntime backend")


def _numpy_backend(name: str, ops: dict[str, Any]) -> None:
    """A backend whose regions run with NumPy (each op's kernel in ``ops``)."""

    def codegen(func: Any) -> PythonModule:
        body = func.body

        def run(*arrays: Any) -> None:
            env: dict[Any, Any] = dict(zip(func.params, arrays[: len(func.params)], strict=True))
            for node in post_order(body):
                if isinstance(node, Call):
                    env[node] = ops[node.op.name](*[env[a] for a in node.args])
                elif isinstance(node, Tuple):
                    env[node] = [env[f] for f in node.fields]
            results = env[body] if isinstance(body, Tuple) else [env[body]]
            for out, value in zip(arrays[len(func.params) :], results, strict=True):
                np.copyto(out, value)

        return PythonModule(name, {str(func.attrs["global_symbol"]): run})

    register_backend(Backend(name, rules={op: True for op in ops}, codegen=codegen))


def _chain() -> tuple[Any, np.ndarray]:
    x = relay.var("x", shape=(2, 3))
    body = relay.exp(relay.nn.relu(relay.abs(x) + relay.const(1.0)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    return mod, np.array([[-1.0, 2.0, 0.5], [3.0, -0.25, 0.0]], "float32")


def _want(x: np.ndarray) -> np.ndarray:
    return np.exp(np.maximum(np.abs(x.astype(np.float64)) + 1.0, 0.0))


def _run(part: Any, x: np.ndarray) -> np.ndarray:
    lib = relay.build(part, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def _targets_of(part: Any) -> list[str]:
    return sorted(str(part[g].attrs["Compiler"]) for g in region_functions(part))


def test_each_unit_goes_to_its_cheapest_target() -> None:
    mod, x = _chain()
    # abs, add, relu, exp: onnxruntime is cheap for add and relu only.
    table = {"abs": (5, 1), "add": (1, 5), "nn.relu": (1, 5), "exp": (5, 1)}

    def cost(names: tuple[str, ...], target: str) -> float:
        return sum(table[n][0 if target == "onnxruntime" else 1] for n in names)

    res = place(mod, ["onnxruntime"], cost=CallableCost(cost))
    got = [(s.names, s.target) for s in res.placement.segments]
    assert got == [(("abs",), "host"), (("add", "nn.relu"), "onnxruntime"), (("exp",), "host")]
    assert res.placement.total == 4
    np.testing.assert_allclose(_run(res.partitioned, x), _want(x), rtol=1e-5)


def test_fusion_benefit_and_boundary_costs_decide() -> None:
    mod, x = _chain()

    # Per unit the host is cheaper, but onnxruntime runs any run of units in 2.5:
    def cost(names: tuple[str, ...], target: str) -> float:
        return 2.5 if target == "onnxruntime" else 1.0 * len(names)

    res = place(mod, ["onnxruntime"], cost=CallableCost(cost))
    assert [(s.start, s.stop, s.target) for s in res.placement.segments] == [(0, 4, "onnxruntime")]
    # ...unless calling a region costs more than it saves.
    res = place(mod, ["onnxruntime"], cost=CallableCost(cost, call_cost={"onnxruntime": 2.0}))
    assert [s.target for s in res.placement.segments] == ["host"]
    assert res.placement.total == 4.0
    np.testing.assert_allclose(_run(res.partitioned, x), _want(x), rtol=1e-5)


def test_a_failed_candidate_is_never_chosen() -> None:
    mod, _x = _chain()

    def cost(names: tuple[str, ...], target: str) -> float:
        if target == "onnxruntime" and "exp" in names:
            return math.inf  # the backend failed on every run holding exp
        return 0.1 if target == "onnxruntime" else 1.0 * len(names)

    res = place(mod, ["onnxruntime"], cost=CallableCost(cost))
    assert res.placement.segments[-1].target == "host"
    assert res.placement.segments[-1].names == ("exp",)
    assert res.placement.segments[-1].alternatives["onnxruntime"] == math.inf


def test_mock_cost_estimator_under_tvm_names() -> None:
    mod, x = _chain()
    with tvm.transform.PassContext(config={"relay.collage.byoc_max_depth": 2}):
        out = relay.transform.CollagePartition(
            [tvm.target.Target("llvm"), "onnxruntime"],
            relay.collage.MockCostEstimator({"llvm": 2, "onnxruntime": 1}),
        )(relay.transform.InferType()(mod))
    assert _targets_of(out) == ["onnxruntime"]  # two runs of two, merged into one region
    np.testing.assert_allclose(_run(out, x), _want(x), rtol=1e-5)


def test_unknown_backend_is_a_typed_error() -> None:
    mod, _ = _chain()
    with pytest.raises(PlacementError, match="unknown backend 'nowhere'"):
        place(mod, ["onnxruntime", "nowhere"], cost=MockCostEstimator({"host": 1}))


def _long_chain() -> tuple[Any, np.ndarray]:
    """abs, add, relu, exp, negative, sign: onnxruntime exports all but sign."""
    x = relay.var("x", shape=(2, 3))
    body = relay.sign(relay.negative(relay.exp(relay.nn.relu(relay.abs(x) + relay.const(1.0)))))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    return mod, np.array([[-1.0, 2.0, 0.5], [3.0, -0.25, 0.0]], "float32")


def test_a_region_as_large_as_the_backend_supports_is_a_candidate() -> None:
    mod, x = _long_chain()

    # A region on onnxruntime costs one call (2.0) and little per unit; the host 1.0 a unit.
    def cost(names: tuple[str, ...], target: str) -> float:
        return 2.0 + 0.1 * len(names) if target == "onnxruntime" else 1.0 * len(names)

    # Runs of at most two units: three onnxruntime regions (6.6) lose to the host (6.0),
    # but onnxruntime's longest run (five units, one call) wins.
    res = place(mod, ["onnxruntime"], cost=CallableCost(cost), max_units=2, host_max_units=2)
    got = [(s.start, s.stop, s.target) for s in res.placement.segments]
    assert got == [(0, 5, "onnxruntime"), (5, 6, "host")]
    assert math.isclose(res.placement.total, 3.5)
    want = np.sign(-_want(x))
    np.testing.assert_allclose(_run(res.partitioned, x), want, rtol=1e-5)


def test_neighbouring_regions_on_one_target_are_measured_as_one() -> None:
    mod, x = _long_chain()

    def cost(names: tuple[str, ...], target: str) -> float:
        if target == "onnxruntime":  # any region holding negative is slow there
            return 50.0 if "negative" in names else 1.0 + 0.1 * len(names)
        return 1.0 * len(names)

    src = _Batched(cost)
    res = place(mod, ["onnxruntime"], cost=src, max_units=2, host_max_units=2)
    got = [(s.start, s.stop, s.target) for s in res.placement.segments]
    # First [abs, add] and [relu, exp] on onnxruntime (1.2 each); then the two as one
    # region, measured after that choice, won (1.4 against 2.4).
    assert got == [(0, 4, "onnxruntime"), (4, 6, "host")]
    assert math.isclose(res.placement.total, 3.4)
    asked = [[(names, t) for names, t, _ in batch] for batch in src.batches]
    merged = (("abs", "add", "nn.relu", "exp"), "onnxruntime")
    assert merged in asked[-1] and not any(merged in batch for batch in asked[:-1])
    want = np.sign(-_want(x))
    np.testing.assert_allclose(_run(res.partitioned, x), want, rtol=1e-5)


def test_merged_runs_bridge_regions_the_target_could_also_run() -> None:
    mod, _ = _long_chain()

    def cost(names: tuple[str, ...], target: str) -> float:
        return 1.0 * len(names)

    res = place(mod, ["onnxruntime"], cost=CallableCost(cost), max_units=1, host_max_units=1)
    graph = res.graph
    seg = lambda i, j, t: Segment(i, j, t, 1.0, 0.0, ())  # noqa: E731
    ort, host = "onnxruntime", "host"
    placed = Placement(
        (seg(0, 1, ort), seg(1, 2, host), seg(2, 3, ort), seg(3, 5, ort), seg(5, 6, host)),
        5.0,
        (ort,),
    )
    # from each onnxruntime region to the next and to the last one reachable on it;
    # never across sign (unit 5), which onnxruntime cannot run
    assert merged_runs(graph, placed) == [(0, 3, [ort]), (0, 5, [ort]), (2, 5, [ort])]
    assert maximal_runs(graph, [ort]) == [(0, 5, [ort])]


# -- random graphs: no cycle, same values as NumPy -------------------------------------------

_UNARY = {"abs": np.abs, "negative": np.negative, "nn.relu": lambda a: np.maximum(a, 0)}
_BINARY = {"add": np.add, "multiply": np.multiply, "subtract": np.subtract}
_ALL = {**_UNARY, **_BINARY}


@st.composite
def _graphs(draw: Any) -> list[tuple[str, list[int]]]:
    n = draw(st.integers(2, 12))
    nodes: list[tuple[str, list[int]]] = []
    for i in range(n):
        avail = i + 2  # two inputs, then earlier nodes
        if draw(st.booleans()):
            op = draw(st.sampled_from(sorted(_UNARY)))
            nodes.append((op, [draw(st.integers(0, avail - 1))]))
        else:
            op = draw(st.sampled_from(sorted(_BINARY)))
            nodes.append((op, [draw(st.integers(0, avail - 1)) for _ in range(2)]))
    return nodes


def _build(nodes: list[tuple[str, list[int]]]) -> tuple[Any, list[int]]:
    a, b = relay.var("a", shape=(3,)), relay.var("b", shape=(3,))
    vals: list[Any] = [a, b]
    for op, args in nodes:
        f = {
            "abs": relay.abs,
            "negative": relay.negative,
            "nn.relu": relay.nn.relu,
            "add": relay.add,
            "multiply": relay.multiply,
            "subtract": relay.subtract,
        }[op]
        vals.append(f(*[vals[i] for i in args]))
    used = {i for _, args in nodes for i in args}
    outs = [i for i in range(2, len(vals)) if i not in used]
    body = vals[outs[0]] if len(outs) == 1 else relay.Tuple([vals[i] for i in outs])
    return tvm.IRModule.from_expr(relay.Function([a, b], body)), outs


def _numpy_eval(nodes: list[tuple[str, list[int]]], a: np.ndarray, b: np.ndarray) -> list[Any]:
    vals: list[Any] = [a.astype(np.float64), b.astype(np.float64)]
    for op, args in nodes:
        vals.append(_ALL[op](*[vals[i] for i in args]))
    return vals


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_graphs(), st.integers(0, 2**16))
def test_random_placements_have_no_cycle_and_keep_values(nodes: Any, seed: int) -> None:
    with scoped_registries(), scoped_codegens():
        _check_random(nodes, seed)


def _check_random(nodes: Any, seed: int) -> None:
    _numpy_backend("np_a", {"add": np.add, "abs": np.abs, "nn.relu": lambda v: np.maximum(v, 0)})
    _numpy_backend("np_b", {"multiply": np.multiply, "negative": np.negative, "add": np.add})
    mod, outs = _build(nodes)
    rng = np.random.default_rng(seed)

    costs: dict[tuple[tuple[str, ...], str], float] = {}

    def cost(names: tuple[str, ...], target: str) -> float:
        return costs.setdefault((names, target), float(rng.uniform(0.1, 1.0)) * len(names) ** 0.5)

    res = place(mod, ["np_a", "np_b"], cost=CallableCost(cost, {"np_a": 0.05, "np_b": 0.05}))
    # Contract the units of each segment: the segment graph must be acyclic.
    seg_of = {u: k for k, s in enumerate(res.placement.segments) for u in range(s.start, s.stop)}
    edges = {
        (seg_of[p], seg_of[u])
        for p, users in enumerate(res.graph.users)
        for u in users
        if seg_of[p] != seg_of[u]
    }
    assert all(a < b for a, b in edges)  # segments in order: every edge points forward
    a, b = rng.standard_normal(3).astype("float32"), rng.standard_normal(3).astype("float32")
    lib = relay.build(res.partitioned, target="llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    want = _numpy_eval(nodes, a, b)
    for k, i in enumerate(outs):
        np.testing.assert_allclose(m.get_output(k).numpy(), want[i], rtol=1e-5, atol=1e-6)


class _Batched(CallableCost):
    """A CallableCost that also answers batches, recording each batch it is handed."""

    def __init__(self, fn: Any) -> None:
        super().__init__(fn)
        self.batches: list[list[tuple[tuple[str, ...], str, float]]] = []

    def latencies(self, jobs: list[tuple[Any, str, float]]) -> list[float]:
        self.batches.append([(c.names, t, b) for c, t, b in jobs])
        return [self.latency(c, t) for c, t, _ in jobs]


def test_runs_a_target_cannot_win_are_not_measured() -> None:
    mod, _ = _chain()  # abs, add, relu, exp

    def cost(names: tuple[str, ...], target: str) -> float:
        if target == "onnxruntime":  # exp is hopeless there; every region costs 1 + its ops
            return 100.0 if "exp" in names else 1.0 + 0.1 * len(names)
        return 2.0 * len(names)

    src = _Batched(cost)
    res = place(mod, ["onnxruntime"], cost=src, max_units=4, host_max_units=4)
    asked = [job for batch in src.batches for job in batch]
    ort_runs = {names for names, t, _ in asked if t == "onnxruntime"}
    # exp alone was measured on onnxruntime; no longer run holding it was
    assert ("exp",) in ort_runs
    assert not any("exp" in names and len(names) > 1 for names in ort_runs)
    assert ("abs", "add", "nn.relu") in ort_runs  # runs it may win still are
    # single units come first, target by target, the host bounded by onnxruntime's time
    assert [b[0][1] for b in src.batches[:2]] == ["onnxruntime", "host"]
    assert all(math.isinf(bound) for _, _, bound in src.batches[0])
    assert dict(((n, t), b) for n, t, b in src.batches[1])[(("exp",), "host")] == 100.0
    # and the choice is still the best over everything: ort for the first three, exp on host
    assert [(s.names, s.target) for s in res.placement.segments] == [
        (("abs", "add", "nn.relu"), "onnxruntime"),
        (("exp",), "host"),
    ]
    full = _Batched(cost)
    unpruned = search(res.graph, ["onnxruntime"], full, max_units=4, host_max_units=4, prune=False)
    assert math.isclose(unpruned.total, res.placement.total)
    assert sum(map(len, full.batches)) > len(asked)
