"""An ONNX backend (``onnx.backend.base.Backend``) that runs models with relaykit.

``prepare`` imports the model ONCE with :func:`relaykit.frontend.from_onnx`.
A static module goes through the optimisation pipeline and runs on the
reference interpreter; a dynamic one (``?`` dimensions, dynamic operators,
``If``/``Loop`` control flow) is compiled once with ``relay.vm.compile`` and
runs on the Relay VM, whatever the inputs' values and shapes. ONNX's own
backend test suite (``onnx.backend.test.BackendTest``) runs relaykit end to end.

Re-importing the model per distinct input value (binding the inputs as
constants, so every shape is static) is only a fallback, off by default:
``prepare(model, reimport_fallback=True)`` (or
:class:`RelayKitReimportBackend`) uses it when the model cannot be imported
once (a sequence input, an op whose converter needs a value at import).

>>> import numpy as np
>>> from onnx import helper, TensorProto
>>> node = helper.make_node("Add", ["a", "b"], ["c"])
>>> vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "abc"]
>>> model = helper.make_model(helper.make_graph([node], "g", vi[:2], vi[2:]))
>>> a = np.array([1, 2], "float32")
>>> RelayKitBackend.run_model(model, [a, a])[0].tolist()
[2.0, 4.0]
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, helper
from onnx.backend.base import Backend, BackendRep

from relaykit.errors import DynamicShapeError, FrontendError
from relaykit.execution.interpreter import create_executor
from relaykit.execution.vm import compile as vm_compile
from relaykit.ir.adt import Constructor, Match
from relaykit.ir.expr import Call, Function, GlobalVar, If, Let, checked_type_or_none
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.runtime.vm import ADT, VirtualMachine
from relaykit.transform.fold_constant import FoldConstant
from relaykit.transform.pipeline import optimize

from .load import from_onnx

__all__ = [
    "RelayKitBackend",
    "RelayKitBackendRep",
    "RelayKitReimportBackend",
    "input_shapes",
    "is_dynamic",
    "prepare",
    "run_model",
    "run_node",
    "node_test_cases",
    "run_node_test",
]


def _optimize(mod: IRModule) -> IRModule:
    """The opt_level=3 pipeline (it is cheap on small graphs)."""
    return optimize(mod)


def _static_type(ty: Type | None) -> bool:
    if ty is None:
        return True
    if isinstance(ty, TensorType):
        return all(isinstance(d, int) for d in ty.shape)
    if isinstance(ty, TupleType):
        return all(_static_type(f) for f in ty.fields)
    return True


def is_dynamic(mod: IRModule) -> bool:
    """Whether ``mod`` needs the Relay VM: a ``?`` (or symbolic) dimension in any
    type, control flow (``If``, ``let``, calls of other global functions, local
    functions) or algebraic data types."""
    if len(mod.functions) > 1:
        return True
    for node in post_order(mod["main"]):
        if type(node) in (If, Let, Match, Constructor, GlobalVar):
            return True
        if type(node) is Function and node is not mod["main"]:
            return True
        if type(node) is Call and not _static_type(checked_type_or_none(node)):
            return True
    return any(not _static_type(p.checked_type) for p in mod["main"].params)


def _executor(mod: IRModule) -> Any:
    """A callable running ``main``: the interpreter on the optimised module when it is
    static, else the Relay VM (compiled once)."""
    if not is_dynamic(mod):
        return create_executor("debug", mod=_optimize(mod)).evaluate()
    # static parts computed once (dynamically typed calls are left alone)
    mod = FoldConstant()(mod)
    vm = VirtualMachine(vm_compile(mod, target="llvm"), None)

    def run(*args: Any) -> Any:
        return _from_adt(vm.invoke("main", *args))

    return run


class RelayKitBackendRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns a tuple of NumPy arrays.

    The model was imported once; dynamic models run on the Relay VM. Only with the
    re-import fallback (``mod`` is None: the model could not be imported once) is it
    specialised at ``run``: the inputs take the shapes they are run with, the integer
    and sequence inputs (then, if needed, all inputs) are bound as constants and the
    model is imported again, once per distinct set of bound values.
    """

    def __init__(
        self,
        mod: IRModule | None,
        input_names: Sequence[str],
        model: ModelProto | None = None,
        num_outputs: int | None = None,
    ) -> None:
        self.mod = mod
        self.input_names = list(input_names)
        self.model = model
        #: with one graph output, a tuple result is that output (a sequence), not a list
        self.num_outputs = num_outputs if model is None else len(model.graph.output)
        self.specialized = mod is None
        self.dynamic = mod is not None and is_dynamic(mod)
        self._fn = _executor(mod) if mod is not None else None
        self._cache: dict[bytes, Any] = {}

    def _specialised(self, args: list[Any]) -> Any:
        assert self.model is not None
        # sequences (lists of arrays) are tuples of a length fixed at import
        # (and optionals: None for an empty one), so they are always bound
        arrays = [_as_value(a) for a in args]
        ints = [
            i
            for i, a in enumerate(arrays)
            if not isinstance(a, np.ndarray) or a.dtype.kind in "iub"
        ]
        for bound in (ints, list(range(len(arrays)))):
            key = repr(bound).encode() + b"".join(_value_key(arrays[i]) for i in bound)
            hit = self._cache.get(key)
            if hit is not None:
                return hit
            consts = {self.input_names[i]: arrays[i] for i in bound}
            # inputs declared with symbolic dimensions take the shapes they are run with
            shapes = {
                n: a.shape
                for n, a in zip(self.input_names, arrays, strict=True)
                if isinstance(a, np.ndarray)
            }
            try:
                mod, _ = from_onnx(self.model, shape=shapes, const_inputs=consts)
            except DynamicShapeError:
                if len(bound) == len(arrays):
                    raise
                continue
            fn = _executor(mod)
            rest = [i for i in range(len(arrays)) if i not in bound]
            hit = (fn, rest)
            self._cache[key] = hit
            return hit
        raise FrontendError("no binding of the inputs imports this model")  # pragma: no cover

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, Mapping):
            args = [inputs[n] for n in self.input_names]
        elif isinstance(inputs, np.ndarray):
            args = [inputs]
        else:
            args = list(inputs)
        if len(args) != len(self.input_names):
            raise FrontendError(
                f"the model takes {len(self.input_names)} inputs "
                f"({', '.join(self.input_names)}), got {len(args)}"
            )
        if self._fn is None:
            fn, rest = self._specialised(args)
            out = fn(*[args[i] for i in rest])
        else:
            out = self._fn(*_flatten(args))
        outs = out if isinstance(out, tuple) and self.num_outputs != 1 else (out,)
        return tuple(_to_numpy(o) for o in outs)


