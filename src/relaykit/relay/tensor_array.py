"""Tensor arrays: lists of tensors of one dtype, defined in Relay over the Prelude's ``List``.

Two families, as in TVM's prelude:

- :class:`TensorArrayOps` (one per dtype, added by every ``Prelude``): the ADT
  ``tensor_<dtype>_t`` with constructors ``tensor_nil_<dtype>`` and ``tensor0_<dtype>`` ...
  ``tensor6_<dtype>`` (one per rank, every dimension ``?``), and the functions
  ``tensor_array``, ``tensor_array_read/write``, ``tensor_array_unstack_tensor1..6``,
  ``tensor_array_scatter/split/concat/stack``, ``tensor_take``, ``tensor_expand_dims`` and
  ``tensor_concatenate``, each suffixed ``_<dtype>``.
- :class:`StaticTensorArrayOps` (one per dtype and shape, added by ``register()``): the ADT
  ``static_tensor_<dtype>_<dims>_t`` (``tensor_nil`` and ``tensor_constructor`` of that
  exact shape, ``?`` dims written ``any``, a scalar ``scalar``) and the same functions plus
  ``tensor_array_unstack``, ``tensor_array_gather`` and ``tensor_get_data``.

>>> import relaykit as tvm
>>> from relaykit.relay.prelude import Prelude
>>> p = Prelude(tvm.IRModule())
>>> ops = StaticTensorArrayOps(p, "float32", [2, 3])
>>> ops.register()
>>> ops.get_global_var("tensor_array_read").name_hint
'tensor_array_read_float32_2_3'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from relaykit.errors import IRError
from relaykit.ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TypeCall,
    TypeData,
)
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, If, Let, Var, const
from relaykit.ir.symbolic import Any as AnyDim
from relaykit.ir.types import TensorType, Type
from relaykit.op import add, arange, concatenate, equal, expand_dims, shape_of, subtract, take
from relaykit.transform.infer_type import InferType

#: A ``relaykit.relay.prelude.Prelude`` (its module ``mod`` and name lookups).
Prelude = Any

__all__ = [
    "TENSOR_ARRAY_DTYPES",
    "StaticTensorArrayOps",
    "TensorArrayOps",
    "get_tensor_array_shape",
    "static_name",
]

#: The dtypes every ``Prelude`` defines a dynamic tensor array for.
TENSOR_ARRAY_DTYPES = (
    "float32",
    "float16",
    "float64",
    "int32",
    "uint8",
    "int8",
    "int16",
    "uint16",
    "int64",
)

_MAX_RANK = 6
_I32 = TensorType((), "int32")


def _shape_str(shape: Sequence[Any]) -> str:
    return "_".join("any" if isinstance(d, AnyDim) else str(int(d)) for d in shape)


def static_name(
    canonical: str,
    dtype: str,
    shape: Sequence[Any],
    batch_dim: int | None = None,
    extra_shapes: dict[str, Sequence[Any]] | None = None,
) -> str:
    """The global name of static tensor-array item ``canonical`` for ``dtype`` and ``shape``.

    >>> static_name("tensor_t", "int32", [2, 3])
    'static_tensor_int32_2_3_t'
    >>> static_name("tensor_array", "float32", [])
    'tensor_array_float32_scalar'
    """
    text = _shape_str(shape)
    for key, extra in (extra_shapes or {}).items():
        text += f"_{key}_{_shape_str(extra)}"
    if not text:
        text = "scalar"
    if canonical == "tensor_t":
        return f"static_tensor_{dtype}_{text}_t"
    if batch_dim == 1 and canonical not in ("tensor_constructor", "tensor_nil"):
        return f"{canonical}_{dtype}_batch1_{text}"
    return f"{canonical}_{dtype}_{text}"


def _any_dims(rank: int) -> list[Any]:
    return [AnyDim() for _ in range(rank)]


def _match(scrutinee: Expr, clauses: Sequence[tuple[Constructor, Callable[[Var], Expr]]]) -> Match:
    """``match? (scrutinee) { ctor(%t) => body(%t), ... }`` for one-field constructors."""
    cases = []
    for ctor, body in clauses:
        t = Var("t")
        cases.append(Clause(PatternConstructor(ctor, [PatternVar(t)]), body(t)))
    return Match(scrutinee, cases, False)


class _Family:
    """What both families share: the module, the List ADT and the functions over lists."""

    def __init__(self, prelude: Prelude, dtype: str) -> None:
        self.prelude = prelude
        self.dtype = str(dtype)
        self.list, self.cons, self.nil = prelude.mod.get_type("List")

    def _gv(self, name: str) -> GlobalVar:
        """The module's global called ``name``, or a new one."""
        mod = self.prelude.mod
        for gv in mod.get_global_vars():
            if gv.name_hint == name:
                return gv
        return GlobalVar(name)

    def _has(self, name: str) -> bool:
        return any(gv.name_hint == name for gv in self.prelude.mod.get_global_vars())

    def _define(self, gv: GlobalVar, fn: Function) -> None:
        self.prelude.mod[gv] = fn
        setattr(self.prelude, gv.name_hint, gv)

    def _list_of(self, ty: Type) -> TypeCall:
        return TypeCall(self.list, [ty])

    def _prelude_fn(self, name: str) -> GlobalVar:
        return self.prelude.mod.get_global_var(name)

    # list functions shared by both families ----------------------------------------------
    def _define_array(self, name: str, nil_ctor: Constructor, elem: Type) -> None:
        gv = self._gv(name)
        n = Var("x", _I32)
        body = If(
            equal(n, const(0)),
            self.nil(),
            self.cons(nil_ctor(), Call(gv, [subtract(n, const(1))])),
        )
        self._define(gv, Function([n], body, self._list_of(elem), []))

    def _define_read(self, name: str, elem: Type) -> None:
        ta, n = Var("tensor_array", self._list_of(elem)), Var("x", _I32)
        body = Call(self._prelude_fn("nth"), [ta, n])
        self._define(self._gv(name), Function([ta, n], body, elem, []))

    def _define_write(self, name: str, elem: Type) -> None:
        ta, n, v = Var("tensor_array", self._list_of(elem)), Var("x", _I32), Var("v", elem)
        body = Call(self._prelude_fn("update"), [ta, n, v])
        self._define(self._gv(name), Function([ta, n, v], body, self._list_of(elem), []))

    def _define_unstack(
        self, name: str, helper_name: str, tensor_ty: TensorType, item: Constructor, elem: Type
    ) -> None:
        """``name(t)``: the list of ``item(t[i])`` for each ``i`` along axis 0."""
        helper = self._gv(helper_name)
        i, up, t = Var("i", _I32), Var("up", _I32), Var("t", tensor_ty)
        body = If(
            equal(i, up),
            self.nil(),
            self.cons(item(take(t, i, axis=0)), Call(helper, [add(i, const(1)), up, t])),
        )
        self._define(helper, Function([i, up, t], body, self._list_of(elem), []))
        tensor = Var("tensor", tensor_ty)
        length = take(shape_of(tensor), const(0))
        call = Call(helper, [const(0), length, tensor])
        self._define(self._gv(name), Function([tensor], call, self._list_of(elem), []))

    def _define_scatter(
        self,
        name: str,
        helper_name: str,
        elem: Type,
        write: GlobalVar,
        read: GlobalVar,
        indices_shape: Sequence[Any] | None = None,
    ) -> None:
        """``name(ta, indices, values)``: ``ta`` with ``ta[indices[k]] = values[k]``."""
        helper = self._gv(helper_name)
        idx_ty = TensorType(list(indices_shape) if indices_shape else [AnyDim()], "int32")
        ta, cur, lim = Var("ta", self._list_of(elem)), Var("current", _I32), Var("limit", _I32)
        idx, vals = Var("indices_", idx_ty), Var("values_", self._list_of(elem))
        step = Call(write, [ta, take(idx, cur), Call(read, [vals, cur])])
        body = If(equal(cur, lim), ta, Call(helper, [step, add(cur, const(1)), lim, idx, vals]))
        self._define(helper, Function([ta, cur, lim, idx, vals], body, self._list_of(elem), []))
        ta2, idx2 = Var("tensor_array", self._list_of(elem)), Var("indices", idx_ty)
        vals2 = Var("values", self._list_of(elem))
        limit: Expr = (
            const(int(indices_shape[0])) if indices_shape else take(shape_of(idx2), const(0))
        )
        call = Call(helper, [ta2, const(0), limit, idx2, vals2])
        self._define(self._gv(name), Function([ta2, idx2, vals2], call, self._list_of(elem), []))

    def _define_split(
        self,
        name: str,
        helper_name: str,
        out_elem: Type,
        value_ty: Type,
        write: GlobalVar,
        tensor_take: GlobalVar,
        lengths_shape: Sequence[Any] | None = None,
    ) -> None:
        """``name(ta, value, lengths)``: ``ta[k]`` = the ``k``-th run of ``lengths[k]`` rows."""
        helper = self._gv(helper_name)
        len_ty = TensorType(list(lengths_shape) if lengths_shape else [AnyDim()], "int32")
        ta, value = Var("tensor_array", self._list_of(out_elem)), Var("value1", value_ty)
        off, cur, lim = Var("offset1", _I32), Var("current1", _I32), Var("limit1", _I32)
        lengths = Var("lengths", len_ty)
        this_len = take(lengths, cur)
        rest = Call(helper, [ta, value, add(off, this_len), add(cur, const(1)), lim, lengths])
        piece = Call(tensor_take, [value, off, add(this_len, off)])
        body = If(equal(cur, lim), ta, Call(write, [rest, cur, piece]))
        params = [ta, value, off, cur, lim, lengths]
        self._define(helper, Function(params, body, self._list_of(out_elem), []))
        ta2, value2 = Var("tensor_array", self._list_of(out_elem)), Var("value", value_ty)
        lengths2 = Var("lengths", len_ty)
        limit: Expr = (
            const(int(lengths_shape[0])) if lengths_shape else take(shape_of(lengths2), const(0))
        )
        call = Call(helper, [ta2, value2, const(0), const(0), limit, lengths2])
        fn = Function([ta2, value2, lengths2], call, self._list_of(out_elem), [])
        self._define(self._gv(name), fn)

    def _define_concat(
        self, name: str, elem: Type, nil_ctor: Constructor, tensor_concat: GlobalVar
    ) -> None:
        """``name(ta)``: the items of ``ta`` concatenated on axis 0 (``tensor_nil`` if empty)."""
        gv = self._gv(name)
        ta, hd, tl = Var("tensor_array", self._list_of(elem)), Var("hd"), Var("tl")
        inner = Match(
            tl,
            [
                Clause(PatternConstructor(self.nil, []), hd),
                Clause(PatternWildcard(), Call(tensor_concat, [hd, Call(gv, [tl])])),
            ],
            False,
        )
        body = Match(
            ta,
            [
                Clause(PatternConstructor(self.nil, []), nil_ctor()),
                Clause(PatternConstructor(self.cons, [PatternVar(hd), PatternVar(tl)]), inner),
            ],
            False,
        )
        self._define(gv, Function([ta], body, elem, []))

    def _define_stack(
        self,
        name: str,
        elem: Type,
        out_elem: Type,
        expand: GlobalVar,
        tensor_concat: GlobalVar | None,
    ) -> None:
        """``name(ta)``: the items of ``ta`` stacked on a new axis 0 (without
        ``tensor_concat``, ``ta`` holds one item)."""
        ta = Var("tensor_array", self._list_of(elem))
        expanded = Var("expanded")
        first = Call(self._prelude_fn("hd"), [expanded])
        if tensor_concat is None:
            body: Expr = first
        else:
            rest = Call(self._prelude_fn("tl"), [expanded])
            body = Call(self._prelude_fn("foldl"), [tensor_concat, first, rest])
        mapped = Call(self._prelude_fn("map"), [expand, ta])
        self._define(self._gv(name), Function([ta], Let(expanded, mapped, body), out_elem, []))


