"""relay.build + the graph executor: TVM's API, the flat plan, errors."""

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.contrib import graph_executor
from relaykit.errors import BuildError, ExecutionError, ExecutorUsageError
from relaykit.execution.graph_executor import GraphExecutor
from relaykit.execution.graph_plan import GraphPlan
from relaykit.testing import resnet

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def two_input_mod():
    x, y = relay.var("x", shape=(2, 3)), relay.var("y", shape=(3,))
    w = relay.var("w", shape=(4, 3))
    out = relay.Tuple([relay.nn.dense(relay.add(x, y), w), relay.exp(x)])
    return tvm.IRModule.from_expr(relay.Function([x, y, w], out))


def test_tvm_graph_module_interface():
    w = rand(4, 3)
    lib = relay.build(two_input_mod(), target="llvm", params={"w": w})
    dev = tvm.cpu(0)
    m = graph_executor.GraphModule(lib["default"](dev))
    x, y = rand(2, 3), rand(3)
    m.set_input("x", x)
    m.set_input(1, tvm.nd.array(y))
    assert m.get_num_inputs() == 2 and m.get_num_outputs() == 2
    assert m.get_input_index("y") == 1
    np.testing.assert_array_equal(m.get_input(0).numpy(), x)
    np.testing.assert_array_equal(m.get_input("y").numpy(), y)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), (x + y) @ w.T, rtol=1e-6)
    np.testing.assert_allclose(m.get_output(1).numpy(), np.exp(x), rtol=1e-6)
    out = tvm.nd.empty((2, 4))
    m.get_output(0, out)
    np.testing.assert_allclose(out.numpy(), (x + y) @ w.T, rtol=1e-6)
    # Outputs are copies: the next run does not change what a caller holds.
    first = m.get_output(1)
    m.run(x=x + 1, y=y)
    np.testing.assert_allclose(first.numpy(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(m.get_output(1).numpy(), np.exp(x + 1), rtol=1e-6)
    # TVM's set_input(**params) tolerates the names bound at build time.
    m.set_input(w=w)
    # Legacy unpacking of relay.build's result.
    graph_json, libmod, params = lib
    assert GraphPlan.from_json(graph_json).input_names == ["x", "y"]
    assert libmod is lib.get_lib() and list(params) == ["p0"]


def test_create_executor_graph_matches_the_interpreter_with_tuples():
    mod = two_input_mod()
    args = (rand(2, 3), rand(3), rand(4, 3))
    got = relay.create_executor("graph", mod=mod).evaluate()(*args)
    ref = relay.create_executor("debug", mod=mod).evaluate()(*args)
    assert isinstance(got, list) and len(got) == 2  # a tuple result is a list, as in TVM
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6)
    # keyword inputs, and params given to create_executor
    ex = relay.create_executor("graph", mod=mod, params={"w": args[2]})
    out = ex.evaluate()(args[0], y=args[1])
    np.testing.assert_allclose(out[0].numpy(), ref[0].numpy(), rtol=1e-6)
    # a closed expression is evaluated at once
    value = relay.create_executor("graph").evaluate(relay.add(relay.const(1.0), relay.const(2.0)))
    assert value.numpy() == 3.0


def test_params_are_bound_and_folded():
    mod, params = resnet.get_workload(1, 10, num_layers=18, image_shape=(3, 32, 32))
    lib = relay.build(mod, target="llvm", params=params)
    ops = [n.name for n in lib.plan.nodes if n.kind == "op"]
    assert "nn.batch_norm" not in ops and "sqrt" not in ops and "divide" not in ops
    assert lib.plan.input_names == ["data"]
    assert set(lib.get_params()) == set(lib.plan.param_names)
    data = rand(1, 3, 32, 32)
    ref = relay.create_executor("debug", mod=mod).evaluate()(data, **params).numpy()
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(data=data)
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-5, atol=1e-6)