def _flatten(args: Sequence[Any]) -> list[Any]:
    """The parameters of ``main`` for the graph's inputs: a sequence input is one
    parameter per element, an empty optional (None) none."""
    flat: list[Any] = []
    for a in args:
        if a is None:
            continue
        if isinstance(a, (list, tuple)):
            flat.extend(_flatten(a))
        else:
            flat.append(a)
    return flat


def _pin(value: Any) -> Any:
    """The ``shape=`` pin of an input value: its shape, a list of element pins for a
    sequence, None for an empty optional."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_pin(v) for v in value]
    return tuple(np.shape(value))


def input_shapes(model: ModelProto, inputs: Any) -> dict[str, Any]:
    """``from_onnx``'s ``shape=`` for running ``model`` on ``inputs`` (a list in graph
    order or a name -> value dict): each input's shape, or its sequence/optional
    structure."""
    inits = {t.name for t in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    if isinstance(inputs, Mapping):
        pairs = [(n, inputs[n]) for n in names if n in inputs]
    elif isinstance(inputs, np.ndarray):
        pairs = [(names[0], inputs)] if names else []
    else:
        pairs = list(zip(names, list(inputs), strict=False))
    return {n: _pin(v) for n, v in pairs}


def _from_adt(value: Any) -> Any:
    """The VM's tuples (ADT objects) as Python tuples, as the interpreter returns them."""
    if isinstance(value, ADT):
        return tuple(_from_adt(v) for v in value)
    return value


