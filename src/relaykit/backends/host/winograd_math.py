"""The weight side of Winograd's F(2x2, 3x3) convolution, shared by the host's native
kernels (:mod:`relaykit.backends.host.conv`) and dnnl regions
(:mod:`relaykit.backends.dnnl.compile.winograd`).

A 3x3, stride-1 convolution becomes, per 2x2 output tile, ``Y = A^T [U (.) V] A`` with
``U = G w G^T`` (the weights, 4x4 per channel pair, transformed once in float64 here) and
``V = B^T d B`` (the tile's 4x4 input patch): 16 multiplies per channel pair and tile
instead of 36 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).

>>> import numpy as np
>>> w = np.ones((16, 8, 3, 3), np.float32)
>>> transformed_weight(w).shape    # [16 tile positions, C, K]
(16, 8, 16)
>>> transformed_weight_kc(w).shape  # [16 tile positions, K, C]
(16, 16, 8)
"""

from __future__ import annotations

import numpy as np

__all__ = ["G", "transformed_weight", "transformed_weight_kc"]

#: Winograd's weight transform G (4x3) for F(2x2, 3x3).
G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def _transform(w: np.ndarray) -> np.ndarray:
    """``G w G^T`` per channel pair in float64: [4, 4, K, C]."""
    return np.einsum("ia,kcab,jb->ijkc", G, w.astype(np.float64), G)


def transformed_weight(w: np.ndarray) -> np.ndarray:
    """``U`` [16, C, K] of a weight ``w`` [K, C, 3, 3]: ``G w G^T`` per channel pair,
    tile position ``4 i + j`` first (the layout of dnnl regions: ``V @ U``)."""
    k, c = w.shape[:2]
    u = _transform(w).transpose(0, 1, 3, 2)
    return np.ascontiguousarray(u.reshape(16, c, k), dtype=np.float32)


def transformed_weight_kc(w: np.ndarray) -> np.ndarray:
    """``U^T`` [16, K, C] of a weight ``w`` [K, C, 3, 3] (the host's layout: ``U^T @ V``
    with ``V`` [16, C, tiles])."""
    k, c = w.shape[:2]
    return np.ascontiguousarray(_transform(w).reshape(16, k, c), dtype=np.float32)
