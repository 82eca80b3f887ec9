"""The Relay VM: bytecode, control flow, closures, ADTs, BYOC regions, serialisation.

Every expected value is computed independently with NumPy or plain Python.
"""

import json
import shutil
import struct
import zipfile

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.backends import ccompiler
from relaykit.errors import (
    ArtifactCorruptError,
    ArtifactError,
    ExecutionError,
    ExecutorUsageError,
)
from relaykit.relay.loops import while_loop
from relaykit.relay.prelude import Prelude
from relaykit.runtime.vm import ADT, VirtualMachine
from relaykit.runtime.vm.executable import _from_header
from relaykit.testing import mlp

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def run(mod, *args, params=None):
    exe = relay.vm.compile(mod, target="llvm", params=params)
    return VirtualMachine(exe, tvm.cpu()).invoke("main", *args)


def to_list(value):
    if isinstance(value, ADT):
        return [x for f in value for x in to_list(f)]
    return [value.numpy().item()]


def test_straight_line_graph_matches_numpy():
    x = relay.var("x", shape=(3, 4))
    w = relay.var("w", shape=(5, 4))
    y = relay.nn.relu(relay.nn.dense(x, w)) * relay.const(2.0)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.softmax(y)))
    xv, wv = rand(3, 4), rand(5, 4)
    z = np.maximum(xv @ wv.T, 0) * 2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    got = run(mod, xv, wv).numpy()
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_repeated_runs_with_planned_storage_give_fresh_results():
    x = relay.var("x", shape=(4,))
    y = relay.exp(relay.add(x, x))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.negative(y)))
    exe = relay.vm.compile(mod, target="llvm")
    assert "alloc_tensor" in exe.bytecode  # the intermediate has planned storage
    vm = VirtualMachine(exe, tvm.cpu())
    a, b = rand(4), rand(4)
    ra = vm.invoke("main", a)
    rb = vm.invoke("main", b)
    np.testing.assert_allclose(ra.numpy(), -np.exp(2 * a), rtol=1e-6)
    np.testing.assert_allclose(rb.numpy(), -np.exp(2 * b), rtol=1e-6)


def test_if_selects_the_branch():
    x = relay.var("x", shape=(2,))
    c = relay.var("c", shape=(), dtype="bool")
    f = relay.Function([c, x], relay.If(c, x + relay.const(1.0), x * relay.const(3.0)))
    mod = tvm.IRModule.from_expr(f)
    xv = rand(2)
    np.testing.assert_allclose(run(mod, np.array(True), xv).numpy(), xv + 1, rtol=1e-6)
    np.testing.assert_allclose(run(mod, np.array(False), xv).numpy(), xv * 3, rtol=1e-6)


def test_deep_recursion_runs_on_the_vm_frame_stack():
    """sum(n) = n + sum(n - 1) to 10,000 levels: no Python recursion."""
    mod = tvm.IRModule()
    total = relay.GlobalVar("total")
    n = relay.var("n", shape=(), dtype="int32")
    body = relay.If(
        relay.equal(n, relay.const(0)),
        relay.const(0),
        n + total(n - relay.const(1)),
    )
    mod[total] = relay.Function([n], body, relay.TensorType((), "int32"))
    k = relay.var("k", shape=(), dtype="int32")
    mod["main"] = relay.Function([k], total(k))
    assert int(run(mod, np.array(10_000, "int32")).numpy()) == sum(range(10_001))


def test_while_loop_counts():
    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(), dtype="int32")
    loop = while_loop(
        lambda i, s: i < relay.const(5000), [i, s], lambda i, s: [i + relay.const(1), s + i]
    )
    out = relay.TupleGetItem(loop(relay.const(0), relay.const(0)), 1)
    mod = tvm.IRModule.from_expr(relay.Function([], out))
    assert int(run(mod).numpy()) == sum(range(5000))


def test_closures_capture_their_environment():
    x = relay.var("x", shape=())
    y = relay.var("y", shape=())
    inner = relay.Function([x], x * y)
    outer = relay.Function([y], inner)
    a = relay.var("a", shape=())
    mod = tvm.IRModule.from_expr(relay.Function([a], outer(a)(relay.const(5.0))))
    assert float(run(mod, np.array(3.0, "float32")).numpy()) == 15.0


