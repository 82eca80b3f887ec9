"""torch's own attention modules in inference: the fast paths ``nn.TransformerEncoderLayer``
and ``nn.MultiheadAttention`` take in eval mode without autograd
(``aten::_transformer_encoder_layer_fwd``, ``aten::_native_multi_head_attention``) and the
kernels ``scaled_dot_product_attention`` dispatches to, through ``torch.compile``
(with and without oneDNN), TorchScript and ``torch.export``, each against torch's
own output (1e-4 relative)."""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from relaykit.frontend import from_exported_program, from_pytorch  # noqa: E402
from relaykit.frontend.pytorch import dynamo  # noqa: E402 - registers "relaykit"

A = torch.ops.aten
D, HEADS, FF, B, L = 16, 2, 32, 2, 6


def _r(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _encoder(norm_first, activation, batch_first=True, layers=2):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        D, HEADS, FF, activation=activation, batch_first=batch_first, norm_first=norm_first
    )
    norm = torch.nn.LayerNorm(D)
    model = torch.nn.TransformerEncoder(layer, layers, norm=norm, enable_nested_tensor=False)
    return model.eval()


def _masks(kind):
    """The keyword arguments of the encoder's forward for a mask kind. An ``attn`` mask
    goes with ``is_causal`` said explicitly: without it torch's encoder tests the mask's
    values (a graph break, whatever the backend)."""
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[0, L - 2 :] = True
    padding[1, L - 1 :] = True
    causal = torch.nn.Transformer.generate_square_subsequent_mask(L)
    attn = torch.rand(L, L, generator=torch.Generator().manual_seed(3)) > 0.5
    attn.fill_diagonal_(False)  # no row left without a position
    per_head = torch.rand(B * HEADS, L, L, generator=torch.Generator().manual_seed(4)) > 0.5
    per_head[:, range(L), range(L)] = False
    return {
        "none": {},
        "padding": {"src_key_padding_mask": padding},
        "causal": {"mask": causal, "is_causal": True},
        "bool_attn": {"mask": attn, "is_causal": False},
        "per_head": {"mask": per_head, "is_causal": False},
        "both": {"mask": causal < 0, "src_key_padding_mask": padding, "is_causal": True},
    }[kind]


def _compile_run(model, args, kwargs, options, grad_mode=torch.no_grad):
    """Run ``model`` eagerly and under ``torch.compile(backend="relaykit")``; relaykit must
    have built and run the graph, with no fallback to eager."""
    built, ran = [], []
    real_build, real_call = dynamo.CompiledGraph.build, dynamo.CompiledGraph.__call__

    def build(self, a):
        built.append(1)
        return real_build(self, a)

    def call(self, *a):
        ran.append(1)
        return real_call(self, *a)

    torch._dynamo.reset()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dynamo.CompiledGraph, "build", build)
        mp.setattr(dynamo.CompiledGraph, "__call__", call)
        with grad_mode(), warnings.catch_warnings():
            warnings.simplefilter("error", dynamo.RelayKitFallbackWarning)
            want = model(*args, **kwargs)
            got = torch.compile(model, backend="relaykit", options=options)(*args, **kwargs)
    assert built == [1] and ran == [1], "relaykit did not build and run the one graph"
    return got, want


