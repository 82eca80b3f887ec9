"""TorchScript import beyond CNNs: traced and scripted functions, control flow
(``prim::If``, ``prim::Loop``), recurrent layers and the less common aten ops,
each checked against torch's own output; spans and exported graphs."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from relaykit import relay  # noqa: E402
from relaykit.errors import FrontendError  # noqa: E402
from relaykit.frontend import from_pytorch  # noqa: E402


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _run(script, inputs, rtol=1e-5, atol=1e-5, infos=None):
    infos = infos or [
        (f"x{i}", (tuple(t.shape), str(t.dtype).removeprefix("torch.")))
        for i, t in enumerate(inputs)
    ]
    mod, params = from_pytorch(script, infos)
    feeds = {name: t.numpy() for (name, _), t in zip(infos, inputs, strict=True)}
    got = relay.create_executor("vm", mod=mod).evaluate()(**feeds, **params)
    with torch.no_grad():
        want = script(*inputs)
    got = _flat(got)
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol)
    return mod


def _flat(value):
    """The VM's result as a flat list of arrays (tuples come back as ADT values)."""
    if hasattr(value, "numpy") and not hasattr(value, "fields"):
        return [value]
    return [a for v in value for a in _flat(v)]


class Fn(nn.Module):
    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for k, v in modules.items():
            setattr(self, k, v)

    def forward(self, *args):
        return self.fn(self, *args)


X = _r(2, 3, 8, 8)
V5 = _r(1, 2, 4, 6, 6, seed=1)
IDX = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1]])

