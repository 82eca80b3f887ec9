"""``relay.testing.byoc``: a hand-written annotator for trying BYOC on small graphs.

:class:`CcompilerAnnotator` marks every ``add → subtract → multiply`` chain
(each feeding the next) as one ``ccompiler`` region: a ``compiler_begin`` on
each input of the chain, a ``compiler_end`` after the ``multiply``. Operators
outside such a chain stay on the host. ``PartitionGraph`` then turns each
marked region into an external function.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,)); y = relay.var("y", shape=(2,))
>>> f = relay.Function([x, y], (x + y - y) * x)
>>> annotated = CcompilerAnnotator().visit(f)
>>> sorted(op_names(annotated))  # doctest: +NORMALIZE_WHITESPACE
['add', 'annotation.compiler_begin', 'annotation.compiler_end', 'multiply', 'subtract']
"""

from __future__ import annotations

from relaykit.ir.expr import Call, Expr
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.op import Op
from relaykit.op.annotation import compiler_begin, compiler_end

__all__ = ["CcompilerAnnotator", "op_names"]

_COMPILER = "ccompiler"


def _op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def op_names(e: Expr) -> set[str]:
    """The operator names called anywhere in ``e``."""
    return {name for n in post_order(e) if (name := _op_name(n)) is not None}


class CcompilerAnnotator:
    """Annotate ``add → subtract → multiply`` chains for the ``ccompiler`` backend."""

    compiler = _COMPILER

    def _chains(self, e: Expr) -> tuple[set[int], set[int]]:
        """The ids of the calls inside a chain, and of the multiplies that end one."""
        inside: set[int] = set()
        ends: set[int] = set()
        for node in post_order(e):
            if _op_name(node) != "multiply":
                continue
            assert isinstance(node, Call)
            for sub in node.args:
                if _op_name(sub) != "subtract":
                    continue
                assert isinstance(sub, Call)
                adds = [a for a in sub.args if _op_name(a) == "add"]
                if adds:
                    inside.update({id(node), id(sub), *(id(a) for a in adds)})
                    ends.add(id(node))
        return inside, ends

    def visit(self, expr: Expr) -> Expr:
        """``expr`` with its chains annotated."""
        inside, ends = self._chains(expr)

        def post(new: Expr, old: Expr) -> Expr | None:
            if id(old) not in inside:
                return None
            assert isinstance(new, Call) and isinstance(old, Call)
            args = [
                a if id(o) in inside else compiler_begin(a, self.compiler)
                for a, o in zip(new.args, old.args, strict=True)
            ]
            out: Expr = new.with_fields(args=args)
            if id(old) in ends:
                out = compiler_end(out, self.compiler)
            return out

        return rewrite_post_order(expr, post)
