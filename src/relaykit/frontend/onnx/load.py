"""Import ONNX models: ``relay.frontend.from_onnx(model) -> (mod, params)``.

``model`` is an ``onnx.ModelProto`` or a path to an ``.onnx`` file. Each node
is converted by the converter registered for its op type and the model's
opset (the newest converter whose ``since_version`` is not newer); ONNX
attributes reach converters as keyword arguments with their schema defaults.
Static shape computations are folded at import; values that are only known at
run time where the IR needs a static shape raise a
:class:`~relaykit.errors.DynamicShapeError` naming the node. A model with
operators relaykit cannot convert raises one
:class:`~relaykit.errors.UnsupportedOpError` listing all of them.

Import is bounded by the model's size in bytes, not by the numbers in it: a
constant above ``FoldConstant``'s limit (the ``PassContext`` option
``"relay.FoldConstant.max_bytes"``, 64 MiB per tensor) stays a runtime
operator, and absurd shapes, unroll lengths and initializers whose dims do not
match their data raise a :class:`~relaykit.errors.FrontendError` naming the
node and the value before anything is allocated (see ``_limits``).

>>> import onnx
>>> from onnx import helper, TensorProto
>>> node = helper.make_node("Relu", ["x"], ["y"])
>>> graph = helper.make_graph(
...     [node], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
>>> mod, params = from_onnx(helper.make_model(graph))
>>> print(mod["main"])
fn (%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  nn.relu(%x) /* ty=Tensor[(2, 3), float32] */
}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import FrontendError
from relaykit.ir.module import IRModule
from relaykit.runtime.ndarray import NDArray

from . import converters  # noqa: F401 - importing the package registers every converter
from .importer import GraphImporter
from .proto import load_model_proto, require_onnx
from .registry import supported_ops

__all__ = ["from_onnx", "load_model", "supported_ops", "MIN_OPSET", "max_opset"]

#: The oldest default-domain opset relaykit's converters are written for.
MIN_OPSET = 7


def max_opset() -> int:
    """The newest default-domain opset the installed ``onnx`` knows."""
    return int(require_onnx().defs.onnx_opset_version())


def _opsets(proto: Any, opset: int | None) -> dict[str, int]:
    opsets: dict[str, int] = {}
    for entry in proto.opset_import:
        domain = "" if entry.domain in ("", "ai.onnx") else entry.domain
        opsets[domain] = int(entry.version)
    if opset is not None:
        opsets[""] = int(opset)
    if "" not in opsets:
        opsets[""] = max_opset()
    newest = max_opset()
    if opsets[""] > newest:
        raise FrontendError(
            f"the model uses opset {opsets['']}, newer than the installed onnx knows "
            f"({newest}); upgrade the onnx package"
        )
    return opsets


def from_onnx(
    model: Any,
    shape: Mapping[str, Any] | None = None,
    dtype: Any = "float32",
    opset: int | None = None,
    freeze_params: bool = True,
    const_inputs: Mapping[str, Any] | None = None,
    dynamic: bool = True,
) -> tuple[IRModule, dict[str, NDArray]]:
    """Convert an ONNX model to a Relay module and its parameters.

    ``shape`` maps input names to static shapes (needed for inputs declared
    with symbolic dimensions); ``dtype`` is the dtype of inputs that declare
    none (or a name -> dtype map); ``opset`` overrides the model's default
    opset; with ``freeze_params`` (the default) initializers become constants
    of ``main`` and ``params`` is empty, otherwise the floating-point ones are extra
    parameters of ``main`` returned in ``params`` by name (integer initializers —
    shapes, axes, indices — stay constants so that shapes remain static).
    ``const_inputs`` binds graph inputs to fixed values (they become constants,
    not parameters of ``main``), which specialises a model whose shapes depend on
    input values. Symbolic input dimensions not pinned by ``shape`` are ``?``
    (``relay.Any()``; the module then runs on the Relay VM); with ``dynamic=False`` they
    raise :class:`~relaykit.errors.DynamicShapeError` naming the input instead, for
    callers that need static shapes (the graph executor, the CLI's ``compile``).
    """
    proto = load_model_proto(model)
    importer = GraphImporter(
        proto.graph, _opsets(proto, opset), shape, dtype, freeze_params, const_inputs
    )
    importer.dynamic_dims = bool(dynamic)
    return importer.run()


def load_model(path: Any, **kwargs: Any) -> tuple[IRModule, dict[str, NDArray]]:
    """Load a model file into ``(mod, params)``; ``.onnx`` files go through
    :func:`from_onnx` (keyword arguments are passed on)."""
    import os

    name = os.fspath(path)
    if name.lower().endswith(".onnx"):
        return from_onnx(name, **kwargs)
    raise FrontendError(
        f"cannot load {name!r}: relaykit.frontend.load_model reads .onnx files "
        "(Relay text files load with relaykit.parse)"
    )
