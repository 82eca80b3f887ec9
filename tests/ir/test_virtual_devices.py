"""VirtualDevice values (join, default), virtual devices on variables and functions, and
the compilation config that makes them canonical."""

from __future__ import annotations

import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.errors import ArgumentError, ImmutableError
from relaykit.target import Target, VirtualDevice, make_compilation_config
from relaykit.target.virtual_device import default_virtual_device, join_virtual_devices


def test_fields_and_the_target_implied_device_type():
    vd = VirtualDevice(tvm.cuda(2), "cuda", memory_scope="texture")
    assert (vd.device_type, vd.virtual_device_id, vd.memory_scope) == (2, 2, "texture")
    assert VirtualDevice(None, Target("llvm")).device_type == 1
    assert VirtualDevice().is_fully_unconstrained and not VirtualDevice()
    with pytest.raises(ArgumentError, match="runs on device type 2"):
        VirtualDevice(tvm.cpu(), Target("cuda"))
    with pytest.raises(AttributeError):
        vd.memory_scope = "global"


def test_join_fills_open_fields_and_refuses_disagreement():
    a = VirtualDevice(tvm.cpu(), "llvm")
    scoped = VirtualDevice(memory_scope="global")
    joined = join_virtual_devices(a, scoped)
    assert joined == VirtualDevice(tvm.cpu(), "llvm", "global")
    assert join_virtual_devices(a, VirtualDevice(tvm.cuda())) is None
    assert join_virtual_devices(joined, VirtualDevice(memory_scope="texture")) is None
    # targets that differ only by their host do not join
    hosted = VirtualDevice(tvm.cpu(), Target("llvm").with_host(Target("llvm")))
    assert join_virtual_devices(a, hosted) is None


def test_default_takes_a_target_only_for_the_same_device_type():
    gpu = VirtualDevice(tvm.cuda(), "cuda")
    got = default_virtual_device(VirtualDevice(tvm.cpu()), gpu)
    assert got.device_type == 1 and got.target is None
    assert default_virtual_device(VirtualDevice(memory_scope="s"), gpu).target == Target("cuda")


def test_variables_and_functions_carry_a_virtual_device():
    x = relay.var("x", shape=(2,))
    x.virtual_device_ = tvm.cpu()
    assert x.virtual_device_.device_type == 1
    f = relay.Function([x], x)
    assert not f.virtual_device_
    g = f.with_fields(virtual_device_=VirtualDevice(tvm.cpu()))
    assert g.virtual_device_.device_type == 1 and g.body is x
    with pytest.raises(ImmutableError):
        x.name_hint = "y"
    with pytest.raises(tvm.error.TVMError, match="must be a VirtualDevice"):
        relay.Var("z", virtual_device="cpu")


def test_compilation_config_falls_back_and_canonicalises():
    ctx = tvm.transform.PassContext(config={"relay.fallback_device_type": 2})
    cfg = make_compilation_config(ctx, [Target("llvm"), Target("cuda")])
    assert cfg.default_primitive_virtual_device.device_type == 2
    assert cfg.default_primitive_virtual_device.target.kind.name == "cuda"
    assert cfg.host_virtual_device.target == Target("llvm")
    canon = cfg.canonical_virtual_device(VirtualDevice(tvm.cpu()))
    assert canon.target is cfg.primitive_targets[0]
    with pytest.raises(ArgumentError, match="no target of the build runs on device type 4"):
        cfg.canonical_virtual_device(VirtualDevice(tvm.opencl()))
    assert (
        make_compilation_config(None, ["llvm", "cuda"]).default_primitive_virtual_device.device_type
        == 1
    )
    bad = tvm.transform.PassContext(config={"relay.fallback_device_type": "cuda"})
    with pytest.raises(ArgumentError, match="fallback_device_type must be a DLPack device code"):
        make_compilation_config(bad, ["llvm", "cuda"])
