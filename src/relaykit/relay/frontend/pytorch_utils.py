"""``tvm.relay.frontend.pytorch_utils``: helpers of the PyTorch importer.

>>> is_version_greater_than("0.0.1")
True
"""

from __future__ import annotations

from relaykit.errors import MissingDependencyError

__all__ = ["is_version_greater_than"]


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def is_version_greater_than(ver: str) -> bool:
    """Whether the installed PyTorch's release is newer than ``ver`` (``"1.6.0"``)."""
    try:
        import torch
    except ImportError as err:
        raise MissingDependencyError(
            "is_version_greater_than needs PyTorch: pip install torch"
        ) from err
    return _release(torch.__version__) > _release(ver)
