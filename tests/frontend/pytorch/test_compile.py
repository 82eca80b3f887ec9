"""``torch.compile(model, backend="relaykit")``: the registered dynamo backend, with and
without oneDNN partitions, graph breaks, recompiles, eager fallback and its options."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from relaykit.errors import UsageError  # noqa: E402
from relaykit.frontend.pytorch import dynamo  # noqa: E402 - registers "relaykit"

ROOT = Path(__file__).resolve().parents[3]
FAST = ("resnet18", "vgg11", "bert")
SLOW = ("resnet50", "mobilenet_v2")


def _compile_and_check(zoo, close, name, options):
    model, args = zoo.small(name)
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.RelayKitFallbackWarning)
        want = model(*args)
        compiled = torch.compile(model, backend="relaykit", options=options)
        got = compiled(*args)
        again = compiled(*args)  # built once: the second call reuses the build
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    assert all(isinstance(g, torch.Tensor) for g in got)
    close([g.numpy() for g in got], want)
    again = [again] if isinstance(again, torch.Tensor) else list(again)
    close([g.numpy() for g in again], want)


@pytest.mark.parametrize("name", [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_host(name, zoo, close):
    _compile_and_check(zoo, close, name, {"targets": []})


def test_the_default_is_the_fastest_backend_installed(zoo, close, monkeypatch, dnnl_available):
    assert dynamo.default_targets() == (["dnnl"] if dnnl_available else [])
    asked: list[list[str]] = []
    real = dynamo.partition_for

    def recording(mod, targets, *args, **kwargs):
        asked.append(list(targets))
        return real(mod, targets, *args, **kwargs)

    monkeypatch.setattr(dynamo, "partition_for", recording)
    _compile_and_check(zoo, close, "bert", None)
    assert asked == ([["dnnl"]] if dnnl_available else [])


@pytest.mark.parametrize("name", [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_dnnl(name, zoo, close, dnnl_available):
    if not dnnl_available:
        pytest.skip("oneDNN is not installed")
    threads = torch.get_num_threads()
    _compile_and_check(zoo, close, name, {"targets": ["dnnl"]})
    assert torch.get_num_threads() == threads  # relaykit's thread policy does not leak


def test_built_once_per_graph_and_per_shape(zoo, close, monkeypatch):
    builds = []
    real = dynamo.CompiledGraph.build

    def counting(self, args):
        builds.append(self.signature(args))
        return real(self, args)

    monkeypatch.setattr(dynamo.CompiledGraph, "build", counting)
    model, _ = zoo.small("vgg11")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="relaykit")
    with torch.no_grad():
        for batch in (1, 1, 2, 2, 3):
            x = torch.randn(batch, 3, 32, 32)
            close([compiled(x).numpy()], model(x))
    images = [next(k[0] for k in b if isinstance(k, tuple) and len(k[0]) == 4) for b in builds]
    batches = sorted(shape[0] for shape in images)
    assert batches == [1, 2, 3]
    assert len(builds) == 3  # one build per input shape, none per call


def test_graph_breaks_run_each_graph_through_relaykit(close):
    graphs = []
    real = dynamo.relaykit_backend

    class Breaks(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = torch.nn.Linear(4, 2)

        def forward(self, x):
            y = torch.relu(self.a(x))
            if float(y.sum()) > 0:  # data-dependent control flow: a graph break
                y = y * 2
            return self.b(y)

    def backend(gm, example_inputs, **kwargs):
        graphs.append(gm)
        return real(gm, example_inputs, **kwargs)

    model = Breaks().eval()
    x = torch.randn(3, 4)
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", dynamo.RelayKitFallbackWarning)
        got = torch.compile(model, backend=backend)(x)
        want = model(x)
    assert len(graphs) >= 2
    close([got.numpy()], want)


def test_unsupported_op_falls_back_to_eager_with_a_warning():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.lgamma(x.abs() + 1) + 1

    x = torch.rand(2, 3)
    torch._dynamo.reset()
    with pytest.warns(dynamo.RelayKitFallbackWarning, match=r"aten::lgamma"):
        got = torch.compile(Odd(), backend="relaykit")(x)
    torch.testing.assert_close(got, torch.lgamma(x.abs() + 1) + 1)


def test_unknown_option_is_an_error():
    torch._dynamo.reset()
    compiled = torch.compile(torch.nn.ReLU(), backend="relaykit", options={"target": "dnnl"})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(2))
    err = info.value
    while err is not None and not isinstance(err, UsageError):
        err = err.__cause__ or err.__context__
    assert isinstance(err, UsageError)
    assert "'target'" in str(err) and "targets" in str(err)


def test_entry_point_makes_the_backend_known_after_import_torch_alone(tmp_path, fresh_python):
    """pyproject declares relaykit in torch's ``torch_dynamo_backends`` group; a
    distribution carrying that declaration lets ``backend="relaykit"`` resolve without
    importing relaykit first."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points."torch_dynamo_backends"]' in text
    section = text.split('[project.entry-points."torch_dynamo_backends"]', 1)[1]
    line = next(ln for ln in section.splitlines() if ln.startswith("relaykit = "))
    target = line.split("=", 1)[1].strip().strip('"')
    assert target == "relaykit.frontend.pytorch.dynamo:relaykit_backend"
    dist = tmp_path / "relaykit_ep-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: relaykit-ep\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(f"[torch_dynamo_backends]\nrelaykit = {target}\n")
    code = textwrap.dedent(
        """
        import sys, torch
        assert not any(m.startswith("relaykit") for m in sys.modules)
        x = torch.randn(2, 3)
        with torch.no_grad():
            y = torch.compile(torch.nn.Softmax(-1), backend="relaykit")(x)
        torch.testing.assert_close(y, torch.softmax(x, -1))
        print("backend:", type(torch._dynamo.lookup_backend("relaykit")).__module__)
        print("loaded:", "relaykit.frontend.pytorch.dynamo" in sys.modules)
        """
    )
    proc = fresh_python("-c", code, path=[tmp_path])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "loaded: True" in proc.stdout