def test_plan_is_flat_with_views_and_a_reused_pool():
    mod, params = resnet.get_workload(1, 10, num_layers=18, image_shape=(3, 32, 32))
    lib = relay.build(mod, target="llvm", params=params)
    plan = lib.plan
    flatten = next(n for n in plan.nodes if n.name == "nn.batch_flatten")
    assert flatten.view
    src, dst = plan.entries[flatten.inputs[0]], plan.entries[flatten.outputs[0]]
    assert src.storage == dst.storage
    report = lib.memory_report()
    assert report.planned < report.unplanned / 5
    assert report.live_peak <= report.planned
    ex = lib["default"](tvm.cpu())
    assert ex.num_steps <= plan.num_steps < len(plan.nodes)  # fused epilogues: fewer
    assert "without a plan" in str(ex.memory_report())


def test_executors_of_one_build_are_independent():
    lib = relay.build(two_input_mod(), target="llvm", params={"w": rand(4, 3)})
    a = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    b = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    a.run(x=np.ones((2, 3), "float32"), y=np.zeros(3, "float32"))
    b.run(x=np.zeros((2, 3), "float32"), y=np.zeros(3, "float32"))
    assert a.get_output(1).numpy()[0, 0] == pytest.approx(np.e)
    assert b.get_output(1).numpy()[0, 0] == 1.0


def test_parameters_can_be_replaced_by_name():
    lib = relay.build(two_input_mod(), target="llvm", params={"w": np.zeros((4, 3), "float32")})
    (pname,) = lib.plan.param_names
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    x = rand(2, 3)
    m.set_input("x", x)
    m.set_input(pname, np.ones((4, 3), "float32"))
    m.run(y=np.zeros(3, "float32"))
    np.testing.assert_allclose(
        m.get_output(0).numpy(), x.sum(1, keepdims=True).repeat(4, 1), rtol=1e-5
    )
    assert not lib.params[pname].numpy().any()  # the build's parameters are untouched


@pytest.mark.parametrize(
    "target", [None, "llvm", "llvm -mcpu=skylake", "c", "cpu", {"cpu": "llvm"}]
)
def test_host_targets(target):
    x = relay.var("x", shape=(2,))
    lib = relay.build(relay.Function([x], x + x), target=target)
    assert lib.plan.num_steps == 1


def test_other_targets_are_refused():
    x = relay.var("x", shape=(2,))
    with pytest.raises(BuildError, match="target 'cuda' is not available.*'llvm', 'c' or 'cpu'"):
        relay.build(relay.Function([x], x + x), target="cuda")


def test_target_lists_build_on_the_host_or_name_the_foreign_target():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], x + x)
    assert relay.build(f, target=["llvm", "c"]).plan.num_steps == 1
    cuda = tvm.target.Target("cuda", host=tvm.target.Target("llvm"))
    with pytest.raises(BuildError, match=r"target 'cuda' \(one of the 2 targets given\)"):
        relay.build(f, target=["llvm", cuda])


def test_control_flow_needs_the_vm():
    x = relay.var("x", shape=(), dtype="bool")
    f = relay.Function([x], relay.If(x, relay.const(1.0), relay.const(2.0)))
    with pytest.raises(BuildError, match="cannot run `if`.*create_executor\\('vm'"):
        relay.build(f, target="llvm")


def test_host_functions_and_closures_are_inlined():
    a = relay.var("a", shape=(3,))
    mod = tvm.IRModule()
    helper = relay.GlobalVar("helper")
    mod[helper] = relay.Function([a], relay.exp(a))
    x = relay.var("x", shape=(3,))
    p = relay.var("p", shape=(3,))
    square = relay.Function([p], relay.multiply(p, p))
    v = relay.var("v")
    mod["main"] = relay.Function([x], relay.Let(v, helper(x), square(v)))
    lib = relay.build(mod, target="llvm")
    assert [n.name for n in lib.plan.nodes if n.kind == "op"] == ["exp", "multiply"]
    data = rand(3)
    out = relay.create_executor("graph", mod=mod).evaluate()(data)
    np.testing.assert_allclose(out.numpy(), np.exp(data) ** 2, rtol=1e-6)