def _as_value(value: Any) -> Any:
    """An input as a NumPy array, a list of them (a sequence) or None (an empty optional)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_as_value(v) for v in value]
    return np.asarray(value)


def _value_key(value: Any) -> bytes:
    """Bytes that identify an input's value, dtype and shape (a sequence's: all of its
    elements and its length)."""
    if value is None:
        return b"None"
    if isinstance(value, list):
        return b"[%d]" % len(value) + b"".join(_value_key(v) for v in value)
    return value.tobytes() + repr((value.dtype.str, value.shape)).encode()


def _to_numpy(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_to_numpy(v) for v in value]
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


class RelayKitBackend(Backend):
    """relaykit as an ONNX backend (CPU only).

    ``prepare(model, device, shape=None, reimport_fallback=False)``: ``shape`` pins
    input shapes (``from_onnx``'s ``shape=``; unpinned symbolic dimensions are
    ``?``). ``reimport_fallback=True`` (the class default of
    :class:`RelayKitReimportBackend`) re-imports the model per distinct input value
    when it cannot be imported once; off, such a model raises the importer's error.
    """

    #: the default of ``prepare``'s ``reimport_fallback``
    reimport_fallback = False

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> RelayKitBackendRep:
        if not cls.supports_device(device):
            raise FrontendError(f"relaykit runs on the CPU, not on {device!r}")
        shape = kwargs.get("shape")
        fallback = bool(kwargs.get("reimport_fallback", cls.reimport_fallback))
        inits = {t.name for t in model.graph.initializer}
        names = [vi.name for vi in model.graph.input if vi.name not in inits]
        try:
            mod, _ = from_onnx(model, shape=shape, freeze_params=True)
        except DynamicShapeError:
            if not fallback:
                raise
            return RelayKitBackendRep(None, names, model)
        return RelayKitBackendRep(mod, names, num_outputs=len(model.graph.output))

    @classmethod
    def run_model(
        cls, model: ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        """Import ``model`` once with its inputs' shapes (and sequence lengths) pinned to
        those of ``inputs``, and run it."""
        kwargs.setdefault("shape", input_shapes(model, inputs))
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Any = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run a single node on NumPy inputs (their dtypes and shapes define the graph)."""
        arrays = [np.asarray(x) for x in inputs]
        names = [n for n in node.input if n]
        vis = [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, arrays, strict=False)
        ]
        outs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "run_node", vis, outs)
        opset = kwargs.get("opset_version")
        opsets = [helper.make_opsetid("", int(opset))] if opset else None
        model = helper.make_model(graph, opset_imports=opsets)
        return cls.run_model(model, arrays, device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return str(device).upper().startswith("CPU")


class RelayKitReimportBackend(RelayKitBackend):
    """:class:`RelayKitBackend` with the re-import fallback on: a model that cannot be
    imported once is imported again per distinct set of input values."""

    reimport_fallback = True


prepare = RelayKitBackend.prepare
run_model = RelayKitBackend.run_model
run_node = RelayKitBackend.run_node


def node_test_cases() -> list[Any]:
    """ONNX's node test cases (``onnx.backend.test``), generated in memory once per
    process (the cases are shared: copy a model before changing it)."""
    return list(_node_test_cases())


@functools.cache
def _node_test_cases() -> tuple[Any, ...]:
    import warnings

    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return tuple(load_model_tests(kind="node"))


def run_node_test(case: Any, backend: Any = RelayKitBackend) -> None:
    """Run one node test case on ``backend`` as ``onnx.backend.test.BackendTest`` does
    (the model imported once, its tensor inputs' shapes pinned to the first data set's);
    raise AssertionError (or the backend's error) when it fails."""
    from onnx.backend.test.runner import Runner, _normalize_tensor

    if case.data_sets and isinstance(backend, type) and issubclass(backend, RelayKitBackend):
        first = [_normalize_tensor(t) for t in case.data_sets[0][0]]
        rep = backend.prepare(case.model, "CPU", shape=input_shapes(case.model, first))
    else:
        rep = backend.prepare(case.model, "CPU")
    for inputs, refs in case.data_sets:
        ins = [_normalize_tensor(t) for t in inputs]
        want = [_normalize_tensor(t) for t in refs]
        got = rep.run(ins)
        Runner.assert_similar_outputs(want, got, rtol=case.rtol, atol=case.atol)
