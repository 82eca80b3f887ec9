"""The codegen plug-in interface: relay.ext.<name>, per-function or per-module, optimize hooks."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.byoc import scoped_registries
from relaykit.errors import BackendExecutionError, CodegenError
from relaykit.execution.codegen import (
    get_codegen,
    partition_for_target,
    register_codegen,
    scoped_codegens,
)
from relaykit.runtime import PythonModule


@pytest.fixture(autouse=True)
def _scoped():
    with scoped_registries(), scoped_codegens():
        tvm.ir.register_op_attr("exp", "target.pylib", True)
        tvm.ir.register_op_attr("negative", "target.pylib", True)
        yield


def model():
    x = relay.var("x", shape=(2, 3))
    y = relay.exp(relay.negative(relay.exp(x)))
    z = relay.exp(relay.nn.relu(y))
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(z, y)))


def python_backend(received):
    """A codegen whose runtime module runs each region with NumPy, writing the outputs."""

    def codegen(func):
        received.append(func)
        symbol = func.attrs["global_symbol"]
        ops = [n.op.name for n in tvm.ir.post_order(func.body) if isinstance(n, relay.Call)]

        def run(x, out):
            v = x
            for name in ops:
                v = np.exp(v) if name == "exp" else -v
            np.copyto(out, v)

        return PythonModule("pylib", {symbol: run})

    return codegen


def test_each_partitioned_function_reaches_the_codegen():
    received = []
    register_codegen("pylib", python_backend(received))
    part = partition_for_target(model(), "pylib")
    regions = sorted(gv.name_hint for gv in part.get_global_vars() if gv.name_hint != "main")
    assert len(regions) == 2 and all(r.startswith("tvmgen_default_pylib_main_") for r in regions)
    lib = relay.build(part, target="llvm")
    assert sorted(f.attrs["global_symbol"] for f in received) == regions
    assert all(f.attrs["Compiler"] == "pylib" for f in received)
    assert len(lib.lib.imported_modules) == 2
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    ref = relay.create_executor("debug", mod=model()).evaluate()(x).numpy()
    np.testing.assert_allclose(
        relay.create_executor("graph", mod=part).evaluate()(x).numpy(), ref, rtol=1e-6
    )


def test_tvm_spelling_register_func_relay_ext():
    received = []
    tvm.register_func("relay.ext.pylib", python_backend(received))
    assert get_codegen("pylib").name == "pylib"
    relay.build(partition_for_target(model(), "pylib"), target="llvm")
    assert len(received) == 2
    assert tvm.get_global_func("relay.ext.pylib") is not None


def test_per_module_codegen_gets_all_functions_at_once():
    batches = []
    inner = python_backend([])

    def codegen(funcs):
        batches.append(list(funcs))
        mods = [inner(f) for f in funcs]
        top = PythonModule("pylib", {})
        for m in mods:
            top.import_module(m)
        return top

    register_codegen("pylib", codegen, per_module=True)
    relay.build(partition_for_target(model(), "pylib"), target="llvm")
    assert [len(b) for b in batches] == [2]


def test_optimize_hook_runs_before_partitioning():
    seen = []

    def optimize(mod, params):
        seen.append(params)
        return tvm.transform.SimplifyInference()(mod)

    register_codegen("pylib", python_backend([]), optimize=optimize)
    x = relay.var("x", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(relay.nn.dropout(x))))
    part = partition_for_target(mod, "pylib", params={"unused": np.zeros(1)})
    assert len(seen) == 1 and list(seen[0]) == ["unused"]
    names = [
        n.op.name
        for n in tvm.ir.post_order(part["tvmgen_default_pylib_main_0"])
        if isinstance(n, relay.Call)
    ]
    assert names == ["exp"]  # dropout was simplified away before partitioning


def test_missing_codegen_is_a_clear_error():
    part = partition_for_target(model(), "pylib")
    with pytest.raises(
        CodegenError,
        match=r"no codegen is registered for target 'pylib' "
        r"\(relay.ext.pylib\)",
    ):
        relay.build(part, target="llvm")


@pytest.mark.parametrize(
    "codegen, message",
    [
        (lambda f: "not a module", r"returned str .* must return a runtime Module"),
        (lambda f: PythonModule("pylib", {}), r"has no function 'tvmgen_default_pylib_main_\d'"),
        (
            lambda f: 1 / 0,
            r"codegen of backend 'pylib' failed on tvmgen_default_pylib_main_\d: "
            r"ZeroDivisionError",
        ),
    ],
)
def test_misbehaving_codegens(codegen, message):
    register_codegen("pylib", codegen)
    with pytest.raises(CodegenError, match=message):
        relay.build(partition_for_target(model(), "pylib"), target="llvm")


def test_registering_twice_needs_override():
    register_codegen("pylib", python_backend([]))
    with pytest.raises(CodegenError, match="already registered"):
        register_codegen("pylib", python_backend([]))
    register_codegen("pylib", python_backend([]), override=True)


def test_error_inside_a_python_backend_function():
    def codegen(func):
        def run(x, out):
            raise ValueError("device lost")

        return PythonModule("pylib", {func.attrs["global_symbol"]: run})

    register_codegen("pylib", codegen)
    run = relay.create_executor("graph", mod=partition_for_target(model(), "pylib")).evaluate()
    with pytest.raises(
        BackendExecutionError,
        match=r"error in function tvmgen_default_pylib_main_"
        r"\d of backend 'pylib' \(region ops: exp, "
        r"negative, exp\): ValueError: device lost",
    ):
        run(np.zeros((2, 3), "float32"))
