"""``AnnotateSpans``: give every node of a module a span into the module's printed text.

Nodes built in Python have no source position. This pass prints the module
(metadata included), parses the text back under the source name
``GeneratedSource`` and returns the parsed module, so that each node's ``span``
names its line and column in that text (what TVM's pass of the same name does,
to make later error messages point somewhere readable).

>>> from relaykit.ir import IRModule, Function, Var, TensorType
>>> x = Var("x", TensorType((2,)))
>>> mod = AnnotateSpans()(IRModule.from_expr(Function([x], x)))
>>> mod["main"].span.source_name
'GeneratedSource'
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.module import IRModule
from relaykit.transform.infer_type import infer_module
from relaykit.transform.pass_infra import module_pass

from .parser import parse
from .printer import astext

__all__ = ["AnnotateSpans", "annotate_spans", "GENERATED_SOURCE", "SourceName"]

#: The source name of the spans this pass sets.
GENERATED_SOURCE = "GeneratedSource"


class SourceName:
    """TVM's ``SourceName``: the name of a source (a file, a frontend's node name) that a
    :class:`relaykit.ir.Span` points into; ``str()`` of it is the name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise ArgumentError(f"SourceName takes a str, got {type(name).__name__}")
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"SourceName({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SourceName) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("SourceName", self.name))


def annotate_spans(mod: IRModule) -> IRModule:
    """``mod`` re-read from its own text, each node carrying a span into that text.

    Types are inferred again when every function of ``mod`` was type-checked; module
    attributes are kept.
    """
    typed = all(fn.has_checked_type for _, fn in mod.items())
    text = astext(mod, show_meta_data=True)
    out = parse(text, GENERATED_SOURCE, infer_types=False)
    if typed:
        out = infer_module(out)
    for key, value in mod.attrs.items():
        out = out.with_attr(key, value)
    return out


def AnnotateSpans() -> Any:
    """TVM's ``relay.transform.AnnotateSpans()``: the pass form of :func:`annotate_spans`."""

    @module_pass(opt_level=0, name="AnnotateSpans")
    def _annotate(mod: IRModule, ctx: Any) -> IRModule:
        return annotate_spans(mod)

    return _annotate
