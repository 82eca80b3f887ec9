"""Op coverage: small modules using the ops CNNs, transformers and detection or
segmentation heads use, through TorchScript, torch.export and torch.compile, each
checked against torch's own output (1e-4 relative)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from relaykit.frontend import from_exported_program, from_pytorch  # noqa: E402


class Fn(nn.Module):
    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for k, v in modules.items():
            setattr(self, k, v)

    def forward(self, *args):
        return self.fn(self, *args)


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


X4 = _r(2, 4, 6, 6)
Q = _r(2, 3, 5, 8, seed=1)
K = _r(2, 3, 7, 8, seed=2)
V = _r(2, 3, 7, 8, seed=3)
BOOL_MASK = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(4)) > 0.3
FLOAT_MASK = _r(5, 7, seed=5)

CASES = {
    "gelu_erf": (Fn(lambda m, x: F.gelu(x)), (X4,)),
    "gelu_tanh": (Fn(lambda m, x: F.gelu(x, approximate="tanh")), (X4,)),
    "sdpa_plain": (Fn(lambda m, q, k, v: F.scaled_dot_product_attention(q, k, v)), (Q, K, V)),
    "sdpa_bool_mask": (
        Fn(lambda m, q, k, v, a: F.scaled_dot_product_attention(q, k, v, attn_mask=a)),
        (Q, K, V, BOOL_MASK),
    ),
    "sdpa_float_mask": (
        Fn(lambda m, q, k, v, a: F.scaled_dot_product_attention(q, k, v, attn_mask=a)),
        (Q, K, V, FLOAT_MASK),
    ),
    "sdpa_causal_scale": (
        Fn(lambda m, q, v: F.scaled_dot_product_attention(q, q, v, is_causal=True, scale=0.3)),
        (Q, _r(2, 3, 5, 4, seed=6)),
    ),
    "softmax_logsoftmax": (Fn(lambda m, x: F.softmax(x, 1) + F.log_softmax(x, -1)), (X4,)),
    "matmul_kinds": (
        Fn(lambda m, a, b, v: (a @ b, torch.matmul(a, v), torch.matmul(v, b[0]), v @ v)),
        (_r(3, 4, 5), _r(1, 5, 6, seed=1), _r(5, seed=2)),
    ),
    "bmm_baddbmm": (
        Fn(lambda m, a, b, c: (torch.bmm(a, b), torch.baddbmm(c, a, b, beta=0.5, alpha=2.0))),
        (_r(3, 4, 5), _r(3, 5, 6, seed=1), _r(3, 4, 6, seed=2)),
    ),
    "masked_fill_where": (
        Fn(lambda m, x: torch.where(x > 0, x, x * 0.1).masked_fill(x < -1, -5.0)),
        (X4,),
    ),
    "split_chunk_cat": (
        Fn(
            lambda m, x: (
                torch.cat([*torch.split(x, 3, 1)[::-1], *x.chunk(2, 1)], 1)
                + sum(x.chunk(3, -1)).sum()
            )
        ),
        (X4,),
    ),
    "slice_select_unsqueeze_expand": (
        Fn(lambda m, x: x[:, 1:3, ::2, -1].unsqueeze(-1).expand(2, 2, 3, 5) + x[1, 2, 0, :5]),
        (X4,),
    ),
    "arange_pow_sqrt_rsqrt_div": (
        Fn(
            lambda m, x: (
                torch.arange(6, dtype=torch.float32) * x.abs().sqrt()
                + x.pow(2) / (x.abs() + 1).rsqrt()
                - torch.div(x, 0.7, rounding_mode="floor")
                + torch.tanh(x) ** 3
            )
        ),
        (X4,),
    ),
    "interpolate": (
        Fn(
            lambda m, x: (
                F.interpolate(x, scale_factor=2, mode="nearest"),
                F.interpolate(x, size=(9, 11), mode="bilinear", align_corners=False),
                F.interpolate(x, size=(12, 7), mode="bilinear", align_corners=True),
            )
        ),
        (X4,),
    ),
    "detection_head": (
        Fn(
            lambda m, x: torch.sigmoid(m.up(F.relu(m.conv(x)))).flatten(2).permute(0, 2, 1),
            conv=nn.Conv2d(4, 8, 3, padding=1),
            up=nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1, output_padding=0),
        ),
        (X4,),
    ),
    "conv_transpose_groups": (
        Fn(lambda m, x: m.up(x), up=nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=1)),
        (X4,),
    ),
    "pools_and_norms": (
        Fn(
            lambda m, x: (
                F.avg_pool2d(x, 3, 2, 1),
                F.max_pool2d(x, 2, ceil_mode=True),
                F.adaptive_avg_pool2d(x, (2, 3)),
                m.gn(x),
                F.layer_norm(x, [6, 6]),
                x.mean(dim=(2, 3)),
            ),
            gn=nn.GroupNorm(2, 4),
        ),
        (X4,),
    ),
    "activations": (
        Fn(
            lambda m, x: (
                F.hardtanh(x, -0.5, 0.5),
                F.relu6(x * 4),
                F.silu(x),
                F.hardswish(x),
                F.leaky_relu(x, 0.2),
                F.elu(x),
                x.clamp(min=-0.3),
            )
        ),
        (X4,),
    ),
    "conv1d_pad": (
        Fn(lambda m, x: F.pad(m.conv(x), (1, 2)), conv=nn.Conv1d(4, 5, 3, stride=2)),
        (_r(2, 4, 9),),
    ),
    "embedding_layer_norm_linear": (
        Fn(
            lambda m, ids: m.fc(m.ln(m.emb(ids))).transpose(0, 1).contiguous().view(-1, 3),
            emb=nn.Embedding(20, 8),
            ln=nn.LayerNorm(8),
            fc=nn.Linear(8, 3),
        ),
        (torch.tensor([[1, 5, 19], [0, 2, 2]]),),
    ),
    "reductions_and_casts": (
        Fn(
            lambda m, x: (
                x.sum(-1),
                x.amax(1, keepdim=True),
                x.argmax(-1),
                (x > 0).any(-1),
                x.cumsum(2),
                (x > 0).float().mean(),
                x.to(torch.int64),
            )
        ),
        (X4,),
    ),
    "topk_sort": (
        Fn(
            lambda m, x: (
                *torch.topk(x, 3, dim=1),
                *torch.topk(x.flatten(1), 5, largest=False),
                *torch.sort(x, dim=-1, descending=True),
                torch.sort(x, dim=2, stable=True)[0],
            )
        ),
        (X4,),
    ),
}


def _check_all(got, want, close):
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    close(got, want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_torchscript(case, relay_run, close):
    model, args = CASES[case]
    model.eval()
    with torch.no_grad():
        want = model(*args)
        traced = torch.jit.trace(model, args)
    infos = [(f"i{k}", (list(a.shape), str(a.dtype)[6:])) for k, a in enumerate(args)]
    mod, params = from_pytorch(traced, infos)
    got = relay_run(mod, params, {f"i{k}": a.numpy() for k, a in enumerate(args)})
    _check_all(got, want, close)


@pytest.mark.parametrize("case", sorted(CASES))
def test_exported_program(case, relay_run, close):
    model, args = CASES[case]
    model.eval()
    with torch.no_grad():
        want = model(*args)
    mod, params = from_exported_program(torch.export.export(model, args))
    names = [p.name_hint for p in mod["main"].params][: len(args)]
    got = relay_run(mod, params, {n: a.numpy() for n, a in zip(names, args, strict=True)})
    _check_all(got, want, close)


@pytest.mark.parametrize("case", sorted(CASES))
def test_torch_compile(case, close):
    from relaykit.frontend.pytorch.dynamo import RelayKitFallbackWarning

    model, args = CASES[case]
    model.eval()
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", RelayKitFallbackWarning)  # no graph may run eagerly
        want = model(*args)
        got = torch.compile(model, backend="relaykit")(*args)
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    _check_all([g.numpy() for g in got], want, close)


def test_advanced_indexing(relay_run, close):
    rows, cols = torch.tensor([[0, 2], [1, -1]]), torch.tensor([3, -2])
    model = Fn(lambda m, x: (x[:, rows, cols], x[rows], x[:, :, rows[0]], x[1, rows, cols]))
    x = _r(3, 4, 5, 6)
    with torch.no_grad():
        want = model(x)
    mod, params = from_exported_program(torch.export.export(model, (x,)))
    got = relay_run(mod, params, {mod["main"].params[0].name_hint: x.numpy()})
    close(got, want)
