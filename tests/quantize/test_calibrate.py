"""Calibration: weight scales, percentile and KL thresholds against NumPy, the stats
collector, relay.analysis.get_calibration_data."""

from __future__ import annotations

import numpy as np
import pytest

import relaykit as tvm
from relaykit import relay
from relaykit.quantize.calibrate import max_scale, percentile_scale, power2_scale
from relaykit.relay.quantize.kl_divergence import _find_scale_by_kl


def test_weight_scales():
    w = np.array([0.3, -0.7, 0.2])
    assert power2_scale(w) == 1.0 and max_scale(w) == pytest.approx(0.7)
    assert power2_scale(np.array([3.0])) == 4.0 and power2_scale(np.array([4.0])) == 4.0
    assert power2_scale(np.zeros(3)) == 1.0


def test_percentile_matches_numpy():
    x = np.random.default_rng(0).standard_normal(200_000)
    k = int(x.size * 0.99999)
    assert percentile_scale(x) == np.sort(np.abs(x))[k]


def _kl_reference(arr, num_bins=8001, num_quantized_bins=255):
    """The TensorRT/MXNet threshold search written plainly (float64, loops)."""
    thres = np.abs(arr).max()
    hist, edges = np.histogram(arr, bins=num_bins, range=(-thres, thres))
    zero, half = num_bins // 2, num_quantized_bins // 2
    best = (np.inf, None)
    for i in range(half, zero + 1):
        start, stop = zero - i, zero + i + 1
        sliced = hist[start:stop].astype(float)
        p = sliced.copy()
        p[0] += hist[:start].sum()
        p[-1] += hist[stop:].sum()
        merged = len(sliced) // num_quantized_bins
        q = np.zeros(len(sliced))
        for j in range(num_quantized_bins):
            a = j * merged
            b = len(sliced) if j == num_quantized_bins - 1 else (j + 1) * merged
            nz = np.count_nonzero(sliced[a:b])
            if nz:
                q[a:b] = np.where(p[a:b] != 0, sliced[a:b].sum() / nz, 0)

        def smooth(d, eps=1e-4):
            zeros = d == 0
            if zeros.all() or eps * zeros.sum() / (~zeros).sum() >= 1:
                return None
            return d + np.where(zeros, eps, -eps * zeros.sum() / (~zeros).sum())

        ps, qs = smooth(p), smooth(q)
        if ps is None or qs is None:
            continue
        ps, qs = ps / ps.sum(), qs / qs.sum()
        div = np.sum(ps * np.log(ps / qs))
        if div < best[0]:
            best = (div, edges[stop])
    return best[1]


@pytest.mark.parametrize("dist", ["normal", "laplace"])
def test_kl_threshold_matches_a_plain_implementation(dist):
    rng = np.random.default_rng(1)
    arr = getattr(rng, dist)(size=20_000).astype("float32")
    got = _find_scale_by_kl(arr, num_bins=1001, num_quantized_bins=63)
    assert got == pytest.approx(_kl_reference(arr, 1001, 63), rel=1e-5)
    assert 0 < got < np.abs(arr).max()  # the search clips the tails


def test_stats_collector_profiles_non_weight_inputs():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.const(np.ones((2, 2, 1, 1), "float32"))
    body = relay.nn.relu(relay.nn.conv2d(x, w, kernel_size=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    with relay.quantize.qconfig(skip_conv_layers=None), relay.quantize.quantize_context():
        annotated = relay.quantize.annotate()(relay.quantize.partition()(mod))
    data = np.random.default_rng(2).uniform(-1, 1, (1, 2, 4, 4)).astype("float32")
    (chunk,) = relay.quantize._calibrate.collect_stats(annotated, [{"x": data}])
    # the conv input and the section's output (relu of the conv) are profiled, not w
    assert len(chunk) == 2
    np.testing.assert_allclose(chunk[0], data.reshape(-1))
    np.testing.assert_allclose(
        chunk[1], np.maximum(data.sum(1, keepdims=True), 0).repeat(2, 1).reshape(-1), rtol=1e-6
    )


def test_get_calibration_data_records_region_inputs_and_outputs():
    mod = tvm.IRModule()
    a, b = relay.var("a", shape=(3,)), relay.var("b", shape=(3,))
    g0 = relay.GlobalVar("g0")
    mod[g0] = relay.Function([a, b], relay.Tuple([a + b, a * b])).with_attr("Compiler", "lib")
    c = relay.var("c", shape=(3,))
    g1 = relay.GlobalVar("g1")
    mod[g1] = relay.Function([c], relay.exp(c)).with_attr("Compiler", "lib")
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    r = relay.Call(g0, [x, y])
    mod["main"] = relay.Function([x, y], relay.Call(g1, [relay.TupleGetItem(r, 1)]))
    xd, yd = np.array([1.0, 2, 3], "float32"), np.array([0.5, -1, 2], "float32")
    data = relay.analysis.get_calibration_data(mod, {"x": xd, "y": yd})
    assert set(data) == {g0, g1}
    np.testing.assert_array_equal(data[g0]["inputs"][1].numpy(), yd)
    np.testing.assert_allclose(data[g0]["outputs"][0].numpy(), xd + yd)
    np.testing.assert_allclose(data[g0]["outputs"][1].numpy(), xd * yd)
    np.testing.assert_allclose(data[g1]["inputs"][0].numpy(), xd * yd)
    np.testing.assert_allclose(data[g1]["outputs"][0].numpy(), np.exp(xd * yd), rtol=1e-6)