def test_tuples_in_and_out():
    t = relay.var("t", relay.TupleType([relay.TensorType((2,)), relay.TensorType((3,))]))
    f = relay.Function([t], relay.Tuple([relay.TupleGetItem(t, 1), relay.TupleGetItem(t, 0)]))
    mod = tvm.IRModule.from_expr(f)
    a, b = rand(2), rand(3)
    out = run(mod, (a, b))
    assert isinstance(out, tvm.runtime.container.ADT) and len(out) == 2
    np.testing.assert_array_equal(out[0].numpy(), b)
    np.testing.assert_array_equal(out[1].numpy(), a)


def test_split_and_concatenate():
    x = relay.var("x", shape=(6,))
    parts = relay.split(x, 3).astuple()
    y = relay.concatenate([relay.TupleGetItem(parts, 2), relay.TupleGetItem(parts, 0)], 0)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    xv = rand(6)
    np.testing.assert_array_equal(run(mod, xv).numpy(), np.concatenate([xv[4:], xv[:2]]))


def make_list(cons, nil, values):
    lst = nil()
    for v in reversed(values):
        lst = cons(relay.const(v), lst)
    return lst


def test_prelude_list_functions():
    mod = tvm.IRModule()
    Prelude(mod)
    _, cons, nil = mod.get_type("List")
    values = [4, 1, 7, 3]
    x = relay.var("x", "int32")
    plus_ten = relay.Function([x], x + relay.const(10))
    lst = make_list(cons, nil, values)
    g = mod.get_global_var
    mod["main"] = relay.Function([], g("map")(plus_ten, lst))
    assert to_list(run(mod)) == [v + 10 for v in values]
    mod["main"] = relay.Function([], g("length")(lst))
    assert int(run(mod).numpy()) == len(values)
    mod["main"] = relay.Function([], g("sum")(lst))
    assert int(run(mod).numpy()) == sum(values)
    mod["main"] = relay.Function([], g("nth")(lst, relay.const(2)))
    assert int(run(mod).numpy()) == values[2]
    mod["main"] = relay.Function([], g("rev")(lst))
    assert to_list(run(mod)) == values[::-1]
    gt = relay.Function([x], x > relay.const(2))
    mod["main"] = relay.Function([], g("filter")(gt, lst))
    assert to_list(run(mod)) == [v for v in values if v > 2]
    acc, y = relay.var("acc"), relay.var("y")
    mod["main"] = relay.Function(
        [], g("foldr")(relay.Function([y, acc], cons(y, cons(y, acc))), nil(), lst)
    )
    assert to_list(run(mod)) == [v for v in values for _ in range(2)]


def test_match_failure_is_an_execution_error():
    mod = tvm.IRModule()
    Prelude(mod)
    lst, cons, nil = mod.get_type("List")
    hd = mod.get_global_var("hd")
    mod["main"] = relay.Function([], hd(cons(relay.const(1), nil())))
    assert int(run(mod).numpy()) == 1
    empty = relay.var("e", relay.TypeCall(lst, [relay.TensorType((), "int32")]))
    mod["hd_of"] = relay.Function([empty], hd(empty))
    mod["main"] = relay.Function([], mod.get_global_var("hd_of")(nil()))
    with pytest.raises(ExecutionError, match="no clause matches"):
        run(mod)


