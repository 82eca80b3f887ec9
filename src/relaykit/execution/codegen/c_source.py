"""Base of C-source codegens: partitioned functions -> C -> shared library.

A backend makes a :class:`CSourceCodegen` for its target and registers an
*emitter* per operator or composite name. An emitter writes the C statements
computing one call, given :class:`CBuffer` pointers for the call's inputs and
outputs::

    codegen = CSourceCodegen("mylib", preamble=MY_HELPER_FUNCTIONS)

    @codegen.emitter("nn.relu")
    def relu(ctx, call, ins, outs):
        ctx.line(f"my_relu({ins[0].name}, {outs[0].name}, {outs[0].size});")

    register_codegen("mylib", codegen, per_module=True)

Each function becomes ``int32_t <symbol>(void **args)`` with ``args`` = inputs,
outputs, constants, workspace (see :mod:`relaykit.runtime.c_module`). Constants
are passed as pointers to arrays kept by the runtime module, never written
as C literals; intermediate tensors live in a workspace the runtime
allocates once. All names in the C text go through
:func:`~relaykit.execution.codegen.names.c_identifier` /
:func:`~relaykit.execution.codegen.names.c_comment`, so no target or symbol
name can inject code.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.c_module import CFunctionSignature, CSourceModule, TensorSpec

from .c_artifact import GeneratedCModule
from .names import c_comment, c_identifier, c_string
from .toolchain import DEFAULT_CFLAGS, compile_shared_library

__all__ = [
    "C_TYPES",
    "CBuffer",
    "EmitContext",
    "Emitter",
    "CSourceCodegen",
    "flatten_types",
    "composite_calls",
    "region_symbol",
]

C_TYPES: dict[str, str] = {
    "float32": "float",
    "float64": "double",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "bool": "uint8_t",
}
_ALIGN = 64

_HEADER = """\
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#define RK_EXPORT __attribute__((visibility("default")))
static char rk_error[1024];
RK_EXPORT const char *relaykit_last_error(void) { return rk_error; }
#define RK_FAIL(msg) do { snprintf(rk_error, sizeof rk_error, "%s", (msg)); return -1; } while (0)
"""


@dataclass
class CBuffer:
    """A tensor in generated C: ``name`` is a pointer expression of ``ctype *``."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def ctype(self) -> str:
        return C_TYPES[self.dtype]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


def flatten_types(ty: Type) -> list[TensorType]:
    """The tensor types of a (nested) tuple type, in order."""
    out: list[TensorType] = []
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        elif isinstance(t, TensorType):
            out.append(t)
        else:
            raise CodegenError(f"cannot generate code for a value of type {t}")
    return out


def composite_calls(call: Call) -> dict[str, Call]:
    """The operator calls in the body of the composite function ``call`` calls, by op name
    (the last one when an op occurs twice)."""
    fn = call.op
    if not isinstance(fn, Function):
        return {}
    return {
        n.op.name: n for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)
    }


def region_symbol(func: Function) -> str:
    """The ``global_symbol`` of a partitioned function (error if missing)."""
    sym = func.attrs.get("global_symbol") if func.attrs else None
    if not isinstance(sym, str) or not sym:
        raise CodegenError(
            f"a function for backend {func.attrs.get('Compiler')!r} has no global_symbol "
            "attribute; run it through relaykit.byoc.PartitionGraph"
        )
    return sym


@dataclass
class EmitContext:
    """What an emitter writes into: the C lines of one generated function."""

    target: str
    symbol: str
    lines: list[str] = field(default_factory=list)
    current: str = ""
    values: Mapping[Expr, Any] = field(default_factory=dict)

    def line(self, text: str) -> None:
        self.lines.append("  " + text)

    def error(self, message: str) -> CodegenError:
        """A codegen-time error naming the backend, function and current node."""
        where = f" at {self.current}" if self.current else ""
        return CodegenError(f"backend {self.target!r}, function {self.symbol}{where}: {message}")

    def buffer(self, expr: Expr) -> Any:
        """The C buffer of an expression of the function or of the current composite's
        body (its parameters resolve to the composite call's arguments)."""
        try:
            return self.values[expr]
        except KeyError:
            raise self.error(f"no buffer for a {type(expr).__name__} node") from None

    def fail_at_runtime(self, condition: str, message: str) -> None:
        """Emit: if ``condition`` holds at run time, fail with ``message``."""
        self.line(f"if ({condition}) RK_FAIL({c_string(message)});")


Emitter = Callable[[EmitContext, Call, list[Any], list[CBuffer]], None]


def _describe(call: Call) -> str:
    if isinstance(call.op, Op):
        return call.op.name
    if isinstance(call.op, Function):
        return str(call.op.attrs.get("Composite", "function"))
    return type(call.op).__name__


@dataclass
class _FunctionBuild:
    """The state of generating one function (see :meth:`CSourceCodegen.generate_function`)."""

    ctx: EmitContext
    symbol: str
    c_name: str
    inputs: list[TensorSpec] = field(default_factory=list)
    values: dict[Expr, Any] = field(default_factory=dict)
    decls: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    constants: list[tuple[str, np.ndarray, CBuffer]] = field(default_factory=list)


