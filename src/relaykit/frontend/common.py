"""What several frontends compute the same way, written once.

:func:`same_pads` is the ``SAME`` padding of TensorFlow, TFLite, Keras, PaddlePaddle and
Core ML (ONNX's ``SAME_UPPER`` / ``SAME_LOWER``): the output has ``ceil(size / stride)``
positions and the padding that needs is split in two, the odd pixel after (or, with
``odd_at_end=False``, before).

>>> same_pads(7, 3, 2), same_pads(8, 3, 2), same_pads(8, 3, 2, odd_at_end=False)
((1, 1), (0, 1), (1, 0))
>>> same_pads(6, 3, 1, dilation=2)
(2, 2)
"""

from __future__ import annotations

__all__ = ["same_pads"]


def same_pads(
    size: int, window: int, stride: int, dilation: int = 1, *, odd_at_end: bool = True
) -> tuple[int, int]:
    """The ``(before, after)`` pads of one axis of ``size`` for ``SAME`` padding of a
    ``window`` (dilated by ``dilation``) at ``stride``; the odd pixel goes after unless
    ``odd_at_end`` is false.

    >>> same_pads(224, 3, 2), same_pads(5, 1, 1)
    ((0, 1), (0, 0))
    """
    span = (window - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    small = total // 2
    return (small, total - small) if odd_at_end else (total - small, small)