def test_vm_matches_interpreter_on_mlp():
    mod, params = mlp.get_workload(batch_size=2)
    data = rand(2, 1, 28, 28)
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(data).numpy()
    got = relay.create_executor("vm", mod=mod, params=params).evaluate()(data).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_runtime_shape_mismatch_names_the_operator_and_both_shapes():
    x = relay.var("x", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.exp(x) + relay.const(1.0)))
    exe = relay.vm.compile(mod, target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    with pytest.raises(ExecutionError, match=r"exp.*\(4, 3\).*Tensor\[\(2, 3\), float32\]"):
        vm.invoke("main", rand(4, 3))


def test_partitioned_ccompiler_model_runs_its_regions_in_the_vm():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    x = relay.var("x", shape=(4, 4))
    y = relay.var("y", shape=(4, 4))
    z = relay.tanh(relay.add(x, y) * y)
    f = relay.Function([x, y], relay.subtract(z, x))
    mod = ccompiler.partition_for_ccompiler(tvm.IRModule.from_expr(f))
    regions = [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint != "main"]
    assert regions
    exe = relay.vm.compile(mod, target="llvm")
    assert [p.kind for p in exe.mod.primitives].count("extern") >= 1
    xv, yv = rand(4, 4), rand(4, 4)
    got = VirtualMachine(exe, tvm.cpu()).invoke("main", xv, yv).numpy()
    np.testing.assert_allclose(got, np.tanh((xv + yv) * yv) - xv, rtol=1e-5, atol=1e-6)


def small_model():
    x = relay.var("x", shape=(3,))
    c = relay.const(np.arange(3, dtype="float32"))
    f = relay.Function(
        [x], relay.If(relay.const(True), relay.Tuple([x + c, x]), relay.Tuple([x, x]))
    )
    return tvm.IRModule.from_expr(f), np.arange(3, dtype="float32")


def test_save_and_load_exec_round_trip():
    mod, c = small_model()
    exe = relay.vm.compile(mod, target="llvm")
    code, lib = exe.save()
    loaded = relay.vm.Executable.load_exec(code, lib)
    xv = rand(3)
    out = VirtualMachine(loaded, tvm.cpu()).invoke("main", xv)
    np.testing.assert_allclose(out[0].numpy(), xv + c)
    bad = bytearray(code)
    bad[20:40] = b"x" * 20
    with pytest.raises(ArtifactCorruptError):
        relay.vm.Executable.load_exec(bad, lib)


def test_export_library_round_trip_and_tampered_file_is_refused(tmp_path):
    mod, c = small_model()
    exe = relay.vm.compile(mod, target="llvm")
    path = str(tmp_path / "vm.rkmod")
    exe.mod.export_library(path)
    loaded = tvm.runtime.load_module(path)
    xv = rand(3)
    out = VirtualMachine(loaded, tvm.cpu()).invoke("main", xv)
    np.testing.assert_allclose(out[0].numpy(), xv + c)
    np.testing.assert_array_equal(out[1].numpy(), xv)
    # rewrite the bytecode inside the file: the integrity check refuses it
    bad = str(tmp_path / "bad.rkmod")
    changed = False
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if b'"primitives"' in data and b'"functions"' in data:  # the bytecode
                header = json.loads(data)
                header["functions"][0]["code"][-1][1] = 0  # return another register
                data = json.dumps(header).encode()
                changed = True
            zout.writestr(info, data)
    assert changed
    with pytest.raises(ArtifactError):
        tvm.runtime.load_module(bad)


def test_loaded_bytecode_is_validated():
    mod, _ = small_model()
    exe = relay.vm.compile(mod, target="llvm")
    header = exe.mod.header()
    header["functions"][0]["code"][0] = [2, 0, [12345], 1, 0]  # register out of range
    with pytest.raises(ArtifactCorruptError, match="register out of range"):
        _from_header(header, {f"const_{i}": c for i, c in enumerate(exe.mod.constants)})


def test_set_input_and_get_outputs():
    x = relay.var("a", shape=(3,))
    y = relay.var("b", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.Tuple([x - y, x])))
    vm = VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    assert vm.get_input_index("b") == 1 and vm.get_input_index("zz") == -1
    a, b = rand(3), rand(3)
    vm.set_input("main", b=b, a=a)
    vm.invoke_stateful("main")
    outs = vm.get_outputs()
    np.testing.assert_allclose(outs[0].numpy(), a - b)
    np.testing.assert_array_equal(outs[1].numpy(), a)


