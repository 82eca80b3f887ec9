"""What several frontends compute the same way, written once.

:func:`converting` names, in the error, the node (operator, layer) whose conversion
failed; :func:`build_module` makes the ``main`` a converted graph becomes.
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

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from relaykit.errors import FrontendError, RelayKitError, UnsupportedOpError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function, Tuple, TupleWrapper, Var
from relaykit.ir.module import IRModule
from relaykit.transform.infer_type import InferType

__all__ = ["build_module", "converting", "output_expr", "same_pads"]

_Node = TypeVar("_Node")


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


@contextmanager
def converting(node: _Node, describe: Callable[[_Node], str]) -> Iterator[None]:
    """Errors raised while ``node`` is converted name it: a :class:`RelayKitError` becomes
    a :class:`FrontendError` that starts with ``describe(node)`` (an
    :class:`UnsupportedOpError`, or an error that already starts so, passes as it is), and
    any other exception (a converter's own bug) a :class:`FrontendError` naming the node,
    chained to it."""
    try:
        yield
    except UnsupportedOpError:
        raise
    except RelayKitError as err:
        where = describe(node)
        if str(err).startswith(where):
            raise
        raise FrontendError(f"{where}: {err}") from err
    except Exception as err:  # a converter's own failure still names the node it was on
        raise FrontendError(
            f"{describe(node)}: its conversion failed ({type(err).__name__}: {err}); this is a "
            "bug in the converter or a case it does not handle: please report it with the model"
        ) from err


def output_expr(value: Any, what: str) -> Expr:
    """A converted output (an expression or a nested list/tuple of them) as one
    expression."""
    if isinstance(value, TupleWrapper):
        return value.astuple()
    if isinstance(value, Expr):
        return value
    if isinstance(value, (list, tuple)):
        return Tuple([output_expr(v, what) for v in value])
    raise FrontendError(
        f"{what} returns a {type(value).__name__} ({value!r}), not a tensor: relaykit's "
        "functions return tensors (or tuples of them)"
    )


def build_module(result: Any, inputs: Sequence[Var], params: Sequence[Var], what: str) -> IRModule:
    """``main(inputs..., used params...)`` returning ``result``, typed."""
    body = output_expr(result, what)
    used = set(free_vars(body))
    extra = [v for v in used if v not in set(inputs) and v not in set(params)]
    if extra:
        raise FrontendError(f"{what}: the result uses unbound variables {extra}")
    args = [*inputs, *(p for p in params if p in used)]
    return InferType()(IRModule.from_expr(Function(args, body)))
