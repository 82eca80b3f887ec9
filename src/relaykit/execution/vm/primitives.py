"""Operator primitives of the VM: an operator call's host kernel.

``call`` runs the operator's reference kernel (``FCompute``) and checks the
result against the call's type (dynamic dimensions match any size; when the
operator has a shape function, ``FShapeFunc``, the output shape it computes
from the inputs is checked too). ``bind`` binds the graph executor's host
kernel (:mod:`relaykit.backends.host.kernels`) to fixed input and output arrays,
for planned storage; scratch memory is one arena per machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.backends.host.kernels import Scratch, bind_kernel, host_kernel_names
from relaykit.errors import ExecutionError, RelayKitError
from relaykit.execution.graph_plan import attrs_from_json
from relaykit.ir.attrs import Attrs
from relaykit.ir.op import default_registry
from relaykit.runtime.vm import (
    ADT,
    Primitive,
    PrimitiveRecord,
    VMExecutableModule,
    check_shape,
    register_primitive_kind,
    shape_checker,
    type_spec_str,
)

__all__ = ["OpPrimitive", "ShapeFuncPrimitive", "VIEW_OPS"]

#: Operators whose result is their input viewed with another shape.
VIEW_OPS = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten"})


#: Input shapes whose output shapes one primitive remembers (then it starts again).
_SHAPE_MEMO_SIZE = 64


class _Arena:
    """The scratch arena shared by the kernels one machine binds (they run one at a time)."""

    def __init__(self) -> None:
        self.arena = np.empty(0, np.uint8)


class OpPrimitive(Primitive):
    """An operator call: reference kernel for ``call``, host kernel for ``bind``."""

    def __init__(self, record: PrimitiveRecord, exe: VMExecutableModule, shared: dict[str, Any]):
        super().__init__(record)
        name = record.name
        if name not in default_registry:
            raise ExecutionError(
                f"the VM executable calls operator {name}, which is not registered here"
            )
        live = record.live
        self.attrs: Attrs = (
            live if isinstance(live, Attrs) else attrs_from_json(record.attrs or {}, name)
        )
        self.kernel: Callable[..., Any] | None = default_registry.get_attr(name, "FCompute")
        self.shape_func = default_registry.get_attr(name, "FShapeFunc")
        self.data_dependent = bool(default_registry.get_attr(name, "TShapeDataDependent"))
        self.out = record.out_type
        self.tuple_out = isinstance(self.out, dict) and self.out.get("t") == "tuple"
        self.dynamic = "None" in repr(self.out)
        tensor_out = isinstance(self.out, dict) and self.out.get("t") == "tensor"
        self.out_dtype = np.dtype(self.out["dtype"]) if tensor_out else None
        self.where = f"operator {name}"
        self.check_out = shape_checker(self.out, self.where)
        # Checks of whole arguments (a tuple argument is checked field by field by its
        # producer), so that a wrong shape is reported with the operator's name.
        self.arg_checks = (
            [shape_checker(s, f"{self.where} argument {i}") for i, s in enumerate(record.in_types)]
            if not record.groups
            else []
        )
        arena = shared.get("arena")
        if arena is None:
            arena = shared["arena"] = _Arena()
        self.arena: _Arena = arena
        self.peak = -1
        self.shape_memo: dict[Any, list[tuple[int, ...]]] = {}
        self.dedicated = name in host_kernel_names()
        #: a reshape: its output of dynamic shape is a view of its input
        self.view_of_input = name in VIEW_OPS and len(record.in_types) == 1

    def call(self, inputs: list[Any]) -> Any:
        kernel = self.kernel
        if kernel is None:
            raise ExecutionError(f"{self.where} has no reference kernel")
        ins = [tuple(a) if isinstance(a, list) else a for a in inputs]
        for v, check in zip(ins, self.arg_checks, strict=False):
            check(v)
        try:
            out = kernel(ins, self.attrs)
        except RelayKitError:
            raise
        except Exception as err:
            raise ExecutionError(
                f"while running {self.where}: {type(err).__name__}: {err}"
            ) from err
        if self.tuple_out:
            fields = [_own(np.asarray(v)) for v in out]
            check_shape(fields, self.out, self.where)
            value: Any = ADT(0, fields)
        else:
            value = _own(out if type(out) is np.ndarray else np.asarray(out))
            self.check_out(value)
        if self.dynamic and self.shape_func is not None:
            self.check_shape_func(inputs, value)
        return value

    def out_shapes(self, inputs: list[Any]) -> list[tuple[int, ...]] | None:
        """The output shapes the shape function gives for ``inputs`` (remembered per
        input shapes when it is data-independent); None when it cannot say."""
        if self.data_dependent:
            key = None
            args = inputs
        else:
            args = [_shapes(a) for a in inputs]
            key = tuple(tuple(a) if isinstance(a, list) else a for a in args)
            known = self.shape_memo.get(key)
            if known is not None:
                return known
        try:
            shapes = self.shape_func(self.attrs, args)
        except RelayKitError:
            raise
        except Exception:  # a shape function of another signature: the type check stands
            return None
        want = [tuple(int(d) for d in s) for s in shapes]
        if key is not None:
            if len(self.shape_memo) >= _SHAPE_MEMO_SIZE:
                self.shape_memo.clear()
            self.shape_memo[key] = want
        return want

    def check_shape_func(self, inputs: list[Any], value: Any) -> None:
        """The kernel's output shapes against the operator's shape function."""
        want = self.out_shapes(inputs)
        if want is None:
            return
        got = [v.shape for v in value.fields] if isinstance(value, ADT) else [value.shape]
        if [tuple(g) for g in got] != want:
            raise ExecutionError(
                f"{self.where}: shape mismatch at run time: the kernel returned "
                f"{', '.join(str(tuple(g)) for g in got)}, the shape function says "
                f"{', '.join(str(w) for w in want)} (type {type_spec_str(self.out)})"
            )

    def bind(self, inputs: list[Any], out: np.ndarray) -> Callable[[], Any] | None:
        if not self.dedicated:
            return self.bind_reference(inputs, out)
        # Planned outputs have static shapes: the scratch a call needs is measured once.
        if self.peak < 0:
            measure = Scratch(None)
            bind_kernel(self.record.name, self.attrs, inputs, [out], measure)
            self.peak = measure.peak
        arena = self.arena
        if self.peak > arena.arena.nbytes:
            arena.arena = np.empty(self.peak, np.uint8)
        return bind_kernel(self.record.name, self.attrs, inputs, [out], Scratch(arena.arena))

    def bind_dynamic(
        self, inputs: list[Any], previous: Any
    ) -> tuple[np.ndarray, Callable[[], Any]] | None:
        """The output shape from the shape function, an array of it (``previous`` if it
        fits) and the host kernel bound to the inputs and that array."""
        if self.shape_func is None or self.data_dependent or self.out_dtype is None:
            return None
        shapes = self.out_shapes(inputs)
        if shapes is None or len(shapes) != 1:
            return None
        shape = shapes[0]
        if self.view_of_input:
            view = inputs[0].reshape(shape)
            self.check_out(view)
            return view, _nothing
        dtype = self.out_dtype
        if type(previous) is np.ndarray and previous.shape == shape and previous.dtype == dtype:
            out = previous
        else:
            out = np.empty(shape, dtype)
        self.check_out(out)
        name = self.record.name
        if not self.dedicated:
            return out, self.bind_reference(inputs, out)
        measure = Scratch(None)
        bind_kernel(name, self.attrs, inputs, [out], measure)
        arena = self.arena
        if measure.peak > arena.arena.nbytes:
            arena.arena = np.empty(measure.peak, np.uint8)
        return out, bind_kernel(name, self.attrs, inputs, [out], Scratch(arena.arena))

    def bind_reference(self, inputs: list[Any], out: np.ndarray) -> Callable[[], Any]:
        """The reference kernel, its result checked and copied into ``out``."""
        ins = [tuple(a) if isinstance(a, list) else a for a in inputs]
        kernel, attrs, check = self.kernel, self.attrs, self.check_out
        if kernel is None:
            raise ExecutionError(f"{self.where} has no reference kernel")
        where = self.where

        def run() -> None:
            try:
                r = kernel(ins, attrs)
            except RelayKitError:
                raise
            except Exception as err:
                raise ExecutionError(f"while running {where}: {type(err).__name__}: {err}") from err
            r = np.asarray(r)
            check(r)
            np.copyto(out, r)

        return run


def _nothing() -> None:
    """The run of a view: nothing to compute."""


def _shapes(value: Any) -> Any:
    if isinstance(value, list):
        return [tuple(v.shape) for v in value]
    return tuple(value.shape)


def _own(arr: np.ndarray) -> np.ndarray:
    """``arr``, copied when it is a view (of an input, possibly a planned buffer)."""
    return arr.copy() if arr.base is not None else arr


class ShapeFuncPrimitive(Primitive):
    """An operator's shape function (``FShapeFunc``) run on the call's inputs: the output
    shape as an int64 tensor (what TVM's VM computes before ``reshape_tensor`` of a
    dynamic reshape)."""

    def __init__(self, record: PrimitiveRecord, exe: VMExecutableModule, shared: dict[str, Any]):
        super().__init__(record)
        name = record.name
        live = record.live
        self.attrs: Attrs = (
            live if isinstance(live, Attrs) else attrs_from_json(record.attrs or {}, name)
        )
        shape_func = (
            default_registry.get_attr(name, "FShapeFunc") if name in default_registry else None
        )
        if shape_func is None:
            raise ExecutionError(
                f"the VM executable calls the shape function of {name}, which has none here"
            )
        self.shape_func: Callable[..., Any] = shape_func
        self.data_dependent = bool(default_registry.get_attr(name, "TShapeDataDependent"))

    def describe(self) -> str:
        return f"shape function of {self.record.name}"

    def call(self, inputs: list[Any]) -> Any:
        args = inputs if self.data_dependent else [_shapes(a) for a in inputs]
        try:
            shapes = self.shape_func(self.attrs, args)
        except Exception as err:
            # The reason without the input values the relation's message repeats.
            reason = str(err).rsplit("do not fit: ", 1)[-1]
            raise ExecutionError(
                f"operator {self.record.name}: no output shape for inputs of shapes "
                f"{', '.join(str(tuple(np.shape(a))) for a in inputs)}: {reason}"
            ) from err
        return np.array(shapes[0], np.int64)


register_primitive_kind("op", OpPrimitive)
register_primitive_kind("shape_func", ShapeFuncPrimitive)