CASES = {
    "pool1d_3d": (
        Fn(
            lambda m, a, b: (
                F.max_pool1d(a, 2),
                F.avg_pool1d(a, 3, 1, 1),
                F.max_pool3d(b, 2),
                F.avg_pool3d(b, 2),
                F.adaptive_max_pool1d(a, 3),
                F.adaptive_avg_pool1d(a, 2),
            )
        ),
        (_r(2, 3, 12), V5),
    ),
    "unbatched_pool": (Fn(lambda m, a: F.max_pool3d(a, 2)), (_r(3, 4, 4, 4),)),
    "conv3d": (nn.Conv3d(2, 3, 3, padding=1), (V5,)),
    "conv_transpose3d": (nn.ConvTranspose3d(2, 3, 3, stride=2, output_padding=1), (V5,)),
    "pad_modes": (
        Fn(
            lambda m, a: (
                F.pad(a, (1, 2, 2, 1), mode="reflect"),
                F.pad(a, (1, 1, 0, 2), mode="replicate"),
            )
        ),
        (X,),
    ),
    "instance_norm": (nn.InstanceNorm2d(3, affine=True), (X,)),
    "activations": (
        Fn(
            lambda m, a: (
                F.selu(a),
                F.celu(a, 0.5),
                F.glu(a, 1),
                F.logsigmoid(a * 80),
                F.threshold(a, 0.1, 20.0),
                F.prelu(a, torch.tensor([0.2])),
            )
        ),
        (_r(2, 4, 5),),
    ),
    "prelu_channels": (nn.PReLU(3), (X,)),
    "upsample_3d_bicubic": (
        Fn(
            lambda m, a, b: (
                F.interpolate(b, scale_factor=2),
                F.interpolate(a, size=(11, 13), mode="bicubic"),
            )
        ),
        (X, V5),
    ),
    "losses": (
        Fn(
            lambda m, a, b, t: (
                F.mse_loss(a, b),
                F.l1_loss(a, b, reduction="sum"),
                F.cross_entropy(a, t),
                F.nll_loss(F.log_softmax(a, 1), t),
            )
        ),
        (_r(4, 5), _r(4, 5, seed=2), torch.tensor([0, 3, 4, 1])),
    ),
    "bitwise": (
        Fn(lambda m, a, b: (a & b, a | b, a ^ b, ~a, a << 1, torch.logical_xor(a, b))),
        (torch.tensor([1, 6, 12, 7]), torch.tensor([3, 5, 10, 1])),
    ),
    "stats_norms": (
        Fn(
            lambda m, a: (
                a.var(1),
                a.std(),
                torch.var_mean(a, 0)[0],
                torch.logsumexp(a, 1),
                torch.linalg.vector_norm(a, 3, 1),
                torch.norm(a),
                torch.linalg.vector_norm(a, float("inf")),
            )
        ),
        (_r(4, 5),),
    ),
    "arrays": (
        Fn(
            lambda m, a, b: (
                *torch.broadcast_tensors(a, b),
                a.tile((2, 1)),
                a.triu(1),
                a.tril(-1),
                a.roll(2, 1),
                a.roll(1),
                a.repeat_interleave(2, 0),
                torch.take(a, torch.tensor([0, 5, -1])),
            )
        ),
        (_r(3, 4), _r(1, 4, seed=1)),
    ),
    "splits_fills": (
        Fn(
            lambda m, a: (
                *torch.tensor_split(a, 3, 1),
                a.new_zeros(2, 3),
                a.new_full((2,), 4.0),
                torch.zeros_like(a).fill_(2.5),
            )
        ),
        (_r(3, 7),),
    ),
    "one_hot_linspace_mesh": (
        Fn(
            lambda m, i, a: (
                F.one_hot(i, 5),
                torch.linspace(0, 1, 7),
                *torch.meshgrid(a, a, indexing="ij"),
            )
        ),
        (torch.tensor([0, 4, 2]), _r(3)),
    ),
    "sort_search": (
        Fn(
            lambda m, a, s: (
                torch.argsort(a, 1, descending=True),
                torch.searchsorted(s, a),
                torch.bucketize(a, s),
            )
        ),
        (_r(3, 4), torch.tensor([-1.0, 0.0, 0.5, 2.0])),
    ),
    "scatter": (
        Fn(
            lambda m, a, i, s: (
                a.scatter(0, i, s),
                a.scatter_add(1, i, s),
                a.scatter_reduce(0, i, s, "mean"),
            )
        ),
        (_r(3, 5), IDX, _r(2, 4, seed=1)),
    ),
    "index_put": (
        Fn(
            lambda m, a, v: a.index_put(
                (torch.tensor([0, 2]), torch.tensor([1, 3])), v, accumulate=True
            )
        ),
        (_r(3, 5), _r(2, seed=1)),
    ),
    "arith": (
        Fn(
            lambda m, a, b: (
                torch.addcmul(a, a, b, value=0.5),
                torch.addcdiv(a, a, b + 3),
                torch.lerp(a, b, 0.3),
                torch.fmod(a * 5, 2),
                a.square(),
                torch.cosh(a),
                torch.dot(a[0], b[0]),
                torch.mv(a, b[0]),
            )
        ),
        (_r(4, 4), _r(4, 4, seed=1)),
    ),
    "matmul_batched": (
        Fn(lambda m, a, b, v: (a @ b, a @ v, v @ v)),
        (_r(2, 3, 4), _r(4, 5, seed=1), _r(4, seed=2)),
    ),
    "weight_norm": (nn.utils.parametrizations.weight_norm(nn.Linear(4, 3)), (_r(2, 4),)),
    "data_dependent": (
        Fn(lambda m, a: (torch.nonzero(a > 0), *torch.where(a > 0.5), a.masked_select(a < 0))),
        (_r(3, 4),),
    ),
    "unique": (
        Fn(lambda m, a: torch.unique(a, True, True, True)),
        (torch.tensor([[3, 1, 3], [5, 1, 9]]),),
    ),
    "linear_vector_weight": (Fn(lambda m, a, w: F.linear(a, w)), (_r(3, 4), _r(4, seed=1))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_ops_match_torch(name):
    model, inputs = CASES[name]
    model = model.eval()
    with torch.no_grad():
        script = torch.jit.trace(model, inputs)
    _run(script, inputs, rtol=1e-4, atol=1e-4)


def test_traced_function_has_no_state():
    def fn(a, b):
        return torch.relu(a) * b + 1

    a, b = _r(3, 4), _r(3, 4, seed=1)
    _run(torch.jit.trace(fn, (a, b)), (a, b))


class _Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # noqa: SIM108 - a run-time condition: Relay If
            y = x * 2
        else:
            y = x - 1
        for i in range(x.size(0)):  # a static trip count: unrolled
            y = y + float(i)
        n = 0
        while n < 3:
            y = y * 1.5
            n += 1
        return y


def test_scripted_if_and_loops():
    script = torch.jit.script(_Branchy().eval())
    _run(script, (_r(3, 4),))
    _run(script, (-torch.ones(3, 4),))


def test_run_time_while_loop_is_refused():
    class Dyn(nn.Module):
        def forward(self, x):
            while x.sum() < 10:
                x = x + 1
            return x

    with pytest.raises(FrontendError, match="only known at run time"):
        from_pytorch(torch.jit.script(Dyn()), [("x", (2,))])


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize(
    "layers,bidir,batch_first,bias", [(1, False, False, True), (2, True, True, False)]
)
def test_recurrent_layers_match_torch(kind, layers, bidir, batch_first, bias):
    torch.manual_seed(0)
    kw = dict(num_layers=layers, bidirectional=bidir, batch_first=batch_first, bias=bias)
    if kind == "lstm":
        layer = nn.LSTM(3, 4, **kw)
    elif kind == "gru":
        layer = nn.GRU(3, 4, **kw)
    else:
        layer = nn.RNN(3, 4, nonlinearity=kind.split("_")[1], **kw)
    model = Fn(lambda m, x: m.rnn(x)[0], rnn=layer).eval()
    x = _r(2, 5, 3)
    with torch.no_grad():
        script = torch.jit.trace(model, (x,))
    _run(script, (x,), rtol=1e-4, atol=1e-5)


def test_lstm_projection_and_states():
    torch.manual_seed(0)
    model = Fn(lambda m, x: m.rnn(x), rnn=nn.LSTM(3, 5, proj_size=2)).eval()
    x = _r(4, 2, 3)
    with torch.no_grad():
        script = torch.jit.trace(model, (x,))
    mod, params = from_pytorch(script, [("x", (4, 2, 3))])
    out = relay.create_executor("vm", mod=mod).evaluate()(x=x.numpy(), **params)
    with torch.no_grad():
        want, (h, c) = model(x)
    for g, w in zip(_flat(out), (want, h, c), strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)


class _Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())

    def forward(self, x):
        return self.block(x) + 1


def test_spans_name_nodes_or_module_scopes(tmp_path):
    x = _r(1, 3, 6, 6)
    script = torch.jit.trace(_Nested().eval(), (x,))
    mod, _ = from_pytorch(script, [("x", (1, 3, 6, 6))])
    body = mod["main"].body
    assert body.op.name == "add" and body.span.source_name.name == "aten::add_0"
    mod, params = from_pytorch(script, [("x", (1, 3, 6, 6))], preserve_pytorch_scopes=True)
    relu = mod["main"].body.args[0]
    assert relu.op.name == "nn.relu" and relu.span.source_name.name == "block.1"
    assert "block.0.weight" in params
    with relay.transform.PassContext(config={"relay.frontend.fill_span": False}):
        mod, _ = from_pytorch(script, [("x", (1, 3, 6, 6))])
    assert mod["main"].body.span is None
    from_pytorch(script, [("x", (1, 3, 6, 6))], export_renamed_c_graph_path=str(tmp_path))
    (name,) = os.listdir(tmp_path)
    assert name.startswith("tvm_exported_c_graph_")
    assert "%aten::_convolution_0" in (tmp_path / name).read_text()


class _SliceAssign(nn.Module):
    def forward(self, x):
        x[:2, 0, 1:] = x[:2, 0, 1:] + 1
        x[-1] = 0.5
        x[1:, 1].mul_(3)
        return x


def test_in_place_writes_into_slices_reach_the_tensor():
    x = _r(3, 4, 5)
    script = torch.jit.trace(_SliceAssign().eval(), (x.clone(),))
    _run(script, (x.clone(),))


def test_tuple_inputs_are_refused_with_a_reason():
    def fn(x):
        return x * 2

    script = torch.jit.trace(fn, (_r(2, 4),))
    with pytest.raises(FrontendError, match="tuple or list of tensors"):
        from_pytorch(script, [("states", ((2, 4), (2, 4)))])
    for spec in [(2, 4), ((2, 4), "float32"), [[2, 4], "float32"]]:
        from_pytorch(script, [("x", spec)])


def test_random_ops_have_torch_shapes_and_distributions():
    def fn(p):
        return torch.randn(200, 50), torch.rand(3, 4), torch.multinomial(p, 4000, True)

    p = torch.tensor([0.1, 0.0, 0.6, 0.3])
    script = torch.jit.trace(fn, (p,), check_trace=False)
    mod, _ = from_pytorch(script, [("p", (4,))])
    normal, uniform, picks = _flat(relay.create_executor("vm", mod=mod).evaluate()(p=p.numpy()))
    normal, uniform, picks = normal.numpy(), uniform.numpy(), picks.numpy()
    assert normal.shape == (200, 50) and uniform.shape == (3, 4) and picks.shape == (4000,)
    assert abs(normal.mean()) < 0.05 and abs(normal.std() - 1) < 0.05
    assert ((uniform >= 0) & (uniform < 1)).all()
    freq = np.bincount(picks, minlength=4) / picks.size
    np.testing.assert_allclose(freq, p.numpy(), atol=0.04)
