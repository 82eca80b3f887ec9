"""Collage's search over sub-graphs: costs from an estimator decide which operators an
external codegen's patterns take; the result computes what the input did."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.errors import PlacementError
from relaykit.ir import Call, Function, GlobalVar, IRModule, post_order
from relaykit.transform import InferType, InlineCompilerFunctionsBoundTo
from relaykit.tuning import CollagePartition, MockCostEstimator
from relaykit.tuning.subgraph_rules import Candidate
from relaykit.tuning.subgraph_search import search


def _table(name: str) -> list[tuple[Any, ...]] | None:
    if name != "mylib":
        return None
    return [
        ("relu", is_op("nn.relu")(wildcard())),
        ("add", is_op("add")(wildcard(), wildcard())),
    ]


def _collage(
    mod: IRModule,
    costs: dict[str, int],
    tvm_depth: int = 2,
    byoc_depth: int = 3,
    max_estimates: int = 0,
) -> IRModule:
    cfg = {"relay.collage.tvm_max_depth": tvm_depth, "relay.collage.byoc_max_depth": byoc_depth}
    with tvm.transform.PassContext(config=cfg):
        pass_ = CollagePartition(
            [tvm.target.Target("llvm"), "mylib"],
            MockCostEstimator(costs, max_estimates=max_estimates),
            pattern_table=_table,
        )
        return pass_(InferType()(mod))


def _externals(mod: IRModule) -> dict[str, Function]:
    return {gv.name_hint: f for gv, f in mod.items() if "Compiler" in f.attrs}


def _ops(fn: Function) -> list[str]:
    return [n.op.name for n in post_order(fn.body) if isinstance(n, Call) and hasattr(n.op, "name")]


def _run(mod: IRModule, data: np.ndarray) -> np.ndarray:
    inlined = InlineCompilerFunctionsBoundTo(
        [gv for gv, f in mod.items() if "Compiler" in f.attrs]
    )(mod)
    return relay.create_executor("debug", mod=InferType()(inlined)).evaluate()(data).numpy()


def _diamond() -> IRModule:
    x = relay.var("x", shape=(4, 4))
    r0 = relay.nn.relu(x)
    a = relay.abs(r0)
    return IRModule.from_expr(relay.Function([x], relay.add(a, relay.nn.relu(a))))


DATA = np.linspace(-2, 2, 16, dtype="float32").reshape(4, 4)


def _want(x: np.ndarray) -> np.ndarray:
    a = np.abs(np.maximum(x, 0))
    return a + np.maximum(a, 0)


def test_the_cheaper_codegen_takes_what_its_patterns_match() -> None:
    out = _collage(_diamond(), {"llvm": 2, "mylib": 1})
    ext = _externals(out)
    # abs has no pattern: it stays in main, splitting the codegen's work in two functions
    assert sorted(ext) == ["collage_mylib_nn_relu", "collage_mylib_nn_relu_add"]
    for name, fn in ext.items():
        assert fn.attrs["Compiler"] == "mylib" and fn.attrs["global_symbol"] == name
    assert _ops(out["main"]) == ["abs"]
    np.testing.assert_allclose(_run(out, DATA), _want(DATA), rtol=1e-6)


def test_the_cheaper_compiler_keeps_everything() -> None:
    out = _collage(_diamond(), {"llvm": 1, "mylib": 2})
    assert _externals(out) == {}
    assert sorted(_ops(out["main"])) == ["abs", "add", "nn.relu", "nn.relu"]


def test_fusion_benefit_decides_between_close_costs() -> None:
    # three relus: llvm fuses at most two (190 + 100 = 290), mylib one at a time (99 each,
    # 297) or, with depth 3, all three in one function (100 + 90 + 81 = 271)
    x = relay.var("x", shape=(4, 4))
    mod = IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))))
    deep = _collage(mod, {"llvm": 99, "mylib": 100}, tvm_depth=1, byoc_depth=3)
    assert list(_externals(deep)) == ["collage_mylib_nn_relu_nn_relu_nn_relu"]
    shallow = _collage(mod, {"llvm": 99, "mylib": 100}, tvm_depth=1, byoc_depth=1)
    assert _externals(shallow) == {}
    np.testing.assert_allclose(_run(deep, DATA), np.maximum(DATA, 0), rtol=1e-6)


def test_regions_never_form_a_cycle() -> None:
    # relu -> abs -> add(relu, abs) -> add(abs, add): relu and the adds cannot share a
    # function, since abs (host) lies on a path between them
    x = relay.var("x", shape=(4, 4))
    r = relay.nn.relu(x)
    a = relay.abs(r)
    s = relay.add(r, a)
    mod = IRModule.from_expr(relay.Function([x], relay.add(a, s)))
    out = _collage(mod, {"llvm": 2, "mylib": 1}, tvm_depth=4, byoc_depth=4)
    ext = _externals(out)
    assert sorted(ext) == ["collage_mylib_add_add", "collage_mylib_nn_relu"]
    calls = [n for n in post_order(out["main"].body) if isinstance(n, Call)]
    order = [c.op.name_hint if isinstance(c.op, GlobalVar) else c.op.name for c in calls]
    assert order == ["collage_mylib_nn_relu", "abs", "collage_mylib_add_add"]
    r_np = np.maximum(DATA, 0)
    a_np = np.abs(r_np)
    np.testing.assert_allclose(_run(out, DATA), a_np + (r_np + a_np), rtol=1e-6)


def test_pruning_keeps_the_estimates_few() -> None:
    x = relay.var("x", shape=(4, 4))
    r0 = relay.nn.relu(x)
    r1 = relay.nn.relu(r0)
    a0 = relay.add(r0, r1)
    mod = IRModule.from_expr(relay.Function([x], relay.add(r1, a0)))
    # only the two largest candidates (all four operators, each way) are estimated
    out = _collage(mod, {"llvm": 2, "mylib": 1}, tvm_depth=4, byoc_depth=4, max_estimates=2)
    assert list(_externals(out)) == ["collage_mylib_nn_relu_nn_relu_add_add"]


def test_mock_estimate_follows_tvm_formula() -> None:
    x = relay.var("x", shape=(2,))
    mod = IRModule.from_expr(relay.Function([x], relay.exp(relay.abs(relay.negative(x)))))
    est = MockCostEstimator({"llvm": 10})
    assert est.estimate(mod, "llvm") == pytest.approx(10 * (1 + 0.9 + 0.81))
    limited = MockCostEstimator({"llvm": 10}, max_estimates=1)
    limited.estimate(mod, "llvm")
    with pytest.raises(PlacementError, match="more than 1"):
        limited.estimate(mod, "llvm")


def test_a_codegen_without_patterns_or_backend_is_named() -> None:
    with tvm.transform.PassContext(config={"relay.collage.byoc_max_depth": 2}):
        pass_ = CollagePartition(
            ["llvm", "nolib"], MockCostEstimator({"llvm": 1}), pattern_table=_table
        )
        with pytest.raises(PlacementError, match="'nolib' has no pattern table"):
            pass_(InferType()(_diamond()))


def test_fusion_style_no_fusion_keeps_one_pattern_per_candidate() -> None:
    # with NoFusion, mylib's candidates are its single matches: the three relus are three
    # estimates of 100, against llvm's 99 each; with the default (any fusion) one function
    # of all three (100 + 90 + 81) wins
    x = relay.var("x", shape=(4, 4))
    mod = IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))))
    cfg = {
        "relay.collage.tvm_max_depth": 1,
        "relay.collage.byoc_max_depth": 3,
        "relay.collage.byoc_fusion_style": ["mylib.NoFusion"],
    }
    with tvm.transform.PassContext(config=cfg):
        out = CollagePartition(
            ["llvm", "mylib"], MockCostEstimator({"llvm": 99, "mylib": 100}), pattern_table=_table
        )(InferType()(mod))
    assert _externals(out) == {}
    with tvm.transform.PassContext(config={**cfg, "relay.collage.byoc_fusion_style": ["x"]}):
        bad = CollagePartition(["llvm", "mylib"], MockCostEstimator({}), pattern_table=_table)
        with pytest.raises(PlacementError, match="byoc_fusion_style"):
            bad(InferType()(mod))


def test_a_deep_chain_needs_no_recursion() -> None:
    # 1,200 operators in a chain (past Python's recursion limit): every fifth is abs, which
    # mylib cannot run; each four relus between (candidates of at most three, merged once
    # chosen) become calls of one shared mylib function
    x = relay.var("x", shape=(2,))
    y = x
    for i in range(1200):
        y = relay.nn.relu(y) if i % 5 else relay.abs(y)
    out = _collage(IRModule.from_expr(relay.Function([x], y)), {"llvm": 2, "mylib": 1})
    ext = _externals(out)
    assert list(ext) == ["collage_mylib"]
    assert _ops(ext["collage_mylib"]) == ["nn.relu"] * 4
    calls = [n for n in post_order(out["main"].body) if isinstance(n, Call)]
    assert sum(isinstance(c.op, GlobalVar) for c in calls) == 240
    assert sum(getattr(c.op, "name", "") == "abs" for c in calls) == 240


class _Nodes:
    """The part of a dataflow graph the search reads: its size and node kinds."""

    def __init__(self, n: int) -> None:
        self.graph = SimpleNamespace(nodes=[relay.var(f"v{i}") for i in range(n)])
        self.n = n

    def __len__(self) -> int:
        return self.n


def _cand(nodes: set[int], cost: float) -> Candidate:
    return Candidate("s", "llvm", frozenset(nodes), 0, "l", cost=cost)


def test_a_cover_that_dead_ends_gives_way_to_one_that_does_not() -> None:
    # the cheapest start {0, 2} leaves node 1 only a candidate {1, 2} that overlaps it;
    # {0} then {1, 2} covers everything and is the answer, not an error
    df = _Nodes(3)
    cheap, alone, rest = _cand({0, 2}, 1.0), _cand({0}, 5.0), _cand({1, 2}, 1.0)
    chosen = search(df, [cheap, alone, rest], estimator=None, cache=None)  # type: ignore[arg-type]
    assert sorted(sorted(c.inside) for c in chosen) == [[0], [1, 2]]


def test_no_cover_at_all_names_the_node() -> None:
    df = _Nodes(3)
    with pytest.raises(PlacementError, match=r"past node 1 \(Var\)"):
        search(df, [_cand({0, 2}, 1.0), _cand({1, 2}, 1.0)], None, None)  # type: ignore[arg-type]
