"""Choosing a clipping threshold by minimizing the KL divergence between a tensor's
histogram and its quantized version (the TensorRT calibration method, as TVM's
``relay.quantize.kl_divergence`` does it).

>>> rng = np.random.default_rng(0)
>>> data = rng.normal(size=20000).astype("float32")
>>> t = find_scale_by_kl(data)
>>> 1.0 < t < float(np.abs(data).max())
True
"""

from __future__ import annotations

import numpy as np

from relaykit.errors import ArgumentError

__all__ = ["find_scale_by_kl", "minimize_kl"]


def _smooth(p: np.ndarray, eps: float = 0.0001) -> np.ndarray | None:
    """Move ``eps`` of mass onto the empty bins (None when the distribution is empty or
    too sparse to do so)."""
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if n_nonzeros == 0:
        return None
    eps1 = eps * n_zeros / n_nonzeros
    if eps1 >= 1.0:
        return None
    return p + np.where(zeros, eps, -eps1)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    p = p / p.sum()
    q = q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def minimize_kl(hist: np.ndarray, hist_edges: np.ndarray, num_quantized_bins: int = 255) -> float:
    """The threshold (a right bin edge) whose clipped, ``num_quantized_bins``-level
    quantized histogram is closest to the clipped histogram in KL divergence."""
    hist = np.asarray(hist, np.float64)
    num_bins = hist.size
    zero = num_bins // 2
    half = num_quantized_bins // 2
    cumsum = np.concatenate([[0.0], np.cumsum(hist)])
    best, best_t = np.inf, float(hist_edges[-1])
    for i in range(half, zero + 1):
        start, stop = zero - i, zero + i + 1
        sliced = hist[start:stop].copy()
        p = sliced.copy()
        p[0] = cumsum[start + 1]  # everything left of the window, clipped into its edge
        p[-1] = cumsum[num_bins] - cumsum[stop - 1]
        merged = sliced.size // num_quantized_bins
        # bin j merges [j*merged, (j+1)*merged); the last also takes the remainder
        which = np.minimum(np.arange(sliced.size) // merged, num_quantized_bins - 1)
        sums = np.bincount(which, weights=sliced, minlength=num_quantized_bins)
        norms = np.bincount(which, weights=sliced != 0, minlength=num_quantized_bins)
        spread = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)[which]
        q = np.where(p != 0, spread, 0.0)
        ps, qs = _smooth(p), _smooth(q)
        div = np.inf if ps is None or qs is None else _kl(ps, qs)
        if div < best:
            best, best_t = div, float(hist_edges[stop])
    return best_t


def find_scale_by_kl(
    arr: np.ndarray,
    quantized_dtype: str = "int8",
    num_bins: int = 8001,
    num_quantized_bins: int = 255,
) -> float:
    """The KL-optimal clipping threshold of the values in ``arr``."""
    arr = np.asarray(arr)
    if arr.size == 0:
        raise ArgumentError("kl_divergence calibration got an empty tensor")
    lo, hi = float(np.min(arr)), float(np.max(arr))
    thres = max(abs(lo), abs(hi))
    if thres == 0.0:
        return 0.0
    if lo >= 0 and quantized_dtype == "uint8":
        num_quantized_bins = num_quantized_bins * 2 + 1
    hist, edges = np.histogram(arr, bins=num_bins, range=(-thres, thres))
    return minimize_kl(hist, edges.astype(np.float32), num_quantized_bins)
