"""The C emitter table of the ahead-of-time generator: one emitter per operator name.

An emitter gets a :class:`KernelContext` (the plan node, its input and output buffers
with static shapes) and writes the C statements of one kernel function body. Buffers
are pointers named ``a0, a1...`` (inputs) and ``o0, o1...`` (outputs); sizes are
literals, so loops have constant bounds and the C compiler vectorises contiguous ones.

>>> from relaykit.execution.graph_plan import PlanNode
>>> ctx = KernelContext(PlanNode("op", "nn.relu"), [CBuf("a0", (4,), "float32")],
...                     [CBuf("o0", (4,), "float32")])
>>> c_emitters["nn.relu"](ctx)
>>> "o0[i0] = " in "\\n".join(ctx.lines)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from relaykit.errors import CodegenError
from relaykit.execution.codegen.c_source import C_TYPES
from relaykit.execution.graph_plan import PlanNode
from relaykit.ir.attrs import Attrs
from relaykit.registry import Registry

__all__ = [
    "C_TYPES",
    "CBuf",
    "KernelContext",
    "CEmitter",
    "c_emitters",
    "register_c_emitter",
    "contiguous_strides",
    "broadcast_strides",
    "nd_loop",
    "c_float",
]


@dataclass(frozen=True)
class CBuf:
    """A tensor in the generated C: a pointer ``name`` to a dense row-major ``shape``."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def ctype(self) -> str:
        return C_TYPES[self.dtype]

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass
class KernelContext:
    """What an emitter writes into: the body of one kernel function."""

    node: PlanNode
    ins: list[CBuf]
    outs: list[CBuf]
    lines: list[str] = field(default_factory=list)
    #: Constant tables the kernel needs (C declarations placed before the function).
    tables: list[str] = field(default_factory=list)
    table_bytes: int = 0
    #: Prefix of the kernel's table names (unique per kernel in one program).
    prefix: str = "k"
    #: Shared C helpers the kernel calls (:mod:`relaykit.execution.aot.helpers`).
    helpers: set[str] = field(default_factory=set)
    #: Scratch bytes the kernel needs while it runs (its parameter ``sc``).
    scratch_bytes: int = 0

    @property
    def attrs(self) -> Attrs:
        return self.node.attrs

    def line(self, text: str) -> None:
        self.lines.append("  " + text)

    def error(self, message: str) -> CodegenError:
        return CodegenError(f"ahead-of-time C for {self.node.desc or self.node.name}: {message}")

    def table(self, ctype: str, values: Sequence[int], hint: str) -> str:
        """Declare a constant integer table; returns its C name."""
        name = f"{self.prefix}_{hint}{len(self.tables)}"
        body = ", ".join(str(int(v)) for v in values) or "0"
        self.tables.append(f"static const {ctype} {name}[{max(len(values), 1)}] = {{{body}}};")
        self.table_bytes += max(len(values), 1) * (4 if ctype == "int32_t" else 8)
        return name

    def float_table(self, values: Sequence[float], hint: str) -> str:
        """Declare a constant ``double`` table; returns its C name."""
        name = f"{self.prefix}_{hint}{len(self.tables)}"
        body = ", ".join(c_float(float(v), "float64") for v in values) or "0"
        self.tables.append(f"static const double {name}[{max(len(values), 1)}] = {{{body}}};")
        self.table_bytes += max(len(values), 1) * 8
        return name

    def math_fn(self, name: str, dtype: str) -> str:
        """The C math function ``name`` for ``dtype`` (``expf`` for float32)."""
        return name + "f" if dtype == "float32" else name


CEmitter = Callable[[KernelContext], None]

#: Operator name -> C emitter (see the module docstring).
c_emitters: Registry[str, CEmitter] = Registry("ahead-of-time C emitters")


def register_c_emitter(*names: str) -> Callable[[CEmitter], CEmitter]:
    """Register a function as the C emitter of operators ``names``."""

    def decorate(fn: CEmitter) -> CEmitter:
        for n in names:
            c_emitters.register(n, fn)
        return fn

    return decorate


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides. ``contiguous_strides((2, 3, 4)) == [12, 4, 1]``."""
    out = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Element strides of ``shape`` read at each axis of ``out_shape`` (0 when broadcast)."""
    full = [1] * (len(out_shape) - len(shape)) + list(shape)
    strides = contiguous_strides(full)
    return [0 if full[d] == 1 else strides[d] for d in range(len(full))]


def _collapse(shape: Sequence[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Merge adjacent axes along which every operand steps uniformly."""
    if not shape:
        return [1], [[0] for _ in strides]
    dims = [shape[-1]]
    st = [[s[-1]] for s in strides]
    for d in range(len(shape) - 2, -1, -1):
        if all(s[d] == t[0] * dims[0] for s, t in zip(strides, st, strict=True)):
            dims[0] *= shape[d]
        else:
            dims.insert(0, shape[d])
            for s, t in zip(strides, st, strict=True):
                t.insert(0, s[d])
    return dims, st


def nd_loop(
    ctx: KernelContext,
    shape: Sequence[int],
    strides: list[list[int]],
    body: Callable[[list[str]], str],
) -> None:
    """Emit nested loops over ``shape``; ``body`` gets one index expression per operand
    (from its element ``strides``) and returns the innermost statement."""
    dims, st = _collapse(shape, strides)
    depth = len(dims)
    for d, n in enumerate(dims):
        ctx.line("  " * d + f"for (int64_t i{d} = 0; i{d} < {n}; ++i{d}) {{")
    exprs = []
    for s in st:
        terms = [f"i{d}" if s[d] == 1 else f"i{d} * {s[d]}" for d in range(depth) if s[d] != 0]
        exprs.append(" + ".join(terms) or "0")
    ctx.line("  " * depth + body(exprs))
    for d in range(depth - 1, -1, -1):
        ctx.line("  " * d + "}")


def c_float(value: float, dtype: str = "float32") -> str:
    """A C literal for ``value`` (``INFINITY``/``NAN`` for special values)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    text = repr(float(value))
    if "e" not in text and "." not in text and "inf" not in text:
        text += ".0"
    return text + ("f" if dtype == "float32" else "")
