"""Tensor arrays of the Prelude (dynamic rank and static shape), run on the interpreter
and the VM, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import IRError
from relaykit.relay.prelude import Prelude, StaticTensorArrayOps, get_tensor_array_shape
from relaykit.runtime.container import ADT

KINDS = ["debug", "vm"]


def _tensors(value: object) -> list[np.ndarray]:
    """The tensors held by a result: a tensor, a tensor_t value, or a List of them."""
    if isinstance(value, ADT):
        out: list[np.ndarray] = []
        for field in value:
            out.extend(_tensors(field))
        return out
    return [np.asarray(value.numpy() if hasattr(value, "numpy") else value)]


def _run(mod: tvm.IRModule, kind: str, *args: object) -> list[np.ndarray]:
    return _tensors(relay.create_executor(kind, mod=mod).evaluate()(*args))


@pytest.mark.parametrize("kind", KINDS)
def test_dynamic_write_stack_and_untyped_parameters(kind: str) -> None:
    mod = tvm.IRModule()
    p = Prelude(mod)
    v = relay.var("v")  # typed by inference through tensor1_float32's field
    w = relay.var("w", shape=(2,), dtype="float32")
    tensor1 = p.get_tensor_ctor("tensor1", "float32")
    ta = p.get_global_var("tensor_array", "float32")(relay.const(3))
    write = p.get_global_var("tensor_array_write", "float32")
    for i in range(3):
        ta = write(ta, relay.const(i), tensor1(v if i != 1 else w))
    mod["main"] = relay.Function([v, w], p.get_global_var("tensor_array_stack", "float32")(ta))
    x = np.array([1.5, -2.0], dtype="float32")
    y = np.array([4.0, 0.25], dtype="float32")
    (got,) = _run(mod, kind, x, y)
    np.testing.assert_allclose(got, np.stack([x, y, x]))


@pytest.mark.parametrize("kind", KINDS)
def test_dynamic_split_then_concat(kind: str) -> None:
    mod = tvm.IRModule()
    p = Prelude(mod)
    tensor2 = p.get_tensor_ctor("tensor2", "int32")
    value, lengths = relay.var("value"), relay.var("lengths")
    ta = p.get_global_var("tensor_array", "int32")(relay.const(3))
    split = p.get_global_var("tensor_array_split", "int32")(ta, tensor2(value), lengths)
    mod["main"] = relay.Function(
        [value, lengths], p.get_global_var("tensor_array_concat", "int32")(split)
    )
    data = np.arange(18, dtype="int32").reshape(6, 3)
    (got,) = _run(mod, kind, data, np.array([1, 3, 2], dtype="int32"))
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("kind", KINDS)
def test_dynamic_unstack_rank2(kind: str) -> None:
    mod = tvm.IRModule()
    p = Prelude(mod)
    t = relay.var("t")
    mod["main"] = relay.Function(
        [t], p.get_global_var("tensor_array_unstack_tensor2", "float64")(t)
    )
    data = np.random.default_rng(0).standard_normal((3, 4))
    got = _run(mod, kind, data)
    assert len(got) == 3
    for row, expected in zip(got, data, strict=True):
        np.testing.assert_allclose(row, expected)


@pytest.mark.parametrize("kind", KINDS)
def test_static_scatter_and_gather(kind: str) -> None:
    mod = tvm.IRModule()
    p = Prelude(mod)
    ops = StaticTensorArrayOps(p, "float32", [2])
    ops.register()
    ctor = ops.get_ctor("tensor_constructor")
    write = ops.get_global_var("tensor_array_write")
    xs = [relay.var(f"x{i}") for i in range(3)]
    ta = ops.get_global_var("tensor_array")(relay.const(3))
    for i, x in enumerate(xs):
        ta = write(ta, relay.const(i), ctor(x))
    vals = ops.get_global_var("tensor_array")(relay.const(1))
    y = relay.var("y")
    vals = write(vals, relay.const(0), ctor(y))
    idx, pick = relay.var("idx"), relay.var("pick")
    scattered = ops.get_global_var("tensor_array_scatter")(ta, idx, vals)
    out = ops.get_global_var("tensor_array_gather")(scattered, pick)
    mod["main"] = relay.Function([*xs, y, idx, pick], out)
    rng = np.random.default_rng(1)
    data = [rng.standard_normal(2).astype("float32") for _ in range(4)]
    (got,) = _run(
        mod, kind, *data, np.array([1], dtype="int32"), np.array([2, 1, 0], dtype="int32")
    )
    np.testing.assert_allclose(got, np.stack([data[2], data[3], data[0]]))


def test_static_names_and_shape_lookup() -> None:
    mod = tvm.IRModule()
    p = Prelude(mod)
    StaticTensorArrayOps(p, "int8", []).register()
    StaticTensorArrayOps(p, "float32", [relay.Any(), 3]).register()
    assert p.get_name_static("tensor_t", "int8", []) == "static_tensor_int8_scalar_t"
    names = {g.name_hint for g in mod.get_global_vars()}
    assert "tensor_array_concat_float32_any_3" in names
    assert "tensor_take_int8_scalar" not in names  # no take of a scalar
    ta = p.get_global_var_static("tensor_array", "float32", [relay.Any(), 3])(relay.const(2))
    shape = get_tensor_array_shape(ta, "float32", p)
    assert shape is not None and len(shape) == 2 and shape[1] == 3
    assert isinstance(shape[0], relay.Any)
    with pytest.raises(IRError, match="has no constructor tensor9_float32"):
        p.get_tensor_ctor("tensor9", "float32")


@pytest.mark.parametrize("kind", ["graph", "vm", "debug"])
def test_prelude_module_with_a_static_main_builds(kind: str) -> None:
    # the Prelude's tensor arrays are dynamic; a static main that does not use them runs
    # on every executor (only what main reaches is built)
    mod = tvm.IRModule()
    Prelude(mod)
    x = relay.var("x", shape=(2,))
    mod["main"] = relay.Function([x], relay.exp(x))
    data = np.array([0.5, -1.0], dtype="float32")
    got = relay.create_executor(kind, mod=mod).evaluate()(data).numpy()
    np.testing.assert_allclose(got, np.exp(data.astype("float64")), rtol=1e-6)