def test_input_errors_are_clear():
    lib = relay.build(two_input_mod(), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(
        ExecutionError,
        match=r"input 'x' expects float32\[2, 3\], got an array "
        r"of shape \[3, 2\]",
    ):
        m.set_input("x", np.zeros((3, 2), "float32"))
    with pytest.raises(ExecutionError, match=r"no input 'z'; its inputs are: x, y, w"):
        m.set_input("z", np.zeros(3))
    with pytest.raises(ExecutionError, match="output index 5 out of range"):
        m.get_output(5)


def test_a_failing_host_kernel_names_the_step(monkeypatch):
    from relaykit.backends.host import kernels as host_kernels

    def broken(attrs, args, outs, scratch):
        def run():
            raise ZeroDivisionError("boom")

        return run

    monkeypatch.setitem(host_kernels.kernel_registry, "exp", broken)
    lib = relay.build(two_input_mod(), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(
        ExecutionError,
        match=r"while running %\d+ = exp\(Tensor\[\(2, 3\), "
        r"float32\]\): ZeroDivisionError: boom",
    ):
        m.run(x=rand(2, 3), y=rand(3), w=rand(4, 3))
    # a failed run leaves no outputs to read
    with pytest.raises(ExecutorUsageError, match=r"get_output\(0\) before a completed run"):
        m.get_output(0)


def test_graph_json_and_create():
    w = rand(4, 3)
    lib = relay.build(two_input_mod(), target="llvm", params={"w": w})
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))
    m.set_input(**lib.get_params())
    x, y = rand(2, 3), rand(3)
    m.run(x=x, y=y)
    np.testing.assert_allclose(m.get_output(0).numpy(), (x + y) @ w.T, rtol=1e-6)
    assert isinstance(m.module, GraphExecutor)
    assert m.benchmark(repeat=2, number=2).median > 0


def test_deep_chain_builds_and_runs_without_recursion():
    x = relay.var("x", shape=(4,))
    y = x
    for i in range(20000):
        y = relay.nn.relu(y) if i % 2 else relay.add(y, relay.const(1.0))
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.run(x=np.zeros(4, "float32"))
    np.testing.assert_array_equal(m.get_output(0).numpy(), np.full(4, 10000, "float32"))
    assert lib.memory_report().planned <= 2 * 16  # two 4-float blocks, reused all along