@pytest.mark.parametrize("mask", ["none", "padding", "causal", "bool_attn", "per_head", "both"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_compiles(norm_first, activation, mask, close):
    model = _encoder(norm_first, activation)
    got, want = _compile_run(model, (_r(B, L, D),), _masks(mask), None)
    close([got.numpy()], want)


@pytest.mark.parametrize("mask", ["none", "padding", "causal"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_sequence_first(norm_first, mask, close):
    """batch_first=False: no fast path; torch's Python attention (scaled_dot_product_attention)."""
    model = _encoder(norm_first, "gelu", batch_first=False)
    got, want = _compile_run(model, (_r(L, B, D),), _masks(mask), None)
    close([got.numpy()], want)


@pytest.mark.parametrize("mask", ["none", "padding", "both"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_dnnl(norm_first, mask, close, dnnl_available):
    if not dnnl_available:
        pytest.skip("oneDNN is not installed")
    model = _encoder(norm_first, "gelu" if norm_first else "relu")
    got, want = _compile_run(model, (_r(B, L, D),), _masks(mask), {"targets": ["dnnl"]})
    close([got.numpy()], want)


def test_encoder_dnnl_takes_every_layer(dnnl_available):
    """With options={"targets": ["dnnl"]} the whole encoder is one oneDNN region."""
    if not dnnl_available:
        pytest.skip("oneDNN is not installed")
    from relaykit.byoc.pipeline import partition_for

    modules = []
    real = dynamo.CompiledGraph.convert

    def convert(self, args):
        out = real(self, args)
        modules.append(out[0])
        return out

    model = _encoder(False, "gelu")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dynamo.CompiledGraph, "convert", convert)
        _compile_run(model, (_r(B, L, D),), {}, {"targets": ["dnnl"]})
    mod = partition_for(modules[0], ["dnnl"])
    assert [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint != "main"] == [
        "tvmgen_default_dnnl_main_0"
    ]
    ops = str(mod["main"])
    assert "dense" not in ops and "batch_matmul" not in ops and "softmax" not in ops


def test_inference_mode(close):
    model = _encoder(True, "relu")
    got, want = _compile_run(
        model, (_r(B, L, D),), _masks("padding"), None, grad_mode=torch.inference_mode
    )
    close([got.numpy()], want)


# -- _native_multi_head_attention -------------------------------------------------------------
def _mha():
    torch.manual_seed(1)
    return torch.nn.MultiheadAttention(D, HEADS, batch_first=True).eval()


class _NativeMHA(torch.nn.Module):
    """Calls ``aten::_native_multi_head_attention`` with a module's weights."""

    def __init__(self, need_weights, average, mask_type):
        super().__init__()
        self.mha = _mha()
        self.need_weights, self.average, self.mask_type = need_weights, average, mask_type

    def forward(self, q, k, v, mask=None):
        m = self.mha
        out, weights = A._native_multi_head_attention(
            q, k, v, D, HEADS, m.in_proj_weight, m.in_proj_bias, m.out_proj.weight,
            m.out_proj.bias, mask, self.need_weights, self.average, self.mask_type,
        )  # fmt: skip
        return (out, weights) if self.need_weights else out


def _native_cases():
    x, k, v = _r(B, L, D), _r(B, L, D, seed=1), _r(B, L, D, seed=2)  # torch: same shapes
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[0, -3:] = True
    square = torch.triu(torch.full((L, L), -math.inf), 1)  # float: nonzero leaves out
    full = torch.rand(B, HEADS, L, L, generator=torch.Generator().manual_seed(5)) > 0.6
    full[..., 0] = False
    return {
        "self": ((False, True, None), (x, x, x)),
        "cross_weights_per_head": ((True, False, None), (x, k, v)),
        "padding_bool": ((True, True, 1), (x, k, v, padding)),
        "square_float": ((False, True, 0), (x, x, x, square)),
        "full_bool": ((True, True, 2), (x, x, x, full)),
    }


@pytest.mark.parametrize("case", sorted(_native_cases()))
def test_native_multi_head_attention(case, relay_run, close):
    (need, average, mask_type), args = _native_cases()[case]
    model = _NativeMHA(need, average, mask_type).eval()
    with torch.no_grad():
        want = model(*args)
        want = list(want) if need else [want]
        traced = torch.jit.trace(model, args)
        got, _ = _compile_run(model, args, {}, None)
    assert "aten::_native_multi_head_attention" in str(traced.inlined_graph)
    infos = [(f"i{k}", (list(a.shape), str(a.dtype)[6:])) for k, a in enumerate(args)]
    mod, params = from_pytorch(traced, infos)
    out = relay_run(mod, params, {f"i{k}": a.numpy() for k, a in enumerate(args)})
    close(out[: len(want)], want)
    close([g.numpy() for g in (got if need else [got])], want)


def test_multihead_attention_module(close):
    """nn.MultiheadAttention's own fast path (batch-first self-attention, eval, no grad)."""
    model = _mha()
    x = _r(B, L, D)
    padding = torch.zeros(B, L, dtype=torch.bool)
    padding[1, -2:] = True
    got, want = _compile_run(model, (x, x, x), {"key_padding_mask": padding}, None)
    close([got[0].numpy(), got[1].numpy()], want)


# -- the kernels of scaled_dot_product_attention -------------------------------------------
Q, K, V = _r(2, 3, 5, 8, seed=1), _r(2, 3, 7, 8, seed=2), _r(2, 3, 7, 8, seed=3)
FLOAT_MASK = _r(5, 7, seed=4)
ROW_MASKED = torch.zeros(5, 7).index_fill_(0, torch.tensor([2]), -math.inf)


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


KERNELS = {
    "flash_cpu_mask": (
        lambda q, k, v, m: A._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=m),
        (Q, K, V, FLOAT_MASK),
    ),
    "flash_cpu_causal_scale": (
        lambda q, v: A._scaled_dot_product_flash_attention_for_cpu(q, q, v, 0.0, True, scale=0.3),
        (Q, V[:, :, :5]),
    ),
    "math_bool_mask_is_added": (
        lambda q, k, v, m: A._scaled_dot_product_attention_math(q, k, v, m),
        (Q, K, V, torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(6)) > 0.3),
    ),
    "math_weights_scale": (
        lambda q, k, v, m: A._scaled_dot_product_attention_math(q, k, v, m, scale=0.2),
        (Q, K, V, FLOAT_MASK),
    ),
}


@pytest.mark.parametrize("case", sorted(KERNELS))
def test_sdpa_kernels(case, relay_run, close):
    fn, args = KERNELS[case]
    model = _Fn(fn).eval()
    with torch.no_grad():
        want = model(*args)
        traced = torch.jit.trace(model, args)
    infos = [(f"i{k}", (list(a.shape), str(a.dtype)[6:])) for k, a in enumerate(args)]
    mod, params = from_pytorch(traced, infos)
    got = relay_run(mod, params, {f"i{k}": a.numpy() for k, a in enumerate(args)})
    close(got, want)
    ep = torch.export.export(model, args)
    mod, params = from_exported_program(ep, run_decompositions=False)
    names = [p.name_hint for p in mod["main"].params]
    got = relay_run(mod, params, dict(zip(names, [a.numpy() for a in args], strict=False)))
    close(got, want)


def test_constant_mask_rows_all_masked_give_zeros(relay_run, close):
    """A row the (constant) mask leaves empty gives zeros, as torch's kernels do."""

    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", ROW_MASKED)

        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)

    model = Masked().eval()
    args = (Q, K, V)
    got, want = _compile_run(model, args, {}, None)
    assert not torch.isnan(got).any()
    close([got.numpy()], want)


def test_dropout_in_attention_is_refused():
    """dropout_p > 0 drops at random even in eval mode: not something to compile."""
    from relaykit.errors import FrontendError

    drop = _Fn(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, None, 0.5))
    with torch.no_grad():
        traced = torch.jit.trace(drop.eval(), (Q, K, V), check_trace=False)
    infos = [(f"i{k}", (list(a.shape), "float32")) for k, a in enumerate((Q, K, V))]
    with pytest.raises(FrontendError, match="dropout_p=0.5"):
        from_pytorch(traced, infos)
