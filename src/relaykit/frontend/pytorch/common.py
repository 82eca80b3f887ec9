"""What the three PyTorch paths share after conversion: the module they return and
the error listing every unsupported op."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from relaykit.errors import FrontendError, RelayKitError, UnsupportedOpError
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Expr, Function, Tuple, TupleWrapper, Var
from relaykit.ir.module import IRModule
from relaykit.transform.infer_type import InferType

__all__ = [
    "build_module",
    "converting",
    "output_expr",
    "report_unsupported",
    "report_unsupported_nodes",
]

_Node = TypeVar("_Node")


def report_unsupported(ops: dict[str, tuple[int, str]], what: str) -> None:
    """Raise one :class:`UnsupportedOpError` listing ``op -> (count, first node)``."""
    lines = [
        f"  {name}: {n} node{'s' if n > 1 else ''} (first: {first})"
        for name, (n, first) in sorted(ops.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
    raise UnsupportedOpError(
        f"the {what} uses {len(ops)} operator{'s' if len(ops) > 1 else ''} relaykit cannot "
        "convert:\n" + "\n".join(lines) + "\nsupply a converter for each (custom_convert_map "
        "for from_pytorch) or rewrite the model to avoid them",
        ops,
    )


def report_unsupported_nodes(
    found: Iterable[tuple[str, _Node]], describe: Callable[[_Node], str], what: str
) -> None:
    """Count the ``(op name, node)`` pairs of ``found`` (the nodes no converter takes)
    and, if there are any, raise :func:`report_unsupported` over them, each op with its
    count and its first node as ``describe`` shows it."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for name, node in found:
        counts[name] += 1
        if name not in first:
            first[name] = describe(node)
    if counts:
        report_unsupported({k: (counts[k], first[k]) for k in counts}, what)


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
