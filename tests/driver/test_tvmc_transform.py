"""tvmc.transform.apply_graph_transforms: mixed precision over a chosen operator list."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.driver.tvmc import TVMCException
from relaykit.driver.tvmc.transform import apply_graph_transforms, convert_to_mixed_precision

RNG = np.random.default_rng(0)


def _model():
    x = relay.var("x", shape=(2, 8))
    w1 = RNG.standard_normal((16, 8)).astype("float32")
    w2 = RNG.standard_normal((4, 16)).astype("float32")
    h = relay.nn.relu(relay.nn.dense(x, relay.const(w1)))
    y = relay.nn.dense(h, relay.const(w2))
    mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([x], y)))
    return mod, w1, w2


def _dense_dtypes(mod):
    found = []
    relay.analysis.post_order_visit(
        mod["main"],
        lambda n: (
            found.append(n.checked_type.dtype)
            if isinstance(n, relay.Call) and getattr(n.op, "name", "") == "nn.dense"
            else None
        ),
    )
    return found


def test_mixed_precision_converts_the_listed_ops_and_keeps_the_output_dtype():
    mod, w1, w2 = _model()
    args = {
        "mixed_precision": True,
        "mixed_precision_ops": ["nn.dense"],
        "mixed_precision_calculation_type": "float16",
        "mixed_precision_acc_type": "float32",
    }
    out = apply_graph_transforms(mod, args)
    assert "float16" in out.astext()
    assert _dense_dtypes(out) == ["float32", "float32"]  # accumulated in float32
    assert out["main"].ret_type.dtype == "float32"
    data = RNG.standard_normal((2, 8)).astype("float32")
    f16 = lambda a: a.astype("float16").astype("float64")  # noqa: E731
    h = np.maximum(f16(data) @ f16(w1).T, 0)
    expected = f16(h) @ f16(w2).T
    got = relay.create_executor("debug", mod=out).evaluate()(data).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-2, atol=1e-2)


def test_nothing_asked_nothing_changed_and_bad_ops_are_named():
    mod, _, _ = _model()
    assert apply_graph_transforms(mod, {}) is mod
    assert apply_graph_transforms(mod, {"mixed_precision": False}) is mod
    with pytest.raises(TVMCException, match="nn.not_an_op"):
        convert_to_mixed_precision(mod, ["nn.not_an_op"])
    # the op's own rule is back after the conversion
    from relaykit.ir.op import default_registry

    before = default_registry.attr_entry("nn.dense", "FTVMMixedPrecisionConversionType")
    convert_to_mixed_precision(mod, ["nn.dense"], "float16", "float32")
    assert default_registry.attr_entry("nn.dense", "FTVMMixedPrecisionConversionType") == before
