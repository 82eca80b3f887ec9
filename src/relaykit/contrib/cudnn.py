"""``tvm.contrib.cudnn``: whether cuDNN can be used — never, in relaykit.

relaykit runs on the CPU; its library backend is oneDNN (``relaykit.backends.dnnl``).

>>> exists()
False
"""

from __future__ import annotations

__all__ = ["exists"]


def exists() -> bool:
    """Whether cuDNN kernels are available: relaykit has no CUDA, so False."""
    return False