class TensorArrayOps(_Family):
    """The dynamic-rank tensor array of one dtype (``tensor_<dtype>_t``, ranks 0 to 6)."""

    def get_name(self, canonical: str) -> str:
        return self.prelude.get_name(canonical, self.dtype)

    def get_global_var(self, canonical: str) -> GlobalVar:
        return self.prelude.get_global_var(canonical, self.dtype)

    def get_type(self, canonical: str) -> GlobalTypeVar:
        return self.prelude.get_type(canonical, self.dtype)

    def get_ctor(self, canonical: str) -> Constructor:
        return self.prelude.get_ctor(self.get_name("tensor_t"), canonical, self.dtype)

    def _elem(self) -> TypeCall:
        return TypeCall(self.tensor_type_var, [])

    def _ranked(self) -> list[Constructor]:
        return [self.get_ctor(f"tensor{r}") for r in range(_MAX_RANK + 1)]

    def define_tensor_adt(self) -> None:
        self.tensor_type_var = gtv = GlobalTypeVar(self.get_name("tensor_t"))
        ctors = [Constructor(self.get_name("tensor_nil"), [], gtv)]
        for rank in range(_MAX_RANK + 1):
            field = TensorType(_any_dims(rank), self.dtype)
            ctors.append(Constructor(self.get_name(f"tensor{rank}"), [field], gtv))
        self.prelude.mod[gtv] = TypeData(gtv, [], ctors)

    def _define_by_rank(
        self, canonical: str, params: list[Var], ranks: range, body: Callable[[int, Var], Expr]
    ) -> None:
        ranked = self._ranked()
        clauses = [(ranked[r], (lambda t, r=r: body(r, t))) for r in ranks]
        fn = Function(params, _match(params[0], clauses), self._elem(), [])
        self._define(self._gv(self.get_name(canonical)), fn)

    def register(self) -> None:
        """Define the ADT and every function of this dtype in the prelude's module."""
        self.define_tensor_adt()
        elem, ranked = self._elem(), self._ranked()
        x, lower, upper = Var("tensor", elem), Var("lower", _I32), Var("upper", _I32)
        self._define_by_rank(
            "tensor_take",
            [x, lower, upper],
            range(1, _MAX_RANK + 1),
            lambda r, t: ranked[r](take(t, arange(lower, upper, dtype="int32"), axis=0)),
        )
        self._define_by_rank(
            "tensor_expand_dims",
            [Var("x", elem)],
            range(0, _MAX_RANK),
            lambda r, t: ranked[r + 1](expand_dims(t, 0, 1)),
        )
        a, b = Var("x", elem), Var("y", elem)

        def concat_rank(r: int, t1: Var) -> Expr:
            return _match(b, [(ranked[r], lambda t2: ranked[r](concatenate([t1, t2], 0)))])

        self._define_by_rank("tensor_concatenate", [a, b], range(1, _MAX_RANK + 1), concat_rank)
        nil = self.get_ctor("tensor_nil")
        self._define_array(self.get_name("tensor_array"), nil, elem)
        self._define_read(self.get_name("tensor_array_read"), elem)
        self._define_write(self.get_name("tensor_array_write"), elem)
        for rank in range(1, _MAX_RANK + 1):
            self._define_unstack(
                self.get_name(f"tensor_array_unstack_tensor{rank}"),
                self.get_name(f"tensor_array_unstack_tensor{rank}_helper"),
                TensorType(_any_dims(rank), self.dtype),
                ranked[rank - 1],
                elem,
            )
        write = self.get_global_var("tensor_array_write")
        read = self.get_global_var("tensor_array_read")
        self._define_scatter(
            self.get_name("tensor_array_scatter"),
            self.get_name("tensor_array_scatter_helper"),
            elem,
            write,
            read,
        )
        self._define_split(
            self.get_name("tensor_array_split"),
            self.get_name("ta_split_helper"),
            elem,
            elem,
            write,
            self.get_global_var("tensor_take"),
        )
        concat = self.get_global_var("tensor_concatenate")
        self._define_concat(self.get_name("tensor_array_concat"), elem, nil, concat)
        self._define_stack(
            self.get_name("tensor_array_stack"),
            elem,
            elem,
            self.get_global_var("tensor_expand_dims"),
            concat,
        )


