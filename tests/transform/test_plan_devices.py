"""PlanDevices: device constraints solved, copies inserted, the plan written into the IR
(relay.transform.PlanDevices, RecoverVirtualDeviceMap)."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import DevicePlanningError
from relaykit.target import Target, VirtualDevice

HOST = Target("llvm")
CPU = VirtualDevice(tvm.cpu(), Target("llvm").with_host(HOST))
GPU = VirtualDevice(tvm.cuda(), Target("cuda").with_host(HOST))
SCOPE_A = VirtualDevice(tvm.cpu(), Target("llvm").with_host(HOST), memory_scope="scopeA")
SCOPE_B = VirtualDevice(tvm.cpu(), Target("llvm").with_host(HOST), memory_scope="scopeB")
META = {"VirtualDevice": [CPU, GPU, SCOPE_A, SCOPE_B]}


def _config(targets=("llvm", "cuda"), fallback=2):
    ctx = tvm.transform.PassContext(config={"relay.fallback_device_type": fallback})
    return tvm.target.make_compilation_config(ctx, [Target(t) for t in targets], HOST)


def _parse(text):
    return relay.transform.InferType()(tvm.relay.parse(text, "from_string", None, META))


def _plan(mod, config=None):
    return relay.transform.PlanDevices(config or _config())(relay.transform.InferType()(mod))


def _check(before, expected, config=None):
    got = _plan(_parse(before), config)
    tvm.ir.assert_structural_equal(got, _parse(expected), True)
    # planning a planned module changes nothing
    tvm.ir.assert_structural_equal(_plan(got, config), got, True)


def test_everything_defaults_to_the_fallback_device():
    _check(
        """
        def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) {
          negative(add(%a, %b))
        }""",
        """
        def @main(%a {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
                  %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][1]) {
          negative(add(%a, %b))
        }""",
    )


def test_an_annotated_operand_is_computed_there_and_copied():
    _check(
        """
        def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32], %c: Tensor[(3), float32]) {
          %0 = multiply(%a, %b);
          %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
          add(%1, %c)
        }""",
        """
        def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
                  %b {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
                  %c {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][1]) {
          %0 = multiply(%a, %b);
          %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
          %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0],
                           dst_virtual_device=meta[VirtualDevice][1]);
          add(%2, %c)
        }""",
    )


def test_a_let_bound_value_gets_its_device_from_its_uses_and_a_function_from_its_body():
    _check(
        """
        def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
          let %f = fn (%p) {
            %0 = exp(%p);
            on_device(%0, virtual_device=meta[VirtualDevice][0])
          };
          let %v = %f(%x);
          subtract(%v, %y)
        }""",
        # %v is on the function's device, and so is its use: the whole of main follows
        """
        def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
                  %y {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][0]) {
          let %f = fn (%p {virtual_device=meta[VirtualDevice][0]},
                       virtual_device=meta[VirtualDevice][0]) {
            exp(%p)
          };
          let %v = on_device(%f(%x), virtual_device=meta[VirtualDevice][0], constrain_result=True);
          subtract(%v, %y)
        }""",
    )


def test_a_global_function_keeps_one_device_per_parameter_for_every_call():
    _check(
        """
        def @f(%a: Tensor[(3), float32], %b: Tensor[(3), float32]) -> Tensor[(3), float32] {
          %0 = on_device(%a, virtual_device=meta[VirtualDevice][0]);
          add(%0, %b)
        }
        def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) -> Tensor[(3), float32] {
          @f(%x, %y)
        }""",
        """
        def @f(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
               %b {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
               virtual_device=meta[VirtualDevice][1]) -> Tensor[(3), float32] {
          %0 = device_copy(%a, src_virtual_device=meta[VirtualDevice][0],
                           dst_virtual_device=meta[VirtualDevice][1]);
          add(%0, %b)
        }
        def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
                  %y {virtual_device=meta[VirtualDevice][1]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][1]) -> Tensor[(3), float32] {
          @f(%x, %y)
        }""",
    )


def test_a_tuple_holding_a_function_puts_it_on_the_tuple_device():
    got = _plan(
        _parse(
            """
        def @main(%x: Tensor[(3), float32]) {
          let %f = fn (%a: Tensor[(3), float32]) { negative(%a) };
          let %t = on_device((%f, %x), virtual_device=meta[VirtualDevice][0]);
          %t.0(%t.1)
        }"""
        )
    )
    inner = got["main"].body.value
    assert [p.virtual_device_ for p in inner.params] == [CPU]
    assert inner.virtual_device_ == CPU
    assert got["main"].params[0].virtual_device_ == CPU


def test_an_argument_pinned_to_two_devices_is_copied_once_for_the_second():
    got = _plan(
        _parse(
            """
        def @main(%a: Tensor[(3), float32], %b: Tensor[(3), float32], %c: Tensor[(3), float32]) {
          %0 = on_device(add(%a, %b), virtual_device=meta[VirtualDevice][0]);
          %1 = on_device(add(%b, %c), virtual_device=meta[VirtualDevice][1]);
          subtract(%0, %1)
        }"""
        )
    )
    text = got.astext(show_meta_data=False)
    assert text.count("device_copy(%b") == 1
    assert got["main"].params[1].virtual_device_ == CPU
    assert got["main"].params[2].virtual_device_ == GPU


def test_contradicting_annotations_raise_a_typed_error_naming_the_call():
    mod = _parse(
        """
        def @f(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(3), float32],
               virtual_device=meta[VirtualDevice][0]) -> Tensor[(3), float32] {
          negative(%a)
        }
        def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
          %0 = on_device(%x, virtual_device=meta[VirtualDevice][1], constrain_result=True);
          @f(%0)
        }"""
    )
    with pytest.raises(DevicePlanningError, match=r"@f.*contradict.*device_copy") as err:
        _plan(mod)
    assert err.value.expr is not None


def test_plan_devices_takes_a_compilation_config():
    with pytest.raises(DevicePlanningError, match="make_compilation_config"):
        relay.transform.PlanDevices("llvm")


def test_primitive_function_bodies_are_not_planned():
    mod = _parse(
        """
        def @main(%d: Tensor[(3), float32]) {
          %0 = fn (%a, Primitive=1) {
            on_device(negative(%a), virtual_device=meta[VirtualDevice][0])
          };
          %0(%d)
        }"""
    )
    got = _plan(mod)
    prim = got["main"].body.op
    assert prim.attrs["Primitive"] == 1 and prim.params[0].virtual_device_ == VirtualDevice()
    assert got["main"].params[0].virtual_device_ == GPU


def test_recover_virtual_device_map_reads_the_plan_back():
    got = _plan(
        _parse(
            """
        def @main(%a: Tensor[(3), float32], %c: Tensor[(3), float32]) {
          %0 = exp(%a);
          %1 = on_device(%0, virtual_device=meta[VirtualDevice][0]);
          add(%1, %c)
        }"""
        )
    )
    recover = tvm._ffi.get_global_func("relay.transform.RecoverVirtualDeviceMap")
    found = recover(got, got["main"])
    fn = got["main"]
    copy = fn.body.args[0]
    assert copy.op.name == "device_copy"
    exp_call = copy.args[0].args[0]
    assert found[fn] == GPU and found[fn.body] == GPU and found[copy] == GPU
    assert found[exp_call] == CPU and found[fn.params[0]] == CPU and found[fn.params[1]] == GPU
    assert not any(isinstance(k, tvm.ir.Op) for k in found)


def test_a_deep_chain_is_planned_without_recursion():
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(20000):
        y = relay.negative(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.annotation.on_device(y, CPU)))
    got = _plan(mod)
    assert got["main"].virtual_device_ == CPU


def test_a_plan_over_cpu_memory_scopes_builds_and_runs():
    """Two scopes of the host CPU: copies are inserted, and every executor runs them."""
    a, b, c = (relay.var(n, shape=(4, 3)) for n in "abc")
    left = relay.annotation.on_device(a * b, SCOPE_A)
    right = relay.annotation.on_device(b - c, SCOPE_B)
    mod = tvm.IRModule.from_expr(relay.Function([a, b, c], relay.add(left, right)))
    planned = _plan(mod, _config(("llvm",), 1))
    assert "device_copy" in planned.astext(show_meta_data=False)
    args = [np.random.default_rng(i).standard_normal((4, 3)).astype("float32") for i in range(3)]
    a64, b64, c64 = (x.astype("float64") for x in args)
    want = a64 * b64 + (b64 - c64)
    for kind in ("debug", "vm", "graph"):
        out = relay.create_executor(kind, mod=planned, target="llvm").evaluate()(*args)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(planned, target="llvm")
    gm = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    gm.run(a=args[0], b=args[1], c=args[2])
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-5, atol=1e-6)


def test_shape_operands_stay_on_the_host():
    host = VirtualDevice(tvm.cpu(), HOST)
    mod = tvm.relay.parse(
        """
        def @main(%x: Tensor[(2, 8), float32]) {
          vm.reshape_tensor(%x, meta[relay.Constant][0], newshape=[4, 4])
        }""",
        "from_string",
        None,
        {"relay.Constant": [relay.const(np.array([4, 4]), "int64")]},
    )
    got = _plan(mod)
    shape_arg = got["main"].body.args[1]
    assert shape_arg.op.name == "on_device" and shape_arg.attrs.virtual_device == host
    assert got["main"].params[0].virtual_device_ == GPU


def test_a_free_on_device_lets_devices_flow_and_allows_a_copy():
    got = _plan(
        _parse(
            """
        def @on_b(%x {virtual_device=meta[VirtualDevice][3]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][3]) -> Tensor[(3), float32] {
          %x
        }
        def @main(%a: Tensor[(3), float32],
                  %b {virtual_device=meta[VirtualDevice][2]}: Tensor[(3), float32],
                  virtual_device=meta[VirtualDevice][3]) {
          %0 = @on_b(on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_body=False));
          %1 = @on_b(on_device(%b, virtual_device=meta[VirtualDevice][0], constrain_body=False));
          add(%0, %1)
        }"""
        ),
        _config(("llvm",), 1),
    )
    main = got["main"]
    assert main.params[0].virtual_device_ == SCOPE_B  # %a took @on_b's scope: no copy
    assert main.params[1].virtual_device_ == SCOPE_A
    second = main.body.args[1].args[0]
    assert second.op.name == "device_copy"
    assert (second.attrs.src_virtual_device, second.attrs.dst_virtual_device) == (
        SCOPE_A,
        SCOPE_B,
    )
    assert main.body.args[0].args[0] is main.params[0]


def test_function_on_device_places_parameters_and_result():
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    f = relay.annotation.function_on_device(
        relay.Function([x, y], relay.negative(x)), ["cpu", tvm.cuda()], "cpu"
    )
    assert f.body.args[0] is f.params[0]  # uses follow the annotated parameter
    got = _plan(tvm.IRModule.from_expr(f))["main"]
    assert [p.virtual_device_ for p in got.params] == [CPU, GPU]
    assert got.virtual_device_ == CPU
    # a parameter declared on one device but computed with another is a contradiction
    g = relay.annotation.function_on_device(relay.Function([x, y], x + y), ["cpu", "cuda"], "cpu")
    with pytest.raises(DevicePlanningError, match=r"contradictory devices for %y: .*cpu.*cuda"):
        _plan(tvm.IRModule.from_expr(g))
