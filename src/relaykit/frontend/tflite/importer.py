"""``from_tflite``: a TFLite model (its first subgraph) to a Relay module, operator by
operator in the model's order.

Tensors keep TFLite's NHWC layout. Constant tensors become Relay constants (so the
quantized operators see constant weights and parameters); the inputs are the
subgraph's inputs, named as in the model, with the shapes and dtypes of ``shape_dict``
and ``dtype_dict`` where given. Every unsupported operator of the model is reported at
once, before anything is converted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relaykit.errors import FrontendError, UnsupportedOpError
from relaykit.ir.expr import Constant, Expr, Function, Tuple, TupleWrapper, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray

from . import converters as _converters  # noqa: F401  (fills the converter table)
from .registry import CONVERTERS, OpContext
from .schema import TensorInfo, operator_name, read_tensor, root_model

__all__ = ["ExprTable", "OperatorConverter", "from_tflite", "supported_ops"]


def supported_ops() -> list[str]:
    """The builtin TFLite operators ``from_tflite`` converts."""
    return sorted(CONVERTERS)


class ExprTable:
    """The Relay value of each tensor converted so far, by tensor index."""

    def __init__(self) -> None:
        self.exprs: dict[int, Expr] = {}

    def has_expr(self, index: int) -> bool:
        return index in self.exprs

    def get_expr(self, index: int) -> Expr:
        return self.exprs[index]

    def set_expr(self, index: int, expr: Expr) -> None:
        self.exprs[index] = expr


class OperatorConverter:
    """Converts the operators of one TFLite subgraph (TVM's ``OperatorConverter``).

    ``convert_map`` maps a builtin operator name to a function of the ``tflite.Operator``
    returning its Relay value(s); a subclass may add or replace entries, and use
    :meth:`get_input_tensors`, :meth:`get_output_tensors`, :meth:`get_expr` and
    :meth:`get_tensor_value` to write them.
    """

    def __init__(self, model: Any, subgraph: Any, exp_tab: ExprTable) -> None:
        self.model = model
        self.subgraph = subgraph
        self.exp_tab = exp_tab
        self._tensors: dict[int, TensorInfo] = {}
        self._index = -1  # the operator being converted
        self.convert_map: dict[str, Callable[[Any], Any]] = {
            name: self._bind(name) for name in CONVERTERS
        }

    # -- tensors --------------------------------------------------------------
    def tensor(self, index: int) -> TensorInfo:
        """The tensor ``index`` of the subgraph, read once."""
        info = self._tensors.get(index)
        if info is None:
            info = read_tensor(self.model, self.subgraph, index)
            self._tensors[index] = info
        return info

    def get_input_tensors(self, op: Any) -> list[TensorInfo | None]:
        return [None if int(i) < 0 else self.tensor(int(i)) for i in op.InputsAsNumpy()]

    def get_output_tensors(self, op: Any) -> list[TensorInfo]:
        return [self.tensor(int(i)) for i in op.OutputsAsNumpy()]

    def get_tensor_value(self, tensor: TensorInfo) -> Any:
        if tensor.data is None:
            raise FrontendError(f"TFLite tensor '{tensor.name}' has no constant data")
        return tensor.data

    def get_expr(self, tensor: TensorInfo) -> Expr:
        """The Relay value of ``tensor``: converted, or a constant of its data."""
        if self.exp_tab.has_expr(tensor.index):
            return self.exp_tab.get_expr(tensor.index)
        if tensor.data is None:
            raise FrontendError(
                f"TFLite tensor {tensor.index} ('{tensor.name}') is used before any operator "
                "produces it and is neither an input nor a constant of the model"
            )
        expr = Constant(tensor.data)
        self.exp_tab.set_expr(tensor.index, expr)
        return expr

    # -- operators ------------------------------------------------------------
    def operators(self) -> list[tuple[int, Any, str]]:
        ops = []
        for i in range(self.subgraph.OperatorsLength()):
            op = self.subgraph.Operators(i)
            ops.append((i, op, operator_name(self.model, op)))
        return ops

    def check_unsupported_ops(self) -> None:
        """Raise one UnsupportedOpError listing every operator without a converter."""
        missing: dict[str, tuple[int, str]] = {}
        counts: Counter[str] = Counter()
        for _, op, name in self.operators():
            if name not in self.convert_map:
                counts[name] += 1
                if name not in missing:
                    outs = self.get_output_tensors(op)
                    missing[name] = (0, outs[0].name if outs else "?")
        if missing:
            ops = {k: (counts[k], v[1]) for k, v in missing.items()}
            listing = ", ".join(f"{k} (x{c}, first output '{n}')" for k, (c, n) in ops.items())
            raise UnsupportedOpError(
                f"the TFLite model uses operators relaykit cannot import: {listing}; "
                "supported ones are listed by relaykit.frontend.tflite.supported_ops()",
                ops,
            )

    def _bind(self, name: str) -> Callable[[Any], Any]:
        fn = CONVERTERS[name]

        def convert(op: Any) -> Any:
            return fn(self._context(name, op))

        return convert

    def _context(self, name: str, op: Any) -> OpContext:
        return OpContext(
            name,
            self._index,
            op,
            self.get_input_tensors(op),
            self.get_output_tensors(op),
            self.get_expr,
        )

    def convert_op_to_relay(self) -> None:
        """Convert every operator, recording its outputs in the expression table."""
        self.check_unsupported_ops()
        for i, op, name in self.operators():
            self._index = i
            outputs = self.get_output_tensors(op)
            try:
                result = self.convert_map[name](op)
            except FrontendError:
                raise
            except Exception as exc:
                where = f"TFLite operator {i} ({name}, output '{outputs[0].name}')"
                raise FrontendError(f"{where}: {type(exc).__name__}: {exc}") from exc
            self._record(outputs, result, i, name)

    def _record(self, outputs: Sequence[TensorInfo], result: Any, i: int, name: str) -> None:
        if isinstance(result, TupleWrapper):
            result = [result[k] for k in range(len(result))]
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(values) != len(outputs):
            raise FrontendError(
                f"TFLite operator {i} ({name}): its converter gave {len(values)} values for "
                f"{len(outputs)} outputs"
            )
        for t, v in zip(outputs, values, strict=True):
            self.exp_tab.set_expr(t.index, v)


def _input_var(t: TensorInfo, shape_dict: Mapping[str, Any], dtype_dict: Mapping[str, Any]) -> Var:
    shape = tuple(int(d) for d in shape_dict.get(t.name, t.shape))
    dtype = str(dtype_dict.get(t.name, t.dtype))
    return Var(t.name, TensorType(shape, dtype))


def from_tflite(
    model: Any,
    shape_dict: Mapping[str, Any] | None = None,
    dtype_dict: Mapping[str, Any] | None = None,
    op_converter: type[OperatorConverter] = OperatorConverter,
) -> tuple[IRModule, dict[str, NDArray]]:
    """A TFLite model as ``(IRModule, params)`` (TVM's ``relay.frontend.from_tflite``).

    ``model`` is a ``tflite.Model`` (``tflite.Model.GetRootAsModel(buf, 0)``), or the bytes
    or path of a ``.tflite`` file. ``shape_dict`` / ``dtype_dict`` map input tensor names
    to shapes / dtypes (default: the model's). Weights are constants of the module, so
    ``params`` is empty.

    >>> from_tflite(42)
    Traceback (most recent call last):
    ...
    relaykit.errors.FrontendError: from_tflite takes a tflite.Model \
(tflite.Model.GetRootAsModel(buf, 0)), the bytes of a .tflite file or its path, got int
    """
    model = root_model(model)
    if model.SubgraphsLength() < 1:
        raise FrontendError("the TFLite model has no subgraph")
    subgraph = model.Subgraphs(0)
    exp_tab = ExprTable()
    converter = op_converter(model, subgraph, exp_tab)
    shapes, dtypes = dict(shape_dict or {}), dict(dtype_dict or {})
    inputs = []
    for k in range(subgraph.InputsLength()):
        t = converter.tensor(int(subgraph.Inputs(k)))
        var = _input_var(t, shapes, dtypes)
        exp_tab.set_expr(t.index, var)
        inputs.append(var)
    unknown = sorted(set(shapes) - {v.name_hint for v in inputs})
    if unknown:
        names = [v.name_hint for v in inputs]
        raise FrontendError(
            f"shape_dict names {unknown}, which are not inputs of the TFLite model; its "
            f"inputs are {names}"
        )
    converter.convert_op_to_relay()
    outs = [
        converter.get_expr(converter.tensor(int(subgraph.Outputs(k))))
        for k in range(subgraph.OutputsLength())
    ]
    body = outs[0] if len(outs) == 1 else Tuple(outs)
    mod = IRModule.from_expr(Function(inputs, body))
    return mod, {}