def test_shared_shape_dependent_planned_buffers_are_not_returned():
    """A value computed into planned storage and then reshaped (a view) must not leak
    the planned buffer to the caller: two runs keep their own results."""
    x = relay.var("x", shape=(2, 3))
    y = relay.reshape(relay.exp(x), (3, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    vm = VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    a, b = rand(2, 3), rand(2, 3)
    ra = vm.invoke("main", a)
    vm.invoke("main", b)
    np.testing.assert_allclose(ra.numpy(), np.exp(a).reshape(3, 2), rtol=1e-6)


def test_let_chain_of_many_bindings_compiles_without_recursion():
    x = relay.var("x", shape=())
    body = x
    vars_ = []
    for i in range(3000):
        v = relay.var(f"v{i}", shape=())
        vars_.append((v, body + relay.const(1.0)))
        body = v
    expr = body
    for v, value in reversed(vars_):
        expr = relay.Let(v, value, expr)
    mod = tvm.IRModule.from_expr(relay.Function([x], expr))
    assert float(run(mod, np.array(0.5, "float32")).numpy()) == 3000.5


def test_interpreter_runs_adt_programs_too():
    mod = tvm.IRModule()
    Prelude(mod)
    _, cons, nil = mod.get_type("List")
    x = relay.var("x", "int32")
    double = relay.Function([x], x * relay.const(2))
    values = [3, 1, 2]
    mod["main"] = relay.Function(
        [], mod.get_global_var("map")(double, make_list(cons, nil, values))
    )
    got = relay.create_executor("debug", mod=mod).evaluate()()
    assert to_list(got) == [2 * v for v in values]
    mod["main"] = relay.Function([], mod.get_global_var("sum")(make_list(cons, nil, values)))
    assert int(relay.create_executor("debug", mod=mod).evaluate()().numpy()) == sum(values)


def test_dynamic_batch_model_runs_any_batch_from_one_artifact(tmp_path):
    x = relay.var("x", shape=(relay.Any(), 8))
    w1, w2 = rand(16, 8), rand(4, 16)
    h = relay.nn.relu(relay.nn.dense(x, relay.const(w1)))
    out = relay.nn.softmax(relay.nn.dense(h, relay.const(w2)))
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    path = str(tmp_path / "dyn.rkmod")
    relay.vm.compile(mod, target="llvm").mod.export_library(path)
    vm = VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    for batch in (1, 3, 8):
        data = rand(batch, 8)
        z = np.maximum(data @ w1.T, 0) @ w2.T
        e = np.exp(z - z.max(axis=1, keepdims=True))
        got = vm.invoke("main", data).numpy()
        np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    with pytest.raises(ExecutionError, match=r"nn.dense.*\(2, 7\)"):
        vm.invoke("main", rand(2, 7))


def test_a_tensor_in_a_one_element_list_is_that_tensor_as_on_tvms_vm():
    x = relay.var("x", shape=(), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], x + relay.const(2.0)))
    vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    v = np.array(1.5, "float32")
    assert float(vm.invoke("main", [v]).numpy()) == 3.5
    assert float(vm.invoke("main", (tvm.nd.array(v),)).numpy()) == 3.5
    # A list of numbers is still an array (of shape (1,), which the type refuses).
    with pytest.raises(ExecutionError, match=r"add argument 0.*\(1,\)"):
        vm.invoke("main", [1.5])


def test_returned_outputs_are_allocated_in_the_body_and_branches_still_jump_right():
    # Each branch's result leaves the function: alloc_storage/alloc_tensor are emitted
    # before its call (as TVM's VM does), which moves the jump targets.
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2, 3))
    w = rand(2, 3)
    then = relay.nn.relu(relay.add(x, relay.const(w)))
    other = relay.negative(relay.exp(x))
    mod = tvm.IRModule.from_expr(relay.Function([c, x], relay.If(c, then, other)))
    exe = relay.vm.compile(mod, target="llvm")
    body = [line for line in exe.bytecode.splitlines() if line[:1].isdigit()]
    assert sum("alloc_tensor" in line for line in body) == 2
    vm = VirtualMachine(exe, tvm.cpu())
    xv = rand(2, 3)
    results = []
    for flag in (True, False, True, False):
        results.append(vm.invoke("main", np.array(flag), xv).numpy())
    for flag, got in zip((True, False, True, False), results, strict=True):
        want = np.maximum(xv + w, 0) if flag else -np.exp(xv)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert results[0] is not results[2]


def test_bytecode_format_1_still_loads_and_an_unknown_format_is_refused():
    mod, c = small_model()
    exe = relay.vm.compile(mod, target="llvm")

    def with_format(fmt):
        header = json.dumps({**exe.mod.header(), "format": fmt}).encode()
        code = bytes(exe.save()[0])
        (n,) = struct.unpack_from("<Q", code, 8)
        return code[:8] + struct.pack("<Q", len(header)) + header + code[16 + n :]

    old = relay.vm.Executable.load_exec(with_format(1), exe.lib)
    got = VirtualMachine(old, tvm.cpu()).invoke("main", c)
    np.testing.assert_allclose(got[0].numpy(), 2 * c)
    with pytest.raises(ArtifactCorruptError, match="unknown format"):
        relay.vm.Executable.load_exec(with_format(99), exe.lib)


def test_an_int_input_takes_whole_floats_and_refuses_fractions():
    x = relay.var("x", shape=(3,), dtype="int64")
    mod = tvm.IRModule.from_expr(relay.Function([x], x * relay.const(2, "int64")))
    got = run(mod, np.array([1.0, -2.0, 3.0])).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [2, -4, 6])
    with pytest.raises(ExecutorUsageError, match="expects Tensor"):
        run(mod, np.array([1.0, 2.5, 3.0]))
    with pytest.raises(ExecutorUsageError, match="expects Tensor"):
        run(mod, [1.0, 2.5, 3.0])  # a Python list too (it used to be truncated)
    np.testing.assert_array_equal(run(mod, [1.0, -2.0, 3.0]).numpy(), [2, -4, 6])