def test_tensors_cross_by_dlpack_and_outputs_are_not_aliased(close):
    x = torch.randn(2, 3)
    view = dynamo._as_numpy(x)
    assert np.shares_memory(view, x.numpy())  # the input is read in place
    strided = dynamo._as_numpy(x.t())  # not contiguous: one copy, the right values
    np.testing.assert_array_equal(strided, x.t().numpy())
    arr = np.arange(6, dtype=np.float32)
    assert np.shares_memory(dynamo._as_tensor(arr).numpy(), arr)

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh()).eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="relaykit")
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    with torch.no_grad():
        got_a = compiled(a)
        got_b = compiled(b)  # must not overwrite the first call's output
        close([got_a.numpy(), got_b.numpy()], [model(a), model(b)])


def test_without_fallback_one_typed_error_lists_every_unsupported_op():
    from relaykit.errors import UnsupportedOpError

    class TwoOdd(torch.nn.Module):
        def forward(self, x):
            a = torch.lgamma(x.abs() + 1)
            return torch.lgamma(a) + torch.digamma(x.abs() + 1)

    torch._dynamo.reset()
    compiled = torch.compile(TwoOdd(), backend="relaykit", options={"fallback": False})
    with pytest.raises(Exception) as info:
        compiled(torch.rand(2, 3))
    err = info.value
    while err is not None and not isinstance(err, UnsupportedOpError):
        err = err.__cause__ or err.__context__
    assert isinstance(err, UnsupportedOpError)
    assert set(err.ops) == {"aten::lgamma", "aten::digamma"}, err.ops
    assert err.ops["aten::lgamma"][0] == 2
    assert "test_compile.py:" in err.ops["aten::lgamma"][1]
