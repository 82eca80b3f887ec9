"""Helpers of the dnnl backend tests.

Every test here is skipped, with the reason, when the oneDNN wheels are not
installed (``pip install relaykit[dnnl]``). The helpers are handed out by the
``dnnl`` fixture. Models are partitioned with
``partition_for_dnnl``, built with ``relay.build`` and run by the graph
executor; the reference is relaykit's interpreter on the original module.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends.dnnl import DnnlNotFoundError, find_onednn
from relaykit.contrib import graph_executor
from relaykit.execution.interpreter import create_executor
from relaykit.ir import Call, Function, IRModule
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op


def _why_unavailable() -> str | None:
    try:
        lib = find_onednn()
    except DnnlNotFoundError as err:
        return str(err)
    if lib.include_dir is None:
        return "oneDNN headers missing (onednn-devel-cpu-gomp); pip install relaykit[dnnl]"
    return None


@pytest.fixture(autouse=True)
def _dnnl_available() -> Iterator[None]:
    reason = _why_unavailable()
    if reason is not None:
        pytest.skip(f"the dnnl backend is not available: {reason}")
    yield


def host_ops(mod: IRModule) -> list[str]:
    """Operators left on the host (called from ``main``)."""
    return [
        n.op.name
        for n in post_order(mod["main"].body, skip=lambda n: type(n) is Function)
        if type(n) is Call and type(n.op) is Op
    ]


def dnnl_functions(mod: IRModule) -> list[Function]:
    return [f for _, f in mod.items() if f.attrs and f.attrs.get("Compiler") == "dnnl"]


def build(mod: IRModule, params: Mapping[str, Any] | None = None, **config: Any) -> Any:
    """``relay.build`` of an already partitioned module; the factory module."""
    opts = {"relay.ext.dnnl.options": config} if config else {}
    with tvm.transform.PassContext(config=opts):
        return relay.build(mod, target="llvm", params=params)


def run_lib(lib: Any, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def conv_ref(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    pad: Sequence[int] = (1, 1, 1, 1),
) -> np.ndarray:
    """conv2d(x, w) + bias, stride 1, ``pad`` = (top, left, bottom, right), in float64
    (an independent reference for the dnnl kernels)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i : i + oh, j : j + ow], w[:, :, i, j])
    return out if bias is None else out + bias[None, :, None, None]


def reference(
    mod: IRModule, params: Mapping[str, Any] | None, inputs: Mapping[str, np.ndarray]
) -> list[np.ndarray]:
    """The interpreter's outputs of the original module."""
    args = {k: _array(v) for k, v in (params or {}).items()}
    args.update(inputs)
    out = create_executor("debug", mod=mod).evaluate()(**args)
    if isinstance(out, (tuple, list)):
        return [_array(o) for o in out]
    return [_array(out)]


def _array(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def check_against_interpreter(
    mod: IRModule,
    params: Mapping[str, Any] | None,
    inputs: Mapping[str, np.ndarray],
    rtol: float = 1e-4,
    atol: float = 1e-4,
    expect_host: tuple[str, ...] = (),
) -> IRModule:
    """Partition for dnnl, build, run and compare with the interpreter; the partitioned
    module. ``expect_host``: the operators that must stay on the host (all others are
    offloaded)."""
    from relaykit.backends.dnnl import partition_for_dnnl

    pmod = partition_for_dnnl(mod, params)
    assert sorted(host_ops(pmod)) == sorted(expect_host), host_ops(pmod)
    assert dnnl_functions(pmod), "nothing was offloaded"
    got = run_lib(build(pmod), inputs)
    want = reference(mod, params, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return pmod


def module_of(expr_fn: Any, *shapes: tuple[int, ...]) -> IRModule:
    """``IRModule`` of ``relay.Function(vars, expr_fn(*vars))`` with inputs x0, x1, ..."""
    xs = [relay.var(f"x{i}", shape=s) for i, s in enumerate(shapes)]
    body = expr_fn(*xs)
    return tvm.IRModule.from_expr(relay.Function(xs, body))


def random_inputs(mod: IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod["main"].params:
        shape = tuple(p.type_annotation.shape)
        out[p.name_hint] = rng.standard_normal(shape).astype("float32")
    return out


@pytest.fixture
def dnnl() -> types.SimpleNamespace:
    """The helpers of this file."""
    return types.SimpleNamespace(
        host_ops=host_ops,
        dnnl_functions=dnnl_functions,
        build=build,
        run_lib=run_lib,
        reference=reference,
        check=check_against_interpreter,
        module_of=module_of,
        random_inputs=random_inputs,
        conv_ref=conv_ref,
    )