class CSourceCodegen:
    """Generates C for partitioned functions and compiles it (see the module docstring)."""

    def __init__(
        self,
        target: str,
        preamble: str = "",
        cflags: Sequence[str] = DEFAULT_CFLAGS,
        libs: Sequence[str] = ("-lm",),
    ) -> None:
        self.target = target
        self.preamble = preamble
        self.cflags = tuple(cflags)
        self.libs = tuple(libs)
        self.emitters: dict[str, Emitter] = {}

    def emitter(self, *names: str) -> Callable[[Emitter], Emitter]:
        """Register a function as the emitter of operator or composite ``names``."""

        def _register(fn: Emitter) -> Emitter:
            for n in names:
                self.emitters[n] = fn
            return fn

        return _register

    # -- one function -------------------------------------------------------------------------
    def generate_function(
        self, func: Function, symbol: str
    ) -> tuple[str, CFunctionSignature, dict[str, np.ndarray]]:
        """The C text, signature and constants of one partitioned function.

        The steps: bind the parameters to the input pointers, walk the body giving every
        value a buffer, declare the outputs, constants and workspace slices, emit one C
        call per operator or composite, and assemble the function.
        """
        c_name = c_identifier(symbol)
        if c_name.startswith(("rk_", "relaykit_")):
            c_name = "sym_" + c_name
        fb = _FunctionBuild(EmitContext(self.target, symbol), symbol, c_name)
        self._bind_params(fb, func)
        self._assign_buffers(fb, func)
        outputs = _flatten_value(fb.values[func.body])
        out_specs, copies = self._declare_outputs(fb, outputs, len(func.params))
        workspace = self._declare_workspace(fb, len(func.params) + len(out_specs))
        self._emit_calls(fb)
        for k, buf in copies:
            fb.ctx.line(f"memcpy(out{k}, {buf.name}, {buf.nbytes});")
        body = "\n".join(["  " + d for d in fb.decls] + fb.ctx.lines)
        text = (
            f"/* {c_comment(symbol)} for backend {c_comment(self.target)} */\n"
            f"RK_EXPORT int32_t {c_name}(void **args) {{\n{body}\n  return 0;\n}}\n"
        )
        sig = CFunctionSignature(
            symbol,
            c_name,
            tuple(fb.inputs),
            tuple(out_specs),
            tuple(name for name, _, _ in fb.constants),
            workspace,
        )
        return text, sig, {name: arr for name, arr, _ in fb.constants}

    def _bind_params(self, fb: _FunctionBuild, func: Function) -> None:
        """Step 1: each parameter is the input pointer ``in<i>``."""
        for i, p in enumerate(func.params):
            ty = p.checked_type
            if not isinstance(ty, TensorType):
                raise fb.ctx.error(
                    f"parameter %{p.name_hint} has type {ty}; only tensors are supported"
                )
            self._check_dtype(fb.ctx, ty)
            fb.inputs.append(TensorSpec(ty.shape, ty.dtype))
            fb.values[p] = CBuffer(f"in{i}", ty.shape, ty.dtype)
            fb.decls.append(f"{C_TYPES[ty.dtype]} *in{i} = ({C_TYPES[ty.dtype]} *)args[{i}];")

    def _add_constant(self, fb: _FunctionBuild, node: Constant) -> None:
        ty = node.checked_type
        if not isinstance(ty, TensorType) or ty.dtype not in C_TYPES:
            raise fb.ctx.error(f"values of type {ty} are not supported in generated C")
        buf = CBuffer(f"c{len(fb.constants)}", ty.shape, ty.dtype)
        fb.constants.append((f"{fb.c_name}_const_{len(fb.constants)}", node.data.numpy(), buf))
        fb.values[node] = buf

    def _add_call(self, fb: _FunctionBuild, node: Call) -> None:
        if isinstance(node.op, Function):  # constants embedded in a composite body
            for inner in post_order(node.op.body):
                if type(inner) is Constant and inner not in fb.values:
                    self._add_constant(fb, inner)
        if isinstance(node.op, GlobalVar):
            raise fb.ctx.error(
                f"calls of global functions (@{node.op.name_hint}) are not supported"
            )
        bufs = [CBuffer("", tt.shape, tt.dtype) for tt in flatten_types(node.checked_type)]
        for b in bufs:
            self._check_dtype(fb.ctx, TensorType(b.shape, b.dtype))
        fb.values[node] = bufs[0] if isinstance(node.checked_type, TensorType) else tuple(bufs)
        fb.calls.append(node)

    def _assign_buffers(self, fb: _FunctionBuild, func: Function) -> None:
        """Step 2: walk the body in post-order; constants and call results get buffers
        (call results are named later), tuples are tuples of buffers."""
        values = fb.values
        for node in post_order(func.body, skip=lambda n: isinstance(n, (Function, Op))):
            if isinstance(node, Var):
                if node not in values:
                    raise fb.ctx.error(f"free variable %{node.name_hint} in the function body")
            elif isinstance(node, Constant):
                self._add_constant(fb, node)
            elif isinstance(node, Call):
                self._add_call(fb, node)
            elif isinstance(node, Tuple):
                values[node] = tuple(values[f] for f in node.fields)
            elif isinstance(node, TupleGetItem):
                values[node] = values[node.tuple_value][node.index]
            else:
                raise fb.ctx.error(f"{type(node).__name__} nodes are not supported in generated C")

    def _declare_outputs(
        self, fb: _FunctionBuild, outputs: list[CBuffer], n_in: int
    ) -> tuple[list[TensorSpec], list[tuple[int, CBuffer]]]:
        """Step 3: outputs of calls are written in place (``out<k>``); the rest (inputs,
        constants, repeats) are copied at the end."""
        out_specs = [TensorSpec(b.shape, b.dtype) for b in outputs]
        copies: list[tuple[int, CBuffer]] = []
        for k, buf in enumerate(outputs):
            if buf.name == "":
                buf.name = f"out{k}"
            else:
                copies.append((k, buf))
        for k, spec in enumerate(out_specs):
            ct = C_TYPES[spec.dtype]
            fb.decls.append(f"{ct} *out{k} = ({ct} *)args[{n_in + k}];")
        return out_specs, copies

    def _declare_workspace(self, fb: _FunctionBuild, base: int) -> int:
        """Step 4: constant pointers, then intermediates as consecutive, aligned slices of
        the workspace; returns the workspace size."""
        decls = fb.decls
        for j, (_, _, buf) in enumerate(fb.constants):
            decls.append(f"const {buf.ctype} *{buf.name} = (const {buf.ctype} *)args[{base + j}];")
        decls.append(f"char *ws = (char *)args[{base + len(fb.constants)}];")
        offset = 0
        for call in fb.calls:
            for b in _flatten_value(fb.values[call]):
                if b.name == "":
                    b.name = f"t{len(decls)}"
                    decls.append(f"{b.ctype} *{b.name} = ({b.ctype} *)(ws + {offset});")
                    offset += -(-b.nbytes // _ALIGN) * _ALIGN
        return offset

    def _emit_calls(self, fb: _FunctionBuild) -> None:
        """Step 5: one emitter call per operator or composite, in order."""
        ctx, values = fb.ctx, fb.values
        for call in fb.calls:
            name = _describe(call)
            emit = self.emitters.get(name)
            if emit is None:
                known = ", ".join(sorted(self.emitters)) or "none"
                raise CodegenError(
                    f"backend {self.target!r} cannot generate C for {name!r} in function "
                    f"{fb.symbol} (it has emitters for: {known}); its rules should not have "
                    "accepted this call"
                )
            ctx.current = name
            ctx.line(f"/* {c_comment(name)} */")
            args = [values[a] for a in call.args]
            ctx.values = values
            if isinstance(call.op, Function):
                ctx.values = ChainMap(dict(zip(call.op.params, args, strict=True)), values)
            emit(ctx, call, args, _flatten_value(values[call]))
        ctx.current = ""

    def _check_dtype(self, ctx: EmitContext, ty: Type) -> None:
        if not isinstance(ty, TensorType) or ty.dtype not in C_TYPES:
            raise ctx.error(f"values of type {ty} are not supported in generated C")

    # -- a module -----------------------------------------------------------------------------
    def source(self, parts: Sequence[str]) -> str:
        """The translation unit: header, preamble, generated functions."""
        head = f"/* generated by relaykit for backend {c_comment(self.target)} */\n"
        return head + _HEADER + self.preamble + "\n" + "\n".join(parts)

    def build(self, funcs: Sequence[Function]) -> CSourceModule:
        """Generate and compile all ``funcs`` into one :class:`CSourceModule`."""
        parts: list[str] = []
        sigs: list[CFunctionSignature] = []
        consts: dict[str, np.ndarray] = {}
        c_names: dict[str, str] = {}
        for f in funcs:
            symbol = region_symbol(f)
            text, sig, c = self.generate_function(f, symbol)
            if sig.c_name in c_names:
                raise CodegenError(
                    f"backend {self.target!r}: functions {c_names[sig.c_name]!r} and {symbol!r} "
                    "map to the same C name; give them distinct global_symbol attributes"
                )
            c_names[sig.c_name] = symbol
            parts.append(text)
            sigs.append(sig)
            consts.update(c)
        source = self.source(parts)
        library = compile_shared_library(
            source, self.target, [s.symbol for s in sigs], self.cflags, self.libs
        )
        return GeneratedCModule(self.target, source, library, sigs, consts, funcs)

    def __call__(self, funcs: Function | Sequence[Function]) -> CSourceModule:
        """The codegen entry point: one function, or a list with ``per_module=True``."""
        return self.build([funcs] if isinstance(funcs, Function) else list(funcs))


def _flatten_value(value: Any) -> list[CBuffer]:
    out: list[CBuffer] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out
