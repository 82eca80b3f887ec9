"""The ONNX graph under construction: unique value names, nodes, initializers.

The builder writes plain ONNX protos through ``onnx.helper``; converters
(:mod:`.converters`) call :meth:`GraphBuilder.node` and :meth:`GraphBuilder.const`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relaykit.errors import CodegenError

__all__ = ["GraphBuilder", "OPSET", "onnx_dtype"]

#: The opset every exported model declares (``LayerNormalization`` needs 17).
OPSET = 17


def onnx_dtype(dtype: str) -> int:
    """The ONNX element type of a relaykit dtype name."""
    from onnx import helper

    try:
        return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    except (TypeError, KeyError) as err:
        raise CodegenError(f"dtype {dtype} has no ONNX element type") from err


class GraphBuilder:
    """Collects the nodes and initializers of one ONNX graph."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op_type: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> list[str]:
        """Append one node; returns its output names."""
        from onnx import helper

        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        clean = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, inputs, outs, **clean))
        return outs

    def one(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        """Append a node with one output; returns its name."""
        return self.node(op_type, inputs, 1, **attrs)[0]

    def const(self, value: Any, dtype: str | None = None, hint: str = "c") -> str:
        """An initializer holding ``value``; returns its name."""
        from onnx import numpy_helper

        arr = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def ints(self, values: Any) -> str:
        """An int64 initializer (shapes, axes, pads)."""
        return self.const(np.asarray(list(values), dtype=np.int64), hint="i")
