"""An ONNX backend (``onnx.backend.base.Backend``) that runs models with relaykit.

``prepare`` imports the model with :func:`relaykit.frontend.from_onnx`, runs
the optimisation pipeline and binds the reference interpreter (or the graph
executor when ``relay.build`` is available and ``executor="graph"``), so
ONNX's own backend test suite (``onnx.backend.test.BackendTest``) runs
relaykit end to end.

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

from relaykit.backend.interpreter import create_executor
from relaykit.errors import DynamicShapeError, FrontendError
from relaykit.ir.module import IRModule
from relaykit.transform.pipeline import optimize

from .onnx import from_onnx

__all__ = [
    "RelayKitBackend",
    "RelayKitBackendRep",
    "prepare",
    "run_model",
    "run_node",
    "node_test_cases",
    "run_node_test",
]


def _optimize(mod: IRModule) -> IRModule:
    """The opt_level=3 pipeline (it is cheap on small graphs)."""
    return optimize(mod)


class RelayKitBackendRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns a tuple of NumPy arrays.

    A model whose shapes depend on the *values* of some inputs (a ``Range``
    limit, a ``Reshape`` target given as an input), or on the shapes of inputs
    declared with symbolic dimensions, or that takes sequences, cannot be
    compiled ahead of time with static shapes; such a model is specialised at
    ``run``: the inputs take the shapes they are run with, the integer and
    sequence inputs (then, if needed, all inputs) are bound as constants and the
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
        self._fn = create_executor("debug", mod=mod).evaluate() if mod is not None else None
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
            fn = create_executor("debug", mod=_optimize(mod)).evaluate()
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
            out = self._fn(*args)
        outs = out if isinstance(out, tuple) and self.num_outputs != 1 else (out,)
        return tuple(_to_numpy(o) for o in outs)


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
    """relaykit as an ONNX backend (CPU only)."""

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> RelayKitBackendRep:
        if not cls.supports_device(device):
            raise FrontendError(f"relaykit runs on the CPU, not on {device!r}")
        shape = kwargs.get("shape")
        inits = {t.name for t in model.graph.initializer}
        names = [vi.name for vi in model.graph.input if vi.name not in inits]
        try:
            mod, _ = from_onnx(model, shape=shape, freeze_params=True)
        except DynamicShapeError:
            return RelayKitBackendRep(None, names, model)
        return RelayKitBackendRep(_optimize(mod), names, num_outputs=len(model.graph.output))

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
    """Run one node test case on ``backend`` as ``onnx.backend.test.BackendTest`` does;
    raise AssertionError (or the backend's error) when it fails."""
    from onnx.backend.test.runner import Runner, _normalize_tensor

    rep = backend.prepare(case.model, "CPU")
    for inputs, refs in case.data_sets:
        ins = [_normalize_tensor(t) for t in inputs]
        want = [_normalize_tensor(t) for t in refs]
        got = rep.run(ins)
        Runner.assert_similar_outputs(want, got, rtol=case.rtol, atol=case.atol)
