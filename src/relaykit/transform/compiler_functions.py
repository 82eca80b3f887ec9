"""Helpers for functions handed to an external compiler (``Compiler="<name>"``).

Three module passes, each filtered by the compiler's name (``""``: every compiler):

- ``OutlineCompilerFunctionsWithExistingGlobalSymbols(compiler)``: every inline
  ``Compiler`` function (called directly, or bound by a ``let`` and called through
  its variable) becomes a global function named by its ``global_symbol`` attribute,
  and its calls call that global. Functions with the same ``global_symbol`` share
  one global.
- ``MarkCompilerFunctionsAsExtern(compiler)``: every global ``Compiler`` function
  loses its attributes and gets ``Extern=1`` instead: it is compiled elsewhere and
  only linked in.
- ``InlineCompilerFunctionsBoundTo(global_vars)``: calls of those global ``Compiler``
  functions are replaced by their bodies, with every ``Composite`` call inside
  inlined too, and the globals are removed.

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> p = relay.var("p", shape=(2,))
>>> ext = relay.Function([p], relay.abs(p)).with_attrs(
...     {"Compiler": "lib", "global_symbol": "lib_main_0", "Primitive": 1})
>>> mod = IRModule.from_expr(relay.Function([x], ext(x)))
>>> out = OutlineCompilerFunctionsWithExistingGlobalSymbols("lib")(mod)
>>> out["main"].body.op.name_hint, sorted(out["lib_main_0"].attrs)
('lib_main_0', ['Compiler', 'Primitive', 'global_symbol'])
>>> dict(MarkCompilerFunctionsAsExtern()(out)["lib_main_0"].attrs)
{'Extern': 1}
>>> back = InlineCompilerFunctionsBoundTo([out.get_global_var("lib_main_0")])(out)
>>> back["main"].body.op.name, "lib_main_0" in back
('abs', False)
"""

from __future__ import annotations

from collections.abc import Iterable

from relaykit.errors import IRError
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from relaykit.ir.functor import post_order, rebuild, rewrite_post_order
from relaykit.ir.module import IRModule

from .bind import bind
from .pass_infra import ModulePass, PassContext

__all__ = [
    "OutlineCompilerFunctionsWithExistingGlobalSymbols",
    "MarkCompilerFunctionsAsExtern",
    "InlineCompilerFunctionsBoundTo",
    "is_compiler_function",
]

#: Attributes of functions that are compiled apart from the rest of the module.
_APART = ("Compiler", "Primitive", "Extern")


def is_compiler_function(expr: Expr, compiler: str = "") -> bool:
    """Whether ``expr`` is a function for an external compiler (for ``compiler``, or for
    any when it is ``""``)."""
    if not isinstance(expr, Function):
        return False
    name = expr.attrs.get("Compiler")
    return name is not None and (not compiler or str(name) == compiler)


def _optimizable(fn: Function) -> bool:
    return not any(k in fn.attrs for k in _APART)


class _Outliner:
    """Lifts the inline compiler functions of one module, one global per symbol."""

    def __init__(self, mod: IRModule, compiler: str) -> None:
        self.mod = mod
        self.compiler = compiler
        self.symbols: dict[str, GlobalVar] = {}

    def global_for(self, fn: Function) -> GlobalVar:
        symbol = fn.attrs.get("global_symbol")
        if symbol is None:
            raise IRError(
                f"a function for compiler {fn.attrs.get('Compiler')!r} has no global_symbol "
                "attribute, so it cannot be outlined under an existing name; set one with "
                "fn.with_attr('global_symbol', name)"
            )
        name = str(symbol)
        gv = self.symbols.get(name)
        if gv is None:
            if self.mod.contains_global_var(name):
                gv = self.mod.get_global_var(name)
            else:
                gv = GlobalVar(name)
                self.mod.update_func(gv, fn)
            self.symbols[name] = gv
        return gv

    def rewrite(self, body: Expr) -> Expr:
        """``body`` with its compiler functions outlined: calls call the globals, and a
        let binding such a function is dropped, its variable standing for the global."""
        bound: dict[Var, GlobalVar] = {}
        for node in post_order(body):
            if isinstance(node, Let) and is_compiler_function(node.value, self.compiler):
                assert isinstance(node.value, Function)
                bound[node.var] = self.global_for(node.value)
        memo: dict[Expr, Expr] = {}
        for node in post_order(body):
            if isinstance(node, Var) and node in bound:
                memo[node] = bound[node]
            elif isinstance(node, Let) and node.var in bound:
                memo[node] = memo[node.body]
            else:
                new = rebuild(node, memo.__getitem__)
                if isinstance(new, Call) and is_compiler_function(new.op, self.compiler):
                    assert isinstance(new.op, Function)
                    new = new.with_fields(op=self.global_for(new.op))
                memo[node] = new
        return memo[body]


