"""Executors in parallel threads: many executors of one build, and one executor shared.

Every backend (host, ccompiler, jsonref, dnnl) runs a small convolutional model
from several threads at once; every output is compared with a NumPy
computation of the model written here (not relaykit's kernels). The long run
(8 executors x 8 threads x 100 runs) is ``benchmarks/threads.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler, jsonref
from relaykit.contrib import graph_executor
from relaykit.errors import ExecutorUsageError

SHAPE = (1, 3, 16, 16)
CHAIN_SHAPE = (256, 256)


def model() -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """conv2d + bias + relu, flatten, dense + bias, multiply, add: host ops between regions
    and intermediates inside them (a backend's workspace is used)."""
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3,
        "b1": rng.standard_normal(8).astype("float32") * 0.1,
        "w2": rng.standard_normal((64, 2048)).astype("float32") * 0.05,
        "b2": rng.standard_normal(64).astype("float32") * 0.1,
    }
    x = relay.var("x", shape=SHAPE)
    w1, b1 = relay.var("w1", shape=(8, 3, 3, 3)), relay.var("b1", shape=(8,))
    w2, b2 = relay.var("w2", shape=(64, 2048)), relay.var("b2", shape=(64,))
    y = relay.nn.conv2d(x, w1, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.relu(relay.nn.bias_add(y, b1))
    y = relay.nn.batch_flatten(y)
    y = relay.nn.bias_add(relay.nn.dense(y, w2), b2)
    y = relay.add(relay.multiply(y, y), y)
    return tvm.IRModule.from_expr(relay.Function([x, w1, b1, w2, b2], y)), params


def chain() -> tvm.IRModule:
    """Elementwise arithmetic on 64k floats: one long region of intermediates."""
    x = relay.var("x", shape=CHAIN_SHAPE)
    a = relay.multiply(x, x)
    b = relay.add(a, x)
    c = relay.multiply(b, x)
    d = relay.subtract(c, a)
    e = relay.multiply(d, relay.const(0.5))
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(e, b)))


def numpy_chain(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    a = x * x
    b = a + x
    return (b * x - a) * 0.5 + b


def numpy_model(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    """The model in float64 NumPy: the convolution as a sum over the kernel's taps."""
    w1 = p["w1"].astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 8, 16, 16))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i : i + 16, j : j + 16], w1[:, :, i, j])
    y = np.maximum(conv + p["b1"][None, :, None, None], 0).reshape(1, -1)
    y = y @ p["w2"].astype(np.float64).T + p["b2"]
    return y * y + y


def build(backend: str, which: str = "model") -> Any:
    if which == "model":
        mod, params = model()
    else:
        mod, params = chain(), {}
    if backend == "host":
        return relay.build(mod, target="llvm", params=params)
    if backend == "dnnl":
        dnnl = pytest.importorskip("relaykit.backends.dnnl")
        try:
            dnnl.find_onednn()
        except dnnl.DnnlNotFoundError as err:
            pytest.skip(f"the dnnl backend is not available: {err}")
        part = dnnl.partition_for_dnnl(mod, params)
    elif backend == "ccompiler":
        part = ccompiler.partition_for_ccompiler(mod, params)
    else:
        part = jsonref.partition_for_jsonref(mod, params)
    regions = [gv for gv in part.get_global_vars() if gv.name_hint != "main"]
    assert regions, f"nothing was offloaded to {backend}"
    return relay.build(part, target="llvm")


def inputs(n: int, which: str = "model") -> tuple[list[np.ndarray], list[np.ndarray]]:
    _, params = model()
    rng = np.random.default_rng(1)
    if which == "chain":
        xs = [rng.standard_normal(CHAIN_SHAPE).astype("float32") for _ in range(n)]
        return xs, [numpy_chain(x) for x in xs]
    xs = [rng.standard_normal(SHAPE).astype("float32") for _ in range(n)]
    return xs, [numpy_model(x, params) for x in xs]


def in_threads(n: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(t)`` in ``n`` threads started together; the results, or the exceptions."""
    results: list[Any] = [None] * n
    barrier = threading.Barrier(n)

    def body(t: int) -> None:
        barrier.wait()
        try:
            results[t] = work(t)
        except Exception as err:  # reported by the caller
            results[t] = err

    threads = [threading.Thread(target=body, args=(t,)) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


BACKENDS = ["host", "ccompiler", "jsonref", "dnnl"]


@pytest.mark.parametrize("which", ["model", "chain"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_executors_of_one_build_in_parallel_threads(backend, which):
    """4 executors x 4 threads, each thread going round the executors (so every executor is
    also used by several threads at once): every output is right."""
    lib = build(backend, which)
    executors = [graph_executor.GraphModule(lib["default"](tvm.cpu())) for _ in range(4)]
    xs, refs = inputs(8, which)

    def work(t: int) -> int:
        wrong = 0
        for r in range(25):
            k = (t * 5 + r) % len(xs)
            m = executors[(t + r) % len(executors)]
            m.set_input("x", xs[k])
            m.run()
            got = m.get_output(0).numpy()
            wrong += not np.allclose(got, refs[k], rtol=1e-4, atol=1e-4)
        return wrong

    results = in_threads(4, work)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    assert sum(results) == 0


def test_a_shared_executor_keeps_each_threads_inputs_and_outputs():
    lib = build("ccompiler")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xs, refs = inputs(2)
    m.run(x=xs[0])  # this (the first) thread's buffers

    def other(_: int) -> np.ndarray:
        # A new thread sees neither the inputs nor the outputs of the first one.
        with pytest.raises(ExecutorUsageError, match=r"get_output\(0\) before a completed run"):
            m.get_output(0)
        with pytest.raises(ExecutorUsageError, match=r"input 'x' .*was set.*same thread"):
            m.run()
        m.run(x=xs[1])
        return m.get_output(0).numpy()

    (got,) = in_threads(1, other)
    assert not isinstance(got, Exception), got
    np.testing.assert_allclose(got, refs[1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m.get_output(0).numpy(), refs[0], rtol=1e-4, atol=1e-4)


def test_parameters_are_shared_by_the_threads():
    mod, params = model()
    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib())
    xs, refs = inputs(1)
    with pytest.raises(ExecutorUsageError, match=r"before parameter 'p\d+' was set.*get_params"):
        m.run(x=xs[0])
    m.set_input(**lib.get_params())  # in this thread, for all

    def other(_: int) -> np.ndarray:
        m.run(x=xs[0])
        return m.get_output(0).numpy()

    np.testing.assert_allclose(in_threads(1, other)[0], refs[0], rtol=1e-4, atol=1e-4)
    (b2,) = [k for k, v in lib.get_params().items() if v.shape == (64,)]
    m.set_input(b2, params["b2"] * 2)
    doubled = numpy_model(xs[0], dict(params, b2=params["b2"] * 2))
    np.testing.assert_allclose(in_threads(1, other)[0], doubled, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", ["ccompiler", "jsonref"])
def test_executors_created_in_parallel_threads(backend):
    lib = build(backend, "chain")  # the compiled library is loaded by the first binding
    xs, refs = inputs(4, "chain")

    def work(t: int) -> bool:
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.run(x=xs[t])
        return bool(np.allclose(m.get_output(0).numpy(), refs[t], rtol=1e-4, atol=1e-4))

    assert in_threads(4, work) == [True] * 4