class StaticTensorArrayOps(_Family):
    """The tensor array of one dtype and one shape (``static_tensor_<dtype>_<dims>_t``).

    ``shape`` may hold ``relay.Any()`` dims; ``batch_dim=1`` names the variant whose stack
    holds exactly one item. ``register()`` defines everything; functions whose result has
    another shape (``?`` in front, or one dim fewer) define that shape's ADT on the way.
    """

    def __init__(
        self, prelude: Prelude, dtype: str, shape: Sequence[Any], batch_dim: int | None = None
    ) -> None:
        super().__init__(prelude, dtype)
        self.shape = list(shape)
        self.batch_dim = batch_dim

    def get_name(self, canonical: str, extra_shapes: dict[str, Any] | None = None) -> str:
        return static_name(canonical, self.dtype, self.shape, self.batch_dim, extra_shapes)

    def get_global_var(self, canonical: str) -> GlobalVar:
        return self.prelude.get_global_var_static(canonical, self.dtype, self.shape, self.batch_dim)

    def get_type(self, canonical: str) -> GlobalTypeVar:
        return self.prelude.get_type_static(canonical, self.dtype, self.shape)

    def get_ctor(self, canonical: str) -> Constructor:
        return self.prelude.get_ctor_static("tensor_t", canonical, self.dtype, self.shape)

    def is_cached(self, name: str) -> bool:
        """Whether the module already defines a global called ``name``."""
        return self._has(name)

    def _elem(self) -> TypeCall:
        return TypeCall(self.tensor_type_var, [])

    def _tensor_ty(self) -> TensorType:
        return TensorType(self.shape, self.dtype)

    def _other(self, shape: Sequence[Any]) -> StaticTensorArrayOps:
        """The family of ``shape`` (same dtype), its ADT defined."""
        ops = StaticTensorArrayOps(self.prelude, self.dtype, shape, self.batch_dim)
        ops.define_tensor_adt()
        return ops

    def _stacked_shape(self) -> list[Any]:
        return [1 if self.batch_dim == 1 else AnyDim(), *self.shape]

    def _rows_shape(self) -> list[Any]:
        return [AnyDim(), *self.shape[1:]]

    def define_tensor_adt(self) -> None:
        name = self.get_name("tensor_t")
        existing = [g for g in self.prelude.mod.get_global_type_vars() if g.name_hint == name]
        if existing:
            self.tensor_type_var = existing[0]
            return
        self.tensor_type_var = gtv = GlobalTypeVar(name)
        nil = Constructor(self.get_name("tensor_nil"), [], gtv)
        ctor = Constructor(self.get_name("tensor_constructor"), [self._tensor_ty()], gtv)
        self.prelude.mod[gtv] = TypeData(gtv, [], [nil, ctor])

    def define_tensor_array(self) -> None:
        self._define_array(self.get_name("tensor_array"), self.get_ctor("tensor_nil"), self._elem())

    def define_tensor_take(self) -> None:
        name = self.get_name("tensor_take")
        if not self.shape or self.is_cached(name):
            return
        out = self._other(self._rows_shape())
        t, lower, upper = Var("tensor", self._elem()), Var("lower", _I32), Var("upper", _I32)
        rows = arange(lower, upper, dtype="int32")
        out_ctor = out.get_ctor("tensor_constructor")
        body = _match(
            t, [(self.get_ctor("tensor_constructor"), lambda v: out_ctor(take(v, rows, axis=0)))]
        )
        self._define(self._gv(name), Function([t, lower, upper], body, out._elem(), []))

    def define_tensor_concatenate(self) -> None:
        name = self.get_name("tensor_concatenate")
        if not self.shape or self.is_cached(name):
            return
        out = self._other(self._rows_shape())
        out_ctor, ctor = out.get_ctor("tensor_constructor"), self.get_ctor("tensor_constructor")
        x, y = Var("x", self._elem()), Var("y", self._elem())
        body = _match(
            x,
            [(ctor, lambda t1: _match(y, [(ctor, lambda t2: out_ctor(concatenate([t1, t2], 0)))]))],
        )
        self._define(self._gv(name), Function([x, y], body, out._elem(), []))

    def define_tensor_expand_dims(self) -> None:
        out = self._other(self._stacked_shape())
        out_ctor = out.get_ctor("tensor_constructor")
        x = Var("x", self._elem())
        body = _match(
            x, [(self.get_ctor("tensor_constructor"), lambda t: out_ctor(expand_dims(t, 0, 1)))]
        )
        self._define(
            self._gv(self.get_name("tensor_expand_dims")), Function([x], body, out._elem(), [])
        )

    def define_tensor_array_read(self) -> None:
        name = self.get_name("tensor_array_read")
        if not self.is_cached(name):
            self._define_read(name, self._elem())

    def define_tensor_array_write(self) -> None:
        name = self.get_name("tensor_array_write")
        if not self.is_cached(name):
            self._define_write(name, self._elem())

    def define_tensor_array_unstack(self) -> None:
        if not self.shape:
            return
        item = self._other(self.shape[1:])
        self._define_unstack(
            self.get_name("tensor_array_unstack"),
            self.get_name("tensor_array_unstack_helper"),
            self._tensor_ty(),
            item.get_ctor("tensor_constructor"),
            item._elem(),
        )

    def define_tensor_array_scatter(
        self, indices_shape: Sequence[Any] | None = None, force_update: bool = False
    ) -> None:
        """Define ``tensor_array_scatter`` (with static ``indices_shape`` when given)."""
        extra = {"indices": indices_shape} if indices_shape is not None else None
        name = self.get_name("tensor_array_scatter", extra)
        if self.is_cached(name) and not force_update:
            return
        self._define_scatter(
            name,
            self.get_name("tensor_array_scatter_helper", extra),
            self._elem(),
            self.get_global_var("tensor_array_write"),
            self.get_global_var("tensor_array_read"),
            indices_shape,
        )

    def define_tensor_array_split(
        self,
        value_shape: Sequence[Any] | None = None,
        lengths_shape: Sequence[Any] | None = None,
        force_update: bool = False,
    ) -> None:
        """Define ``tensor_array_split`` (static value / lengths shapes when given)."""
        name = self.get_name("tensor_array_split")
        if not self.shape or (self.is_cached(name) and not force_update):
            return
        out = self._other(self._rows_shape())
        out.define_tensor_array_write()
        if value_shape is None:
            value_ty: Type = self._elem()
            tensor_take = self.get_global_var("tensor_take")
        else:
            value_ops = self._other(value_shape)
            value_ops.define_tensor_take()
            value_ty = value_ops._elem()
            tensor_take = value_ops.get_global_var("tensor_take")
        self._define_split(
            name,
            self.get_name("ta_split_helper"),
            out._elem(),
            value_ty,
            out.get_global_var("tensor_array_write"),
            tensor_take,
            lengths_shape,
        )

    def define_tensor_array_concat(self) -> None:
        name = self.get_name("tensor_array_concat")
        if not self.shape or self.is_cached(name):
            return
        out = self._other(self._rows_shape())
        out.define_tensor_concatenate()
        self._define_concat(
            name, out._elem(), out.get_ctor("tensor_nil"), out.get_global_var("tensor_concatenate")
        )

    def define_tensor_array_stack(self) -> None:
        out = self._other(self._stacked_shape())
        out.define_tensor_concatenate()
        self._define_stack(
            self.get_name("tensor_array_stack"),
            self._elem(),
            out._elem(),
            self.get_global_var("tensor_expand_dims"),
            None if self.batch_dim == 1 else out.get_global_var("tensor_concatenate"),
        )

    def define_tensor_array_gather(self) -> None:
        """``tensor_array_gather(ta, indices)``: the items at ``indices``, stacked."""
        out = self._other(self._stacked_shape())
        helper = self._gv(self.get_name("tensor_array_gather_helper"))
        elem = self._elem()
        ta, accu = Var("ta", self._list_of(elem)), Var("accu", self._list_of(elem))
        cur, lim = Var("current", _I32), Var("limit", _I32)
        idx = Var("indices_", TensorType([AnyDim()], "int32"))
        prev = subtract(cur, const(1))
        read = Call(self.get_global_var("tensor_array_read"), [ta, take(idx, prev)])
        body = If(
            equal(cur, const(0)),
            Call(self.get_global_var("tensor_array_stack"), [accu]),
            Call(helper, [ta, self.cons(read, accu), prev, lim, idx]),
        )
        self._define(helper, Function([ta, accu, cur, lim, idx], body, out._elem(), []))
        ta2 = Var("tensor_array", self._list_of(elem))
        idx2 = Var("indices", TensorType([AnyDim()], "int32"))
        limit = take(shape_of(idx2), const(0))
        call = Call(helper, [ta2, self.nil(), limit, limit, idx2])
        self._define(
            self._gv(self.get_name("tensor_array_gather")),
            Function([ta2, idx2], call, out._elem(), []),
        )

    def define_tensor_get_data(self) -> None:
        t = Var("tensor", self._elem())
        body = _match(t, [(self.get_ctor("tensor_constructor"), lambda v: v)])
        fn = Function([t], body, self._tensor_ty(), [])
        self._define(self._gv(self.get_name("tensor_get_data")), fn)

    def register(self) -> None:
        """Define the ADT and every function of this dtype and shape."""
        self.define_tensor_adt()
        self.define_tensor_take()
        self.define_tensor_concatenate()
        self.define_tensor_expand_dims()
        self.define_tensor_array()
        self.define_tensor_array_read()
        self.define_tensor_array_write()
        self.define_tensor_array_unstack()
        self.define_tensor_array_scatter()
        self.define_tensor_array_split()
        self.define_tensor_array_concat()
        self.define_tensor_array_stack()
        self.define_tensor_array_gather()
        self.define_tensor_get_data()


def get_tensor_array_shape(expr: Expr, dtype: str, prelude: Prelude) -> tuple[Any, ...] | None:
    """The item shape of tensor array ``expr`` if it is a static one of ``dtype``, else None.

    Types ``expr`` as the body of the prelude module's ``main`` (TVM's behaviour).
    """
    mod = prelude.mod
    mod["main"] = Function(free_vars(expr), expr)
    mod = InferType()(mod)
    ty = mod["main"].body.checked_type
    if not isinstance(ty, TypeCall) or not ty.args or not isinstance(ty.args[0], TypeCall):
        raise IRError(f"get_tensor_array_shape: expected a tensor array (a List), got {ty}")
    name = str(getattr(ty.args[0].func, "name_hint", ""))
    prefix = f"static_tensor_{dtype}_"
    if not name.startswith(prefix):
        return None
    text = name[len(prefix) : -len("_t")]
    if text == "scalar":
        return ()
    return tuple(AnyDim() if d in ("any", "?") else int(d) for d in text.split("_"))