def _outline(mod: IRModule, compiler: str) -> IRModule:
    out = mod.copy()
    outliner = _Outliner(out, compiler)
    for gv, fn in mod.items():
        if _optimizable(fn):
            body = outliner.rewrite(fn.body)
            if body is not fn.body:
                out.update_func(gv, fn.with_fields(body=body))
    return out


def OutlineCompilerFunctionsWithExistingGlobalSymbols(compiler_filter: str = "") -> ModulePass:
    """TVM's pass of that name: see the module."""

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        return _outline(mod, str(compiler_filter))

    return ModulePass(run, 0, "OutlineCompilerFunctionsWithExistingGlobalSymbols")


def MarkCompilerFunctionsAsExtern(compiler_filter: str = "") -> ModulePass:
    """TVM's pass of that name: see the module."""

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, fn in mod.items():
            if is_compiler_function(fn, str(compiler_filter)):
                out.update_func(gv, fn.with_fields(attrs={"Extern": 1}))
        return out

    return ModulePass(run, 0, "MarkCompilerFunctionsAsExtern")


def _inline_composites(body: Expr) -> Expr:
    def post(new: Expr, old: Expr) -> Expr | None:
        if isinstance(new, Call) and isinstance(new.op, Function):
            fn = new.op
            if "Composite" not in fn.attrs:
                raise IRError(
                    "InlineCompilerFunctionsBoundTo: a compiler function calls a function "
                    "literal that is not a Composite; only composites can be inlined"
                )
            if len(fn.params) != len(new.args):
                raise IRError(
                    f"composite {fn.attrs['Composite']!r} takes {len(fn.params)} arguments, "
                    f"called with {len(new.args)}"
                )
            return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
        return None

    return rewrite_post_order(body, post)


def InlineCompilerFunctionsBoundTo(global_vars: Iterable[GlobalVar]) -> ModulePass:
    """TVM's pass of that name: see the module."""
    names = {gv.name_hint if isinstance(gv, GlobalVar) else str(gv) for gv in global_vars}

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        if not names:
            return mod
        inlined: dict[str, Function] = {}
        for name in names:
            if name not in mod:
                raise IRError(f"InlineCompilerFunctionsBoundTo: no global function @{name}")
            fn = mod[name]
            if not is_compiler_function(fn):
                raise IRError(
                    f"InlineCompilerFunctionsBoundTo: @{name} has no Compiler attribute; "
                    "only functions for an external compiler are inlined by this pass"
                )
            inlined[name] = fn.with_fields(body=_inline_composites(fn.body))

        def post(new: Expr, old: Expr) -> Expr | None:
            if isinstance(new, Call) and isinstance(new.op, GlobalVar):
                fn = inlined.get(new.op.name_hint)
                if fn is not None:
                    if len(fn.params) != len(new.args):
                        raise IRError(
                            f"@{new.op.name_hint} takes {len(fn.params)} arguments, "
                            f"called with {len(new.args)}"
                        )
                    return bind(fn.body, dict(zip(fn.params, new.args, strict=True)))
            return None

        out = mod.copy()
        for gv, fn in mod.items():
            if gv.name_hint in inlined:
                out.remove(gv)
            elif _optimizable(fn):
                body = rewrite_post_order(fn.body, post)
                if body is not fn.body:
                    out.update_func(gv, fn.with_fields(body=body))
        return out

    return ModulePass(run, 0, "InlineCompilerFunctionsBoundTo")
