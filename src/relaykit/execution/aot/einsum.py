"""The C emitter of ``einsum``: one loop per index letter of the equation.

The equation is expanded at build time (``...`` becomes letters of its own, an implicit
output is the letters used once, in alphabetical order); the kernel loops over the
output letters, then over the summed ones, and adds the product of the operands'
elements into a ``double`` accumulator.
"""

from __future__ import annotations

import string

from relaykit.errors import CodegenError

from .emit import KernelContext, contiguous_strides, register_c_emitter

__all__ = ["expand_equation"]


def expand_equation(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' and the output's index letters, with ``...`` and an implicit
    output spelled out.

    >>> expand_equation("...ij,jk", [3, 2])
    (['Aij', 'jk'], 'Aik')
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise CodegenError(f"einsum {equation!r} has {len(terms)} operands, given {len(ranks)}")
    spare = [c for c in string.ascii_uppercase if c not in eq]
    ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks, strict=True)
               if "..." in t), default=0)  # fmt: skip
    ell_letters = "".join(spare[:ell])
    out_terms = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            k = r - len(t.replace("...", ""))
            t = t.replace("...", ell_letters[ell - k :])
        if len(t) != r:
            raise CodegenError(f"einsum term {t!r} does not match an operand of rank {r}")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell_letters)
    else:
        letters = "".join(out_terms)
        out = ell_letters + "".join(sorted(c for c in set(letters) - set(ell_letters)
                                           if letters.count(c) == 1))  # fmt: skip
    return out_terms, out


@register_c_emitter("einsum")
def _einsum(ctx: KernelContext) -> None:
    o = ctx.outs[0]
    try:
        terms, out = expand_equation(str(ctx.attrs["equation"]), [len(b.shape) for b in ctx.ins])
    except CodegenError as err:
        raise ctx.error(str(err)) from err
    size: dict[str, int] = {}
    for t, b in zip(terms, ctx.ins, strict=True):
        for c, n in zip(t, b.shape, strict=True):
            if size.setdefault(c, n) != n and n != 1:
                if size[c] == 1:
                    size[c] = n
                else:
                    raise ctx.error(f"index {c!r} has sizes {size[c]} and {n}")
    summed = [c for c in size if c not in out]
    ctx.line("int64_t at = 0;")
    for c in out:
        ctx.line(f"for (int64_t i_{c} = 0; i_{c} < {size[c]}; ++i_{c})")
    ctx.line("{")
    ctx.line("  double acc = 0;")
    for c in summed:
        ctx.line(f"  for (int64_t i_{c} = 0; i_{c} < {size[c]}; ++i_{c})")
    factors = []
    for k, (t, b) in enumerate(zip(terms, ctx.ins, strict=True)):
        st = contiguous_strides(b.shape)
        idx = " + ".join(f"i_{c} * {s}" for c, s, n in zip(t, st, b.shape, strict=True) if n > 1)
        factors.append(f"(double)a{k}[{idx or '0'}]")
    ctx.line(f"    acc += {' * '.join(factors)};")
    ctx.line(f"  o0[at++] = ({o.ctype})acc;")
    ctx.line("}")