def test_set_input_checks_every_value_and_says_what_to_do():
    lib = relay.build(two_input_mod(), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(ExecutorUsageError, match=r"input 'y' expects an array of float32\[3\]"):
        m.set_input("y", [[1.0, 2.0], [3.0]])  # ragged: NumPy refuses it
    with pytest.raises(ExecutorUsageError, match=r"got <U1 values .*numpy.ndarray"):
        m.set_input("y", ["a", "b", "c"])
    with pytest.raises(ExecutorUsageError, match=r"expects float32\[3\], got complex128"):
        m.set_input("y", np.ones(3, complex))
    with pytest.raises(ExecutorUsageError, match=r"named by a string or an int index, got float"):
        m.set_input(1.0, rand(3))
    with pytest.raises(ExecutorUsageError, match=r"input index -1 out of range \(3 inputs"):
        m.set_input(-1, rand(3))
    with pytest.raises(ExecutorUsageError, match=r"a value but no input"):
        m.set_input(None, rand(3))
    # Values are checked before any is copied: a failing call changes nothing.
    x = rand(2, 3)
    m.set_input("x", x)
    with pytest.raises(ExecutorUsageError, match=r"input 'y' expects float32\[3\], got an array"):
        m.set_input(x=x + 1, y=np.zeros(4, "float32"))
    np.testing.assert_array_equal(m.get_input("x").numpy(), x)
    # Values of another dtype of the same kind are converted, as before.
    m.set_input("y", np.arange(3))
    np.testing.assert_array_equal(m.get_input(1).numpy(), [0.0, 1.0, 2.0])


def test_an_int_input_takes_whole_floats_and_refuses_others():
    x = relay.var("x", shape=(3,), dtype="int32")
    lib = relay.build(relay.Function([x], x + x), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for bad in ([1.0, 2.5, 3.0], [1.0, np.nan, 3.0], [1.0, 2.0**40, 3.0]):
        with pytest.raises(ExecutorUsageError, match=r"expects int32\[3\], got float64: .*astype"):
            m.set_input("x", np.array(bad))
    m.run(x=np.array([1.0, -2.0, 3.0]))  # whole numbers convert, as TVM converts them
    np.testing.assert_array_equal(m.get_output(0).numpy(), [2, -4, 6])
    m.run(x=np.array([1, 2, 3], "int64"))
    np.testing.assert_array_equal(m.get_output(0).numpy(), [2, 4, 6])
    with pytest.raises(ExecutorUsageError, match=r"expects int32\[3\], got int64"):
        m.set_input("x", np.array([1, 2**40, 3], "int64"))  # would wrap around in int32


@pytest.mark.parametrize(
    ("dtype", "edge"),
    [("int64", 2.0**63), ("uint64", 2.0**64), ("int32", 2.0**31), ("uint8", 256.0)],
)
def test_a_whole_float_one_past_the_integer_range_is_refused(dtype, edge):
    # float(iinfo(int64).max) is 2**63 itself: a bound compared in float would let 2**63
    # through, and the cast would wrap it to -2**63
    x = relay.var("x", shape=(2,), dtype=dtype)
    lib = relay.build(relay.Function([x], x), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(ExecutorUsageError, match=rf"expects {dtype}\[2\]"):
        m.set_input("x", np.array([1.0, edge]))
    below = np.array([0.0, edge - 2.0**11 if edge > 2.0**53 else edge - 1.0])
    m.run(x=below)
    np.testing.assert_array_equal(m.get_output(0).numpy(), below.astype(dtype))
    assert int(m.get_output(0).numpy()[1]) == int(below[1])


def test_run_refuses_an_input_never_set():
    lib = relay.build(two_input_mod(), target="llvm", params={"w": rand(4, 3)})
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(
        ExecutorUsageError,
        match=r"before input 'x' \(float32\[2, 3\]\) was set "
        r"\(also not set: y\): call set_input\('x', value\) or run\(x=value\)",
    ):
        m.run()
    m.set_input("x", rand(2, 3))
    with pytest.raises(ExecutorUsageError, match=r"before input 'y' \(float32\[3\]\) was set:"):
        m.run()
    m.run(y=rand(3))  # once set, an input keeps its value from run to run
    m.run()


def test_outputs_are_read_by_index_after_a_run():
    lib = relay.build(two_input_mod(), target="llvm", params={"w": rand(4, 3)})
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    with pytest.raises(ExecutorUsageError, match=r"get_output\(0\) before a completed run"):
        m.get_output(0)
    m.run(x=rand(2, 3), y=rand(3))
    with pytest.raises(ExecutorUsageError, match=r"an int from 0 to 1, got str 'x'.*no names"):
        m.get_output("x")
    with pytest.raises(ExecutorUsageError, match=r"output index -1 out of range \(2 outputs\)"):
        m.get_output(-1)
    with pytest.raises(ExecutorUsageError, match=r"out to be a tvm.nd.NDArray of shape \[2, 4\]"):
        m.get_output(0, tvm.nd.empty((3,)))
    assert m.get_output(np.int64(1)).shape == (2, 3)
    with pytest.raises(ExecutorUsageError, match=r"no input 3; its inputs are: x, y"):
        m.get_input_index(3)
    assert m.get_input_index("no_such_input") == -1  # TVM's answer for an unknown name
    with pytest.raises(ExecutorUsageError, match=r"no input 'no_such_input'"):
        m.get_input("no_such_input")
    with pytest.raises(ExecutorUsageError, match=r"load_params takes a dict"):
        m.load_params(b"\x00")


def test_parameters_are_checked():
    lib = relay.build(two_input_mod(), target="llvm", params={"w": rand(4, 3)})
    m = graph_executor.create(lib.get_graph_json(), lib.get_lib())
    (pname,) = lib.plan.param_names
    with pytest.raises(ExecutorUsageError, match=rf"parameter '{pname}' must be float32\[4, 3\]"):
        m.set_input(**{pname: rand(3, 4)})
    with pytest.raises(ExecutorUsageError, match=rf"parameter '{pname}' expects an array"):
        m.load_params({pname: [[1.0], [2.0, 3.0]]})
    with pytest.raises(ExecutorUsageError, match=rf"before parameter '{pname}' was set"):
        m.run(x=rand(2, 3), y=rand(3))
    m.load_params(lib.get_params())
    m.run()
    assert m.get_output(0).shape == (2, 4)


def test_integer_inputs_of_another_signedness_convert_when_every_value_fits():
    """As TVM's set_input does for an int64 array given to a uint8 input; values that would
    wrap around are refused, not changed."""
    x = relay.var("x", shape=(4,), dtype="uint8")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(1, "uint8"))))
    module = graph_executor.GraphModule(relay.build(mod, target="llvm")["default"](tvm.cpu()))
    module.set_input("x", np.array([0, 1, 200, 254], "int64"))
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), [1, 2, 201, 255])
    with pytest.raises(ExecutorUsageError, match="expects uint8"):
        module.set_input("x", np.array([0, 1, 256, -1], "int64"))


