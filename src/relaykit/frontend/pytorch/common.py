"""What the three PyTorch paths share after conversion: the error listing every
unsupported op (and, from :mod:`relaykit.frontend.common`, the module they return and the
errors that name a node)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

from relaykit.errors import UnsupportedOpError
from relaykit.frontend.common import build_module, converting, output_expr

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
