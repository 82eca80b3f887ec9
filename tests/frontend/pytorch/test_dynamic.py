"""Symbolic sizes of ``torch.export`` programs: pinned by default, ``relay.Any`` with
``keep_symbolic=True`` (one module for every batch size, run on the Relay VM), checked
against torch at several batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import relaykit as tvm  # noqa: E402
from relaykit import relay  # noqa: E402
from relaykit.frontend import from_exported_program  # noqa: E402
from relaykit.ir.types import AnyDim  # noqa: E402

FAST = ("resnet18", "vgg11", "bert")
SLOW = ("resnet50", "mobilenet_v2")


def _export_dynamic_batch(model, args):
    batch = torch.export.Dim("batch", min=1, max=64)
    doubled = tuple(torch.cat([a, a]) for a in args)
    return torch.export.export(model, doubled, dynamic_shapes=tuple({0: batch} for _ in args))


def _outputs(value):
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [v.numpy() for v in value]


@pytest.mark.parametrize("name", [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_dynamic_batch_runs_on_the_vm_for_every_batch(name, zoo, close):
    model, args = zoo.small(name)
    ep = _export_dynamic_batch(model, args)
    mod, params = from_exported_program(ep, keep_symbolic=True)
    inputs = mod["main"].params[: len(args)]
    assert all(isinstance(p.type_annotation.shape[0], AnyDim) for p in inputs)
    assert all(not isinstance(d, AnyDim) for p in inputs for d in p.type_annotation.shape[1:])
    exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
    for batch in (1, 3):
        feeds = tuple(torch.cat([a] * batch) for a in args)
        with torch.no_grad():
            want = model(*feeds)
        got = _outputs(vm.invoke("main", *[f.numpy() for f in feeds]))
        close(got, want)


def test_symbolic_sizes_are_pinned_by_default(zoo, relay_run, close):
    model, args = zoo.small("vgg11")
    ep = _export_dynamic_batch(model, args)
    mod, params = from_exported_program(ep)
    assert mod["main"].params[0].type_annotation.shape == (2, 3, 32, 32)
    x = torch.cat([args[0], args[0]])
    with torch.no_grad():
        want = model(x)
    close(relay_run(mod, params, {mod["main"].params[0].name_hint: x.numpy()}), want)
    # the program itself is not specialised by the import
    sym = ep.graph_signature.input_specs[-1].arg.name
    val = next(n for n in ep.graph.nodes if n.name == sym).meta["val"]
    assert isinstance(val.shape[0], torch.SymInt)


def test_reshapes_keep_the_inputs_own_run_time_sizes():
    """``x.reshape(x.shape[0], x.shape[1], -1)`` with both sizes symbolic: relay's
    reshape copies them (0) and infers the last; three run-time sizes are an error."""
    from relaykit.errors import DynamicShapeError

    class Keep(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0], x.shape[1], -1).relu()

    class Swap(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[1], x.shape[0], -1).relu()

    x = torch.randn(2, 3, 4, 5)
    dims = {0: torch.export.Dim("a", min=2, max=8), 1: torch.export.Dim("b", min=2, max=8)}
    ep = torch.export.export(Keep(), (x,), dynamic_shapes=(dims,))
    mod, params = from_exported_program(ep, keep_symbolic=True)
    exe = relay.vm.compile(mod, target="llvm", params=params)
    vm = tvm.runtime.vm.VirtualMachine(exe, tvm.cpu())
    y = torch.randn(4, 6, 4, 5)
    np.testing.assert_array_equal(vm.invoke("main", y.numpy()).numpy(), Keep()(y).numpy())
    ep = torch.export.export(Swap(), (x,), dynamic_shapes=(dims,))
    with pytest.raises(DynamicShapeError, match="only known at run time"):
        from_exported_program(ep, keep_symbolic=True)
