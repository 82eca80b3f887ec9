"""Fixtures of the BYOC tests.

Every test runs inside ``scoped_registries()``: the target rules, pattern
tables and target specs it registers are gone when it ends. Helpers shared by
several test files are handed out by the ``byoc`` fixture.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit.byoc import (
    AnnotateTarget,
    MergeCompilerRegions,
    MergeComposite,
    PartitionGraph,
    scoped_registries,
)
from relaykit.byoc._common import annotation_ops, data_children
from relaykit.byoc.regions import find_regions, walk
from relaykit.execution.interpreter import create_executor
from relaykit.ir import Call, Expr, IRModule
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.transform import InferType


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    with scoped_registries():
        yield


def supported(target: str, *ops: str, rule: Any = True) -> None:
    """Register ``rule`` (default: accept everything) for ``ops`` on ``target``."""
    for name in ops:
        tvm.ir.register_op_attr(name, f"target.{target}", rule)


def stages(
    mod: IRModule, targets: str | Sequence[str], patterns: Any = None, **annotate: Any
) -> dict[str, IRModule]:
    """The module after each BYOC pass, by pass name."""
    out = {"input": InferType()(mod)}
    cur = out["input"]
    if patterns:
        cur = out["MergeComposite"] = MergeComposite(patterns)(cur)
    cur = out["AnnotateTarget"] = AnnotateTarget(targets, **annotate)(cur)
    cur = out["MergeCompilerRegions"] = MergeCompilerRegions()(cur)
    out["PartitionGraph"] = PartitionGraph()(cur)
    return out


def partition(
    mod: IRModule, targets: str | Sequence[str], patterns: Any = None, **annotate: Any
) -> IRModule:
    return stages(mod, targets, patterns, **annotate)["PartitionGraph"]


def region_functions(mod: IRModule) -> dict[str, Any]:
    return {gv.name_hint: fn for gv, fn in mod.items() if "Compiler" in fn.attrs}


def random_inputs(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)

    def value(ty: Type) -> Any:
        if isinstance(ty, TupleType):
            return tuple(value(f) for f in ty.fields)
        assert isinstance(ty, TensorType)
        return rng.uniform(-2.0, 2.0, size=ty.shape).astype(ty.dtype)

    main = InferType()(mod)["main"]
    return [value(p.checked_type) for p in main.params]


def evaluate(mod: IRModule, inputs: Sequence[Any]) -> Any:
    out = create_executor("debug", mod=mod).evaluate()(*inputs)
    return _numpy(out)


def _numpy(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_numpy(v) for v in value)
    return value.numpy()


def assert_same_values(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_values(x, y)
        return
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def region_graph_is_acyclic(annotated: IRModule) -> bool:
    """Whether the regions of ``main`` (after MergeCompilerRegions), contracted to single
    nodes together with the host nodes between them, form a DAG."""
    body = annotated["main"].body
    order = walk(body)
    rs = find_regions(body, order, skip_default=True)
    begin, end = annotation_ops()

    def unit(e: Expr) -> Any:
        r = rs.region(e)
        return ("region", r) if r is not None else ("node", id(e))

    succ: dict[Any, set[Any]] = {}
    for node in order:
        u = unit(node)
        succ.setdefault(u, set())
        for kid in data_children(node):
            k = unit(kid)
            if k != u:
                succ.setdefault(k, set()).add(u)
    indeg = {u: 0 for u in succ}
    for vs in succ.values():
        for v in vs:
            indeg[v] += 1
    ready = [u for u, d in indeg.items() if d == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    del begin, end
    return seen == len(indeg)


def count_annotations(mod: IRModule) -> int:
    begin, end = annotation_ops()
    return sum(
        1 for n in walk(mod["main"].body) if type(n) is Call and (n.op is begin or n.op is end)
    )


@pytest.fixture
def byoc() -> types.SimpleNamespace:
    """Helpers: supported, stages, partition, region_functions, random_inputs, evaluate,
    assert_same_values, region_graph_is_acyclic, count_annotations."""
    return types.SimpleNamespace(
        supported=supported,
        stages=stages,
        partition=partition,
        region_functions=region_functions,
        random_inputs=random_inputs,
        evaluate=evaluate,
        assert_same_values=assert_same_values,
        region_graph_is_acyclic=region_graph_is_acyclic,
        count_annotations=count_annotations,
    )
