"""Outline, mark as extern and inline the functions handed to an external compiler."""

from __future__ import annotations

import numpy as np
import pytest

from relaykit import relay
from relaykit.errors import IRError
from relaykit.ir import GlobalVar, IRModule, Let, structural_equal
from relaykit.transform import (
    InferType,
    InlineCompilerFunctionsBoundTo,
    MarkCompilerFunctionsAsExtern,
    OutlineCompilerFunctionsWithExistingGlobalSymbols,
)


def _external(compiler: str, symbol: str | None) -> relay.Function:
    """``fn(a, b) { composite(a, b) }`` where the composite computes ``abs(a) * b``."""
    a, b = relay.var("a", shape=(3,)), relay.var("b", shape=(3,))
    p, q = relay.var("p", shape=(3,)), relay.var("q", shape=(3,))
    comp = relay.Function([p, q], relay.abs(p) * q).with_attr("Composite", f"{compiler}.absmul")
    attrs = {"Compiler": compiler, "Primitive": 1, "Inline": 1}
    if symbol is not None:
        attrs["global_symbol"] = symbol
    return relay.Function([a, b], comp(a, b)).with_attrs(attrs)


def _module(let_bound: bool = False) -> IRModule:
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    f, g = _external("libA", "libA_main_0"), _external("libB", "libB_main_1")
    if let_bound:
        fv = relay.var("f")
        body = Let(fv, f, relay.add(fv(x, y), g(y, x)))
    else:
        body = relay.add(f(x, y), g(y, x))
    return IRModule.from_expr(relay.Function([x, y], body))


def _run(mod: IRModule) -> np.ndarray:
    xv = np.array([-1.0, 2.0, -3.0], "float32")
    yv = np.array([4.0, -5.0, 6.0], "float32")
    return relay.create_executor("debug", mod=InferType()(mod)).evaluate()(xv, yv).numpy()


EXPECTED = np.abs([-1.0, 2.0, -3.0]) * [4.0, -5.0, 6.0] + np.abs([4.0, -5.0, 6.0]) * [-1, 2, -3]


@pytest.mark.parametrize("let_bound", [False, True])
def test_outline_lifts_the_filtered_compiler_only(let_bound: bool) -> None:
    out = OutlineCompilerFunctionsWithExistingGlobalSymbols("libA")(_module(let_bound))
    assert sorted(gv.name_hint for gv in out.get_global_vars()) == ["libA_main_0", "main"]
    body = out["main"].body
    assert isinstance(body.args[0].op, GlobalVar) and body.args[0].op.name_hint == "libA_main_0"
    assert not isinstance(body, Let)
    assert body.args[1].op.attrs["Compiler"] == "libB"  # still inline
    np.testing.assert_allclose(_run(out), EXPECTED, rtol=1e-6)


def test_outline_without_filter_lifts_every_compiler_and_shares_symbols() -> None:
    x = relay.var("x", shape=(3,))
    f1, f2 = _external("libA", "shared"), _external("libA", "shared")
    mod = IRModule.from_expr(relay.Function([x], relay.add(f1(x, x), f2(x, x))))
    out = OutlineCompilerFunctionsWithExistingGlobalSymbols()(mod)
    body = out["main"].body
    assert body.args[0].op is body.args[1].op is out.get_global_var("shared")


def test_outline_needs_a_global_symbol() -> None:
    x = relay.var("x", shape=(3,))
    mod = IRModule.from_expr(relay.Function([x], _external("libA", None)(x, x)))
    with pytest.raises(IRError, match="global_symbol"):
        OutlineCompilerFunctionsWithExistingGlobalSymbols("libA")(mod)


def test_mark_as_extern_replaces_the_attributes() -> None:
    out = OutlineCompilerFunctionsWithExistingGlobalSymbols()(_module())
    marked = MarkCompilerFunctionsAsExtern("libB")(out)
    assert dict(marked["libB_main_1"].attrs) == {"Extern": 1}
    assert marked["libA_main_0"].attrs["Compiler"] == "libA"
    assert structural_equal(marked["libB_main_1"].body, out["libB_main_1"].body)


def test_inline_restores_plain_operators() -> None:
    out = OutlineCompilerFunctionsWithExistingGlobalSymbols()(_module())
    back = InlineCompilerFunctionsBoundTo([out.get_global_var("libA_main_0")])(out)
    assert "libA_main_0" not in back and "libB_main_1" in back
    first = back["main"].body.args[0]
    assert first.op.name == "multiply" and first.args[0].op.name == "abs"
    np.testing.assert_allclose(_run(back), EXPECTED, rtol=1e-6)
    assert InlineCompilerFunctionsBoundTo([])(out) is out
