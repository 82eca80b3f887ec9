"""The Backend record and the one backend registry: lookup, laziness, views."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import (
    BUILTIN,
    Backend,
    backend_registry,
    find_backend,
    get_backend,
    register_backend,
    target_key,
)
from relaykit.byoc import configure_target, get_target_spec, partition_for, scoped_registries
from relaykit.errors import BackendError, BackendNotFoundError
from relaykit.execution.codegen import get_codegen, register_codegen, scoped_codegens
from relaykit.ir.op import default_registry
from relaykit.op.contrib import get_pattern_table, register_pattern_table
from relaykit.runtime.module import PythonModule, module_loaders


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_record_is_frozen_and_validated() -> None:
    b = Backend("x", rules={"nn.relu": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.name = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        b.rules["abs"] = True  # type: ignore[index]
    with pytest.raises(BackendError, match="host"):
        Backend("default")
    with pytest.raises(BackendError, match="codegen of backend 'x' must be callable"):
        Backend("x", codegen=3)  # type: ignore[arg-type]
    assert b.key == target_key("x") == "target.x"


def test_builtins_found_by_name() -> None:
    assert set(BUILTIN) == {"ccompiler", "jsonref", "dnnl", "onnxruntime"}
    for name in BUILTIN:
        b = get_backend(name)
        assert b.name == name and b.codegen is not None and b.rules


def test_unknown_backend_is_a_typed_error_with_suggestions() -> None:
    with pytest.raises(BackendNotFoundError, match="Did you mean dnnl") as info:
        get_backend("dnl")
    assert "relaykit.backends" in str(info.value)
    assert find_backend("dnl") is None


def test_views_share_the_record() -> None:
    with scoped_registries(), scoped_codegens():
        cg = lambda f: PythonModule("v", {})  # noqa: E731
        register_codegen("viewed", cg, per_module=True)
        register_pattern_table("viewed", lambda: [])
        configure_target("viewed", min_region_ops=3)
        rec = get_backend("viewed")
        assert rec.codegen is cg and rec.per_module and rec.pattern_table() == []
        assert rec.min_region_ops == 3
        assert get_codegen("viewed").compile is cg
        assert tvm.get_global_func("relay.ext.viewed") is cg
        assert get_target_spec("viewed").min_region_ops == 3
    assert find_backend("viewed") is None
    assert tvm.get_global_func("relay.ext.viewed", allow_missing=True) is None


def _abs_codegen(func: relay.Function) -> PythonModule:
    """A codegen whose module computes ``abs`` with NumPy."""

    def run(x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, np.abs(x))

    return PythonModule("absbackend", {str(func.attrs["global_symbol"]): run})


def test_registered_backend_partitions_builds_and_runs() -> None:
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.abs(x) * relay.const(2.0)))
    with scoped_registries(), scoped_codegens():
        register_backend(Backend("absb", rules={"abs": True}, codegen=_abs_codegen))
        part = partition_for(mod, "absb")
        names = sorted(gv.name_hint for gv in part.get_global_vars())
        assert names == ["main", "tvmgen_default_absb_main_0"]
        assert default_registry.get_attr("abs", target_key("absb")) is True
        lib = relay.build(part, target="llvm")
        assert len(lib.lib.imported_modules) == 1
        data = np.array([-1.0, 2.0, -3.0, 0.5], "float32")
        got = relay.create_executor("graph", mod=part).evaluate()(data).numpy()
        np.testing.assert_allclose(got, np.abs(data) * 2)
    assert default_registry.get_attr("abs", target_key("absb")) is None


def test_module_loader_is_read_from_the_record() -> None:
    def loader(blob: object) -> PythonModule:
        return PythonModule("l", {})

    with backend_registry.scoped():
        register_backend(Backend("ldr", loaders={"ldr_kind": loader}))
        assert module_loaders.get("ldr_kind") is loader
    assert module_loaders.get("ldr_kind") is None
    assert module_loaders.get("jsonref_json") is not None  # built in, found lazily


def test_dnnl_pattern_table_by_name() -> None:
    table = get_pattern_table("dnnl")
    assert table and table[0][0] == "dnnl.conv2d_bias_sum_relu"


def test_import_relaykit_loads_no_backend() -> None:
    proc = _run(
        """
        import sys
        import relaykit
        # the relaykit.contrib namespace (tvm.contrib) is there; no backend in it is loaded
        backends = (
            "relaykit.backends.ccompiler",
            "relaykit.backends.jsonref",
            "relaykit.backends.dnnl",
        )
        heavy = [m for m in sys.modules if m.startswith((*backends, "onednn", "dnnl"))]
        assert "relaykit.contrib.graph_executor" in sys.modules  # tvm.contrib.graph_executor
        assert not heavy, heavy
        fn = relaykit.get_global_func("relay.ext.ccompiler")   # exists, resolved lazily
        assert callable(fn)
        assert "relaykit.backends.ccompiler" in sys.modules
        assert "relaykit.backends.dnnl" not in sys.modules
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_ccompiler_graph_builds_in_a_fresh_interpreter() -> None:
    proc = _run(
        """
        import sys
        import numpy as np
        import relaykit as tvm
        from relaykit import relay
        from relaykit.byoc import partition_for
        from relaykit.contrib import graph_executor

        x = relay.var("x", shape=(2, 8))
        w = relay.const(np.full((4, 8), 0.5, "float32"))
        y = relay.nn.relu(relay.nn.dense(x, w))
        mod = tvm.IRModule.from_expr(relay.Function([x], y))
        assert "relaykit.backends.ccompiler" not in sys.modules
        part = partition_for(mod, "ccompiler")
        assert any("ccompiler" in gv.name_hint for gv in part.get_global_vars())
        text = part.astext()
        lib = relay.build(tvm.parse(text), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        data = np.arange(16, dtype="float32").reshape(2, 8) - 8
        m.set_input("x", data)
        m.run()
        ref = np.maximum(data @ np.full((4, 8), 0.5, "float32").T, 0)
        np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5)
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_tvm_relay_op_contrib_dnnl_loads_on_first_use() -> None:
    proc = _run(
        """
        import sys
        import relaykit as tvm
        from relaykit import relay
        assert "relaykit.backends.dnnl" not in sys.modules
        fn = relay.op.contrib.dnnl.partition_for_dnnl
        assert fn.__module__ == "relaykit.backends.dnnl.partition"
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_rules_are_read_from_the_record_and_an_explicit_attribute_wins() -> None:
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(relay.abs(x))))
    with scoped_registries():
        register_backend(Backend("recb", rules={"abs": True, "nn.relu": True}))
        assert default_registry.ops_with_attr(target_key("recb")) == []  # nothing copied
        assert default_registry.get_attr("abs", target_key("recb")) is True
        tvm.ir.register_op_attr("abs", target_key("recb"), False)  # TVM's default level
        part = partition_for(mod, "recb")
        assert [f.body.op.name for gv, f in part.functions.items() if gv.name_hint != "main"] == [
            "nn.relu"
        ]
    assert default_registry.get_attr("abs", target_key("recb")) is None


def test_importing_a_builtin_backend_registers_nothing() -> None:
    proc = _run(
        """
        from relaykit.backends import backend_registry
        from relaykit.ir.op import default_registry
        from relaykit.runtime.registry import func_registry

        before = (list(backend_registry), sorted(func_registry), default_registry.snapshot())
        import relaykit.backends.ccompiler, relaykit.backends.dnnl, relaykit.backends.jsonref
        after = (list(backend_registry), sorted(func_registry), default_registry.snapshot())
        assert before == after, (before[:2], after[:2])
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
