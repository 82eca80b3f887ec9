"""The Relay text printer: expressions and modules in TVM's text format.

Non-atomic nodes are bound to temporaries ``%0, %1, ...`` in the scope that
encloses all their uses; the result of a scope is printed last, unbound.
Variables, globals, operators and constants print inline. Printing is
iterative and linear in the size of the graph: a chain of 100,000 operators
prints in well under a second per 100k nodes.

>>> from relaykit.ir import Var, TensorType, Function
>>> x = Var("x", TensorType((10, 1)))
>>> print(astext(x + x, show_meta_data=False))
free_var %x: Tensor[(10, 1), float32];
add(%x, %x)
>>> print(astext(Function([x], x + x), show_meta_data=False))
fn (%x: Tensor[(10, 1), float32]) {
  add(%x, %x)
}
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    TypeData,
)
from relaykit.ir.analysis import free_vars
from relaykit.ir.attrs import normalize_attr_value
from relaykit.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Span,
    Tuple,
    TupleGetItem,
    Var,
    checked_type_or_none,
)
from relaykit.ir.fields import CHILDREN_OF as children_of
from relaykit.ir.functor import post_order
from relaykit.ir.hooks import install_printer
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.ir.ref import RefCreate, RefRead, RefWrite
from relaykit.ir.types import Type
from relaykit.target import VirtualDevice

from .literals import attr_text, scalar_text
from .metadata import dump_metadata
from .tokenizer import TextSpan

__all__ = ["astext", "context_lines", "VERSION"]

#: The text format version this printer writes.
VERSION = "0.0.5"

Annotate = Callable[[Expr], Any]

_MARK = "\x00"  # sentinel placed after the node context_lines() points at
_ATOMIC = (Var, GlobalVar, Op, Constant, Constructor)
_KINDS = (
    Call,
    Tuple,
    TupleGetItem,
    Function,
    Let,
    If,
    Var,
    GlobalVar,
    Op,
    Constant,
    RefCreate,
    RefRead,
    RefWrite,
    Match,
    Constructor,
)
_REF_KEYWORDS = {RefCreate: "ref", RefRead: "ref_read", RefWrite: "ref_write"}
_PLAIN, _RESULT, _LETVALUE = 0, 1, 2
# A '/' inside a name (as TensorFlow-style scopes use: %base/x) is kept, as TVM does.
_VALID_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_.]|/(?=[A-Za-z_]))*\Z")
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_./]|/(?![A-Za-z_])")
_BAD_GLOBAL_CHARS = re.compile(r"[^A-Za-z0-9_.]")
_META_OMITTED = "// meta data omitted. you can use show_meta_data=True to include meta data"


def _kind(node: Expr) -> type:
    """The node class that decides how ``node`` prints (handles subclasses)."""
    t = type(node)
    if t in _KIND_CACHE:
        return _KIND_CACHE[t]
    for k in _KINDS:
        if isinstance(node, k):
            _KIND_CACHE[t] = k
            return k
    raise ArgumentError(f"cannot print {t.__name__}: not a relay expression")


_KIND_CACHE: dict[type, type] = {k: k for k in _KINDS}


class _Scope:
    """A block of bindings ending with a result: a function body, a branch, a let block."""

    __slots__ = ("parent", "depth", "items", "result")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.items: list[_Text] = []
        self.result: _Text | None = None


class _Block:
    """Printed text spanning lines: ``head`` then nested scopes / separator lines, then ``tail``."""

    __slots__ = ("head", "parts", "tail")

    def __init__(self, head: str, parts: list[_Scope | str], tail: str) -> None:
        self.head = head
        self.parts = parts
        self.tail = tail

    def wrap(self, prefix: str, suffix: str) -> _Block:
        return _Block(prefix + self.head, self.parts, self.tail + suffix)


_Text = str | _Block


def _lca(a: _Scope, b: _Scope) -> _Scope:
    while a is not b:
        if a.depth >= b.depth:
            a = a.parent  # type: ignore[assignment]
        else:
            b = b.parent  # type: ignore[assignment]
    return a


def _wrap(text: _Text, prefix: str, suffix: str) -> _Text:
    return prefix + text + suffix if isinstance(text, str) else text.wrap(prefix, suffix)


def _flatten(top: _Scope, indent: int, out: list[str]) -> None:
    """Append the lines of ``top`` to ``out``, iteratively (nesting may be deep)."""
    pad_cache: dict[int, str] = {}

    def pad(n: int) -> str:
        p = pad_cache.get(n)
        if p is None:
            p = pad_cache[n] = "  " * n
        return p

    def scope_items(scope: _Scope) -> Iterator[_Text]:
        yield from scope.items
        if scope.result is not None:
            yield scope.result

    stack: list[tuple[Iterator[Any], int]] = [(scope_items(top), indent)]
    while stack:
        it, depth = stack[-1]
        item = next(it, None)
        if item is None:
            stack.pop()
            continue
        if isinstance(item, str):
            out.append(pad(depth) + item)
        elif isinstance(item, _Scope):
            stack.append((scope_items(item), depth + 1))
        elif isinstance(item, _Block):
            out.append(pad(depth) + item.head)
            stack.append((iter([*item.parts, _Tail(item.tail)]), depth))
        else:  # _Tail
            out.append(pad(depth) + item.text)


class _Tail:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Context:
    """State shared by all definitions of one print: metadata, global names, options."""

    def __init__(self, annotate: Annotate | None, mark: Expr | None) -> None:
        self.annotate = annotate
        self.mark = mark
        self.meta: list[Any] = []  # Constant nodes, in order of first use
        self.meta_index: dict[Constant, int] = {}
        self.vds: list[VirtualDevice] = []  # virtual devices, in order of first use
        self.vd_index: dict[VirtualDevice, int] = {}
        self.global_names: dict[str, str] = {}
        self.used_globals: set[str] = set()
        self.op_notes: dict[Op, str] = {}

    def global_name(self, name: str) -> str:
        out = self.global_names.get(name)
        if out is None:
            base = _BAD_GLOBAL_CHARS.sub("_", name) or "g"
            out, i = base, 0
            while out in self.used_globals:
                i += 1
                out = f"{base}_{i}"
            self.global_names[name] = out
            self.used_globals.add(out)
        return out

    def meta_ref(self, const: Constant) -> str:
        i = self.meta_index.get(const)
        if i is None:
            i = self.meta_index[const] = len(self.meta)
            self.meta.append(const)
        return f"meta[relay.Constant][{i}]"

    def attr(self, value: Any) -> str:
        """An attribute value as text; virtual devices go to the metadata."""
        if isinstance(value, VirtualDevice):
            i = self.vd_index.get(value)
            if i is None:
                i = self.vd_index[value] = len(self.vds)
                self.vds.append(value)
            return f"meta[VirtualDevice][{i}]"
        if isinstance(value, (tuple, list)) and any(isinstance(v, VirtualDevice) for v in value):
            return "[" + ", ".join(self.attr(v) for v in value) + "]"
        return attr_text(value)


class _DefPrinter:
    """Prints one root expression (a global definition or a free-standing expression)."""

    def __init__(self, ctx: _Context, root: Expr) -> None:
        self.ctx = ctx
        self.root = root
        # A constant's type comes from its data, not from a type check: a lone constant
        # prints without a type note, as in TVM.
        self.typed = root.has_checked_type and not isinstance(root, Constant)
        self.counter = 0
        self.names: dict[Var, str] = {}
        self.used: set[str] = set()
        self.memo: dict[Expr, _Text] = {}
        self.top = _Scope(None)
        self.scope: dict[Expr, _Scope] = {}
        self.uses: dict[Expr, int] = {}
        self.edge: dict[Expr, int] = {}
        self.inner: dict[Expr, Any] = {}
        self.const_uses: dict[Constant, int] = {}
        self.def_name: str | None = None

    # -- names ---------------------------------------------------------------------
    def alloc(self, var: Var) -> str:
        name = self.names.get(var)
        if name is not None:
            return name
        hint = var.name_hint
        if not hint or not (hint[0].isascii() and (hint[0].isalpha() or hint[0] == "_")):
            hint = "v" + hint
        if not _VALID_NAME.match(hint):
            hint = _BAD_CHARS.sub("_", hint)
        name, i = hint, 0
        while name in self.used:
            i += 1
            name = f"{hint}_{i}"
        self.used.add(name)
        self.names[var] = name
        return name

    def var_decl(self, var: Var) -> str:
        text = "%" + self.alloc(var)
        if var.virtual_device_:
            text += f" {{virtual_device={self.ctx.attr(var.virtual_device_)}}}"
        if var is self.ctx.mark:
            text += _MARK
        if var.type_annotation is not None:
            text += f": {var.type_annotation}"
        return text

    # -- planning: where each node is bound ---------------------------------------
    def plan(self) -> None:
        root = self.root
        scope, uses, edge, inner = self.scope, self.uses, self.edge, self.inner
        order: list[Any] = [n for n in post_order(root) if not isinstance(n, (*_ATOMIC, Clause))]
        if not isinstance(root, _ATOMIC):
            scope[root], uses[root], edge[root] = self.top, 1, _RESULT
        for node in reversed(order):
            s = scope[node]
            k = _kind(node)
            if k is Function:
                body = inner[node] = _Scope(s)
                edges = [(node.body, body, _RESULT)]
            elif k is If:
                then, other = _Scope(s), _Scope(s)
                inner[node] = (then, other)
                edges = [
                    (node.cond, s, _PLAIN),
                    (node.true_branch, then, _RESULT),
                    (node.false_branch, other, _RESULT),
                ]
            elif k is Match:
                arms = [_Scope(s) for _ in node.clauses]
                inner[node] = arms
                edges = [(node.data, s, _PLAIN)]
                edges.extend((c.rhs, a, _RESULT) for c, a in zip(node.clauses, arms, strict=True))
            elif k is Let:  # continue the enclosing scope, or open a parenthesised block
                block = s if self.is_result(node) else _Scope(s)
                inner[node] = block
                edges = [(node.value, block, _LETVALUE), (node.body, block, _RESULT)]
            else:  # no scope of its own: every child is used in place
                edges = [(c, s, _PLAIN) for c in children_of[type(node)](node)]
            for child, es, kind in edges:
                if isinstance(child, _ATOMIC):
                    if isinstance(child, Constant):
                        self.const_uses[child] = self.const_uses.get(child, 0) + 1
                    continue
                old = scope.get(child)
                if old is None:
                    scope[child], uses[child], edge[child] = es, 1, kind
                else:
                    scope[child] = old if old is es else _lca(old, es)
                    uses[child] += 1

    def is_result(self, node: Expr) -> bool:
        return self.uses[node] == 1 and self.edge[node] == _RESULT

    # -- text of nodes ---------------------------------------------------------------
    def info(self, node: Expr) -> str:
        ann = self.ctx.annotate
        mark = _MARK if node is self.ctx.mark else ""
        if ann is not None:
            note = ann(node)
            return mark + (str(note) if note else "")
        ty = checked_type_or_none(node)
        notes = []
        if ty is not None and isinstance(node, (Call, Tuple, TupleGetItem)):
            notes.append(f"ty={ty}")
        span = node.span
        if span is not None and not isinstance(span, TextSpan):
            notes.append(f"span={span_text(span)}")
        return f"{mark} /* {' '.join(notes)} */" if notes else mark

    def atom(self, node: Any) -> str:
        k = _kind(node)
        mark = _MARK if node is self.ctx.mark else ""
        if k is Var:
            return "%" + self.alloc(node) + mark
        if k is GlobalVar:
            return "@" + self.ctx.global_name(node.name_hint) + mark
        if k is Constructor:
            return node.name_hint + mark
        if k is Op:
            note: str | None = ""
            if self.ctx.annotate is not None:
                note = self.ctx.op_notes.get(node)
                if note is None:
                    note = self.ctx.op_notes[node] = str(self.ctx.annotate(node) or "")
            return f"{node.name}{mark}{note}"
        # A shared scalar goes to the metadata too, so that parsing keeps it shared.
        shared = self.const_uses.get(node, 0) > 1
        text = None if shared else scalar_text(node.data.numpy())
        if text is None:
            text = self.ctx.meta_ref(node)
        if self.typed and self.ctx.annotate is None and checked_type_or_none(node) is not None:
            text += f" /* ty={checked_type_or_none(node)} */"
        return text + mark

    def text_of(self, node: Expr) -> _Text:
        if isinstance(node, _ATOMIC):
            return self.atom(node)
        return self.memo[node]

    def arg(self, node: Expr) -> str:
        text = self.text_of(node)
        assert isinstance(text, str), "blocks are always bound or scope results"
        return text

    def call_attrs(self, call: Call) -> list[str]:
        attrs = call.attrs
        if not attrs:
            return []
        op = call.op
        schema = op.attrs_schema if isinstance(op, Op) else {}
        # As TVM: print a field when it differs from its default, and always when
        # the field has no default at all.
        required = (op.get_attr("attrs_without_default") or ()) if isinstance(op, Op) else ()
        out = []
        for key, default in schema.items():
            if key in attrs and (
                key in required or not _same(attrs[key], normalize_attr_value(default))
            ):
                out.append(f"{key}={self.ctx.attr(attrs[key])}")
        out.extend(f"{k}={self.ctx.attr(v)}" for k, v in attrs.items() if k not in schema)
        type_key = getattr(attrs, "type_key", "DictAttrs")
        if not isinstance(op, Op) and type_key != "DictAttrs":
            out.append(f"attrs_type_key={attr_text(type_key)}")  # as TVM prints it
        return out

    def function_head(self, fn: Function) -> str:
        params = [self.var_decl(p) for p in fn.params]
        if fn.virtual_device_:
            params.append(f"virtual_device={self.ctx.attr(fn.virtual_device_)}")
        params.extend(f"{k}={self.ctx.attr(v)}" for k, v in fn.attrs.items())
        ret = f" -> {fn.ret_type}" if fn.ret_type is not None else ""
        tps = f"[{', '.join(map(str, fn.type_params))}]" if fn.type_params else ""
        if fn is self.root and self.def_name is not None:
            return f"def @{self.def_name}{tps}({', '.join(params)}){ret} {{"
        return f"fn {tps}({', '.join(params)}){ret} {{"

    def build(self, node: Any) -> _Text:
        """The text of a node whose children are all printed."""
        k = _kind(node)
        if k is Call:
            callee = self.arg(node.op)
            parts = [self.arg(a) for a in node.args]
            parts.extend(self.call_attrs(node))
            return f"{callee}({', '.join(parts)}){self.info(node)}"
        if k is Tuple:
            fields = [self.arg(f) for f in node.fields]
            inside = fields[0] + "," if len(fields) == 1 else ", ".join(fields)
            return f"({inside}){self.info(node)}"
        if k in _REF_KEYWORDS:
            parts = [self.arg(c) for c in children_of[k](node)]
            return f"{_REF_KEYWORDS[k]}({', '.join(parts)}){self.info(node)}"
        if k is TupleGetItem:
            tv = node.tuple_value
            base = self.arg(tv)
            if isinstance(tv, _ATOMIC):
                base = f"({base})"
            return f"{base}.{node.index}{self.info(node)}"
        if k is Function:
            body = self.inner[node]
            body.result = self.text_of(node.body)
            head = self.function_head(node)
            note = self.info(node)
            mark = _MARK if _MARK in note else ""
            return _Block(head + mark, [body], "}" + note.replace(_MARK, ""))
        if k is Match:
            return self.match_block(node)
        if k is If:
            then, other = self.inner[node]
            then.result = self.text_of(node.true_branch)
            other.result = self.text_of(node.false_branch)
            note = self.info(node)
            mark = _MARK if _MARK in note else ""
            head = f"if ({self.arg(node.cond)}) {{{mark}"
            return _Block(head, [then, "} else {", other], "}" + note.replace(_MARK, ""))
        # Let
        if self.is_result(node):
            return self.text_of(node.body)
        block = self.inner[node]
        block.result = self.text_of(node.body)
        return _Block("(", [block], ")" + self.info(node))

    def match_block(self, node: Match) -> _Block:
        """``match (data) { pattern => { rhs }, ... }``, one arm per clause."""
        arms: list[_Scope | str] = []
        for clause, arm in zip(node.clauses, self.inner[node], strict=True):
            arm.result = self.text_of(clause.rhs)
            holder = _Scope(None)
            holder.items.append(_Block(f"{self.pattern_text(clause.lhs)} => {{", [arm], "},"))
            arms.append(holder)
        note = self.info(node)
        mark = _MARK if _MARK in note else ""
        keyword = "match" if node.complete else "match?"
        head = f"{keyword} ({self.arg(node.data)}) {{{mark}"
        return _Block(head, arms, "}" + note.replace(_MARK, ""))

    def pattern_text(self, pattern: Pattern) -> str:
        if isinstance(pattern, PatternVar):
            return self.var_decl(pattern.var)
        if isinstance(pattern, PatternConstructor):
            name = pattern.constructor.name_hint
            if not pattern.patterns:
                return name
            return f"{name}({', '.join(self.pattern_text(p) for p in pattern.patterns)})"
        if isinstance(pattern, PatternTuple):
            parts = [self.pattern_text(p) for p in pattern.patterns]
            return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
        return "_"

    def let_line(self, let: Let) -> None:
        value = self.text_of(let.value)
        note = self.info(let)
        line = _wrap(value, f"let {self.var_decl(let.var)} = ", ";" + note)
        self.inner[let].items.append(line)

    def finish(self, node: Expr) -> None:
        text = self.build(node)
        if self.uses[node] == 1 and self.edge[node] != _PLAIN:
            self.memo[node] = text  # printed in place: scope result or let value
            return
        name = f"%{self.counter}"
        self.counter += 1
        self.scope[node].items.append(_wrap(text, f"{name} = ", ";"))
        self.memo[node] = name

    # -- driver ------------------------------------------------------------------------
    def run(self) -> _Scope:
        self.plan()
        memo = self.memo
        started: set[Expr] = set()
        stack: list[tuple[Any, int]] = [(self.root, 0)]
        while stack:
            node, state = stack.pop()
            if state == 1:
                self.let_line(node)
                continue
            if state == 2:
                self.finish(node)
                continue
            if node in memo or node in started or isinstance(node, _ATOMIC):
                continue
            started.add(node)
            k = _kind(node)
            stack.append((node, 2))
            if k is Let:
                stack.append((node.body, 0))
                stack.append((node, 1))
                stack.append((node.value, 0))
                continue
            if k is Function:
                for p in node.params:
                    self.alloc(p)
                kids: tuple[Expr, ...] = (node.body,)
            elif k is Call:  # as TVM: the arguments are printed before the callee
                kids = (*node.args, node.op)
            elif k is Match:
                kids = (node.data, *(c.rhs for c in node.clauses))
            else:
                kids = children_of[type(node)](node)
            for child in reversed(kids):
                if not isinstance(child, _ATOMIC) and child not in memo:
                    stack.append((child, 0))
        self.top.result = self.text_of(self.root)
        return self.top


def type_data_lines(gtv: GlobalTypeVar, data: TypeData) -> list[str]:
    """``type Name[A, ...] { Cons(A, ...), ... }`` (``extern type Name`` without constructors
    is not distinguished: an empty definition prints as ``type Name {}``)."""
    params = f"[{', '.join(map(str, data.type_vars))}]" if data.type_vars else ""
    lines = [f"type {gtv.name_hint}{params} {{"]
    for con in data.constructors:
        fields = f"({', '.join(map(str, con.inputs))})" if con.inputs else ""
        lines.append(f"  {con.name_hint}{fields},")
    lines.append("}")
    return lines


def span_text(span: Span) -> str:
    """``name:line:column`` of a span, safe inside a ``/* */`` comment."""
    name = getattr(span.source_name, "name", span.source_name)
    return f"{name}:{span.line}:{span.column}".replace("*/", "* /")


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same kind (so ``0`` is not the default ``False``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _print_lines(node: Any, ctx: _Context, out: list[str]) -> None:
    if isinstance(node, IRModule):
        first = True
        for gtv, data in sorted(node.type_definitions.items(), key=lambda item: item[0].name_hint):
            if not first:
                out.append("")
            first = False
            out.extend(type_data_lines(gtv, data))
        for gv, fn in sorted(node.items(), key=lambda item: item[0].name_hint):
            if not first:
                out.append("")
            first = False
            printer = _DefPrinter(ctx, fn)
            printer.def_name = ctx.global_name(gv.name_hint)
            _flatten(printer.run(), 0, out)
        return
    if isinstance(node, Type):
        out.append(str(node))
        return
    if not isinstance(node, Expr):
        raise ArgumentError(
            f"astext prints relay expressions and modules, not {type(node).__name__}"
        )
    printer = _DefPrinter(ctx, node)
    for var in free_vars(node):
        out.append(f"free_var {printer.var_decl(var)};")
    _flatten(printer.run(), 0, out)


def astext(node: Any, show_meta_data: bool = True, annotate: Annotate | None = None) -> str:
    """``node`` (an expression or an :class:`IRModule`) in Relay's text format.

    With ``show_meta_data`` the text starts with the version header and ends
    with the ``#[metadata]`` section holding non-scalar constants, so that
    :func:`relaykit.text.parse` reads it back exactly. ``annotate(node)``
    returns a string printed after each non-atomic node and each operator,
    instead of the ``/* ty=... */`` comments.
    """
    ctx = _Context(annotate, None)
    out: list[str] = [f'#[version = "{VERSION}"]'] if show_meta_data else []
    _print_lines(node, ctx, out)
    if ctx.meta or ctx.vds:
        if show_meta_data:
            sections: dict[str, list[Any]] = {}
            if ctx.meta:
                sections["relay.Constant"] = [c.data.numpy() for c in ctx.meta]
            if ctx.vds:
                sections["VirtualDevice"] = list(ctx.vds)
            out.append("#[metadata]")
            out.append(dump_metadata(sections))
        else:
            out.append(_META_OMITTED)
    return "\n".join(out)


def context_lines(root: Any, node: Expr, radius: int = 3, marker: str = "/* <-- here */") -> str:
    """The printed IR around ``node``: ``root`` (an expression or module) printed,
    the line where ``node`` appears first marked with ``marker``, and cropped to
    ``radius`` lines on either side.

    >>> from relaykit.ir import Var, TensorType
    >>> x = Var("x", TensorType((2,)))
    >>> y = x + x
    >>> print(context_lines(y * y, y))
    free_var %x: Tensor[(2), float32];
    %0 = add(%x, %x);  /* <-- here */
    multiply(%0, %0)
    """
    ctx = _Context(None, node)
    out: list[str] = []
    _print_lines(root, ctx, out)
    hit = next((i for i, line in enumerate(out) if _MARK in line), None)
    lines = [line.replace(_MARK, "") for line in out]
    if hit is None:
        lo, hi = 0, min(len(lines), 2 * radius + 1)
        shown = lines[lo:hi]
        if hi < len(lines):
            shown.append("...")
        return "\n".join(shown) + "\n/* (the node is not part of this IR) */"
    lines[hit] += "  " + marker
    lo, hi = max(0, hit - radius), min(len(lines), hit + radius + 1)
    shown = lines[lo:hi]
    if lo > 0:
        shown.insert(0, "...")
    if hi < len(lines):
        shown.append("...")
    return "\n".join(shown)


class _TextPrinter:
    """The printer the IR's ``astext`` and type errors use (see :mod:`relaykit.ir.hooks`)."""

    @staticmethod
    def astext(node: Any, show_meta_data: bool = True, annotate: Any = None) -> str:
        return astext(node, show_meta_data=show_meta_data, annotate=annotate)

    @staticmethod
    def context_lines(root: Any, node: Any) -> str:
        return context_lines(root, node)


install_printer(_TextPrinter())
