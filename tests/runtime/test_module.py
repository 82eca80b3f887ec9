"""Runtime modules: functions by symbol, imports, global functions, compiled C modules."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit.errors import (
    ArtifactCorruptError,
    ExecutionError,
    FunctionNotFoundError,
    RelayKitError,
)
from relaykit.execution.codegen import CSourceCodegen
from relaykit.runtime import PythonModule
from relaykit.runtime.registry import func_registry


def test_functions_are_found_in_imported_modules():
    leaf = PythonModule("leaf", {"f": lambda: "leaf"})
    root = PythonModule("root", {"g": lambda: "root"})
    root.import_module(leaf)
    assert root["f"]() == "leaf" and root.get_function("g")() == "root"
    assert root.implements_function("f", query_imports=True)
    assert not root.implements_function("f")
    with pytest.raises(FunctionNotFoundError, match="has no function 'h' or its imported modules"):
        root["h"]
    with pytest.raises(RelayKitError, match="cannot be exported"):
        root.export_library("/tmp/never-written.rkmod")


def test_global_function_registry():
    with func_registry.scoped():
        tvm.register_func("demo.f", lambda: 1)
        with pytest.raises(RelayKitError, match="already registered"):
            tvm.register_func("demo.f", lambda: 2)
        tvm.register_func("demo.f", lambda: 3, override=True)
        assert tvm.get_global_func("demo.f")() == 3
        with pytest.raises(RelayKitError, match="did you mean demo.f"):
            tvm.get_global_func("demo.g")
    assert tvm.get_global_func("demo.f", allow_missing=True) is None


def _c_module():
    from relaykit import relay

    gen = CSourceCodegen("demo")

    @gen.emitter("add")
    def add(ctx, call, ins, outs):
        a, b, o = ins[0], ins[1], outs[0]
        ctx.line(f"for (int i = 0; i < {o.size}; ++i) {o.name}[i] = {a.name}[i] + {b.name}[i];")

    x = relay.var("x", shape=(3,))
    f = relay.Function([x], relay.add(x, relay.const(np.array([1, 2, 3], "float32"))))
    f = f.with_attr("global_symbol", "demo_add")
    tvm.transform.infer_type(f)
    return gen(f)


def test_compiled_c_module_called_directly():
    mod = _c_module()
    out = mod["demo_add"](np.zeros(3, "float32"))
    assert out.tolist() == [1.0, 2.0, 3.0]
    dst = np.empty(3, "float32")
    mod["demo_add"](np.ones(3, "float32"), dst)
    assert dst.tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(
        ExecutionError,
        match=r"input 0 of function demo_add must be "
        r"float32\[3\], got float64\[3\]",
    ):
        mod["demo_add"](np.zeros(3))
    with pytest.raises(ExecutionError, match="must be a C-contiguous writeable array"):
        mod["demo_add"](np.zeros(3, "float32"), np.zeros(6, "float32")[::2])


def test_library_with_a_wrong_hash_is_never_loaded():
    mod = _c_module()
    mod.library_sha256 = "0" * 64
    with pytest.raises(ArtifactCorruptError, match="does not match its recorded SHA-256"):
        mod["demo_add"](np.zeros(3, "float32"))
