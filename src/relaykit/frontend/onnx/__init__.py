"""The ONNX frontend: ``from_onnx(model) -> (mod, params)``.

- :mod:`.load`: :func:`from_onnx` and :func:`load_model`, the entry points;
- :mod:`.importer`: the graph walk that turns each node into Relay calls;
- :mod:`.registry`: the converter table, ``(domain, op_type) -> {since_version: fn}``;
- :mod:`.converters`: the converters, one module per operator family;
- :mod:`.proto`, :mod:`.limits`, :mod:`.narrow`: reading protobufs, size limits,
  narrow element types;
- :mod:`.backend`: ``onnx.backend.base.Backend`` over relaykit, which runs onnx's own
  node tests (imported on its own: it needs the ``onnx`` package at import).

>>> from relaykit.frontend.onnx import from_onnx, supported_ops
>>> "Conv" in supported_ops()
True
"""

from .load import MIN_OPSET, from_onnx, load_model, max_opset, supported_ops

__all__ = ["from_onnx", "load_model", "supported_ops", "MIN_OPSET", "max_opset"]
