"""Tensors crossing between torch and relaykit's executors on the CPU, without copies
where DLPack allows, and torch's thread count kept as it was."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from .registry import require_torch

torch = require_torch()

__all__ = ["as_numpy", "as_tensor", "torch_threads_kept"]


@contextlib.contextmanager
def torch_threads_kept() -> Iterator[None]:
    """Keep torch's intra-op thread count as it was: relaykit's thread policy shares the
    cores between its backends by setting the OpenMP/BLAS thread counts, which torch
    (and dynamo, which checks global state while tracing) would otherwise see change."""
    n = torch.get_num_threads()
    try:
        yield
    finally:
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


def as_numpy(tensor: Any) -> np.ndarray:
    """A CPU tensor as a NumPy array sharing its memory (DLPack), copied only when it
    is not contiguous or DLPack cannot carry its dtype."""
    t = tensor.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    try:
        return np.from_dlpack(t)
    except (BufferError, TypeError, RuntimeError):  # e.g. bfloat16: no NumPy dtype
        return t.numpy()


def as_tensor(array: np.ndarray) -> Any:
    """A NumPy array as a tensor sharing its memory (DLPack; the array is the
    executor's fresh copy of an output, so nobody else writes it)."""
    try:
        return torch.from_dlpack(array)
    except (BufferError, TypeError, RuntimeError):
        return torch.from_numpy(array)