def test_set_input_zero_copy_sets_the_input_as_set_input_does():
    x = relay.var("x", shape=(3, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([x, x + relay.const(1.0)])))
    module = graph_executor.GraphModule(relay.build(mod, target="llvm")["default"](tvm.cpu()))
    data = np.arange(12, dtype="float32").reshape(3, 4)
    module.module["set_input_zero_copy"](module.get_input_index("x"), tvm.nd.array(data))
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), data)
    np.testing.assert_array_equal(module.get_output(1).numpy(), data + 1)
    with pytest.raises(ExecutorUsageError):
        module.module["set_input_zero_copy"]("x", np.zeros((2, 2), "float32"))


def test_inputs_sharing_a_name_are_set_by_index():
    a, b = relay.var("data", shape=(2,)), relay.var("data", shape=(2,))
    w = relay.var("w", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([a, b, w], relay.subtract(a, b) * w))
    lib = relay.build(mod, target="llvm")
    x, y, z = rand(2), rand(2), rand(2)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    assert m.get_num_inputs() == 3 and m.get_input_index("data") == 0
    m.set_input("data", x)  # a name sets the first input of that name
    m.set_input("w", z)
    with pytest.raises(ExecutorUsageError, match=r"set_input\(1, value\)"):
        m.run()
    m.set_input(1, y)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), (x.astype("float64") - y) * z, rtol=1e-6)
    np.testing.assert_array_equal(m.get_input(1).numpy(), y)
    got = relay.create_executor("graph", mod=mod).evaluate()(x, y, w=z)
    np.testing.assert_allclose(got.numpy(), (x.astype("float64") - y) * z, rtol=1e-6)


def test_split_into_one_section_runs_on_every_executor():
    x = relay.var("x", shape=(4, 6))
    parts = relay.split(x, 1, axis=1)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(parts[0]) + parts[0]))
    v = rand(4, 6) - 0.5
    for kind in ("graph", "vm", "debug"):
        got = relay.create_executor(kind, mod=mod).evaluate()(v).numpy()
        np.testing.assert_allclose(got, np.maximum(v, 0) + v, rtol=1e-6)
