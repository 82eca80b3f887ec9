"""``from_keras``: a Keras 3 model (``keras`` or ``tf.keras``) as a Relay module.

The walk follows the model's own graph: a functional model's nodes from the inputs
to the outputs (a Sequential model is the functional model Keras keeps for it), each
node converted by the converter of its layer's class (:data:`.registry.LAYERS`) or,
for the ``keras.ops`` a functional model records (``x + y``), of its operation
(:data:`.registry.OPERATIONS`). A model used as a layer of another is walked in
place. Every layer the table lacks is reported at once, before anything is
converted.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from relaykit import op
from relaykit.errors import (
    ArgumentError,
    DynamicShapeError,
    FrontendError,
    RelayKitError,
    UnsupportedOpError,
)
from relaykit.ir.expr import Expr, Function, Tuple, TupleWrapper, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.infer_type import InferType

from .layout import lift_params, to_channels_first
from .registry import LAYERS, OPERATIONS, LayerContext, describe, require_keras

__all__ = ["from_keras"]

_LAYOUTS = ("NCHW", "NHWC", "NWC", "NDHWC", "NCDHW")
_HINTS = {
    "Lambda": "a Lambda layer holds Python code relaykit cannot read: write it with Keras "
    "layers (or keras.ops in a functional model)",
    "TFSMLayer": "a TFSMLayer wraps a TensorFlow SavedModel: import that with from_tensorflow",
}
_QUANTIZED_HINT = "convert the float model (before model.quantize(...))"


def from_keras(
    model: Any, shape: Mapping[str, Sequence[int]] | None = None, layout: str = "NCHW"
) -> tuple[IRModule, dict[str, NDArray]]:
    """Convert a Keras model (functional, Sequential, or nested) to Relay.

    ``shape`` maps input names (the ``InputLayer`` names) to shapes; missing inputs
    take the model's own shape with a batch of 1. ``layout="NCHW"`` (TVM's default)
    takes image inputs (rank 4 and 5) channels first and gives image outputs channels
    first, as TVM's ``from_keras`` does; ``"NHWC"`` keeps Keras's channels-last layout.
    Returns ``(mod, params)``: the weights are parameters of ``main``.

    >>> import keras
    >>> model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3)])
    >>> mod, params = from_keras(model, {"input_layer": (1, 3, 8, 8)})
    >>> mod["main"].params[0].checked_type.shape
    (1, 3, 8, 8)
    """
    keras = require_keras()
    if type(model).__module__.startswith(("tf_keras", "tensorflow.python.keras", "keras.engine")):
        raise ArgumentError(
            f"{type(model).__name__} is a Keras 2 model: relaykit reads Keras 3 models; save it "
            "(model.save('m.h5')) and load it with Keras 3 (keras.models.load_model)"
        )
    if not isinstance(model, keras.Model):
        raise ArgumentError(
            f"from_keras expects a keras.Model (functional or Sequential), got "
            f"{type(model).__name__}; wrap a layer with keras.Sequential([keras.Input(...), layer])"
        )
    if layout not in _LAYOUTS:
        raise ArgumentError(f"layout {layout!r} is not one of {', '.join(_LAYOUTS)}")
    if shape is not None and not isinstance(shape, Mapping):
        raise ArgumentError(
            f"shape must map input names to shapes, got {type(shape).__name__} {shape!r}"
        )
    graph = _graph(model)
    _check_supported(keras, graph)
    channels_first = layout in ("NCHW", "NCDHW")
    ctx = LayerContext()
    variables, exprs = _inputs(graph, dict(shape or {}), channels_first)
    outputs = _convert(keras, ctx, graph, exprs)
    results: list[Expr] = []
    for out in outputs:
        n = len(ctx.shape(out)) if channels_first else 0
        results.append(op.transpose(out, [0, n - 1, *range(1, n - 1)]) if n in (4, 5) else out)
    body = results[0] if len(results) == 1 else Tuple(results)
    mod = InferType()(IRModule.from_expr(Function(variables, body)))
    if channels_first:
        mod = to_channels_first(mod, ctx.weight_names)
    return lift_params(mod, ctx.weight_names)


def _graph(model: Any) -> Any:
    """The functional graph of ``model`` (a Sequential model's inner one)."""
    if type(model).__name__ == "Sequential":
        inner = getattr(model, "_functional", None)
        if inner is None:
            raise FrontendError(
                f"the Sequential model {model.name!r} has no input shape yet: start it with "
                "keras.Input(shape) or call model.build((None, ...)) before converting it"
            )
        return inner
    if not hasattr(model, "_nodes_by_depth"):
        raise FrontendError(
            f"the model {model.name!r} ({type(model).__name__}) is a subclassed keras.Model: its "
            "call() is Python code relaykit cannot read; build it as a functional or "
            "Sequential model"
        )
    return model


def _nodes(graph: Any) -> Iterator[Any]:
    """The graph's nodes, inputs first."""
    for depth in sorted(graph._nodes_by_depth, reverse=True):
        yield from graph._nodes_by_depth[depth]


def _check_supported(keras: Any, graph: Any) -> None:
    missing: dict[str, tuple[int, str]] = {}
    stack = [graph]
    while stack:
        for node in _nodes(stack.pop()):
            operation = node.operation
            name = type(operation).__name__
            if isinstance(operation, keras.Model):
                stack.append(_graph(operation))
                continue
            table = LAYERS if isinstance(operation, keras.layers.Layer) else OPERATIONS
            mode = getattr(operation, "quantization_mode", None)
            if name in table and mode is None:
                continue
            label = name if table is LAYERS else f"keras.ops {name}"
            if mode is not None:  # weights stored as int8/float8 with their scales
                label = f"{name} quantized to {mode}"
            count, first = missing.get(label, (0, operation.name))
            missing[label] = (count + 1, first)
    if not missing:
        return
    lines = []
    for label, (count, first) in sorted(missing.items()):
        hint = _QUANTIZED_HINT if " quantized to " in label else _HINTS.get(label)
        lines.append(
            f"  {label}: {count} layer{'s' if count > 1 else ''} (first: {first!r})"
            + (f" - {hint}" if hint else "")
        )
    raise UnsupportedOpError(
        f"the Keras model {graph.name!r} uses {len(missing)} layer type"
        f"{'s' if len(missing) > 1 else ''} relaykit cannot convert:\n"
        + "\n".join(lines)
        + "\nrewrite the model without them (relaykit.frontend.keras.supported_layers() "
        "lists what converts)",
        missing,
    )


def _inputs(
    graph: Any, shapes: dict[str, Sequence[int]], channels_first: bool
) -> tuple[list[Var], list[Expr]]:
    """One variable per model input (named after its InputLayer) and the channels-last
    expression the converters see for it."""
    tensors = list(graph.inputs)
    names = [t._keras_history.operation.name for t in tensors]
    unknown = [k for k in shapes if k not in names]
    unmatched = [i for i, n in enumerate(names) if n not in shapes]
    if unknown and len(unknown) == 1 and len(unmatched) == 1:
        # Keras 2 named the first input "input_1", Keras 3 "input_layer": one shape given
        # for the one input left takes the given name
        names[unmatched[0]] = unknown[0]
    elif unknown:
        raise ArgumentError(
            f"shape names {unknown}, which are not inputs of the model; its inputs are {names}"
        )
    variables: list[Var] = []
    exprs: list[Expr] = []
    for tensor, name in zip(tensors, names, strict=False):
        declared = tuple(tensor.shape)
        rank = len(declared)
        flip = channels_first and rank in (4, 5)
        if name in shapes:
            given = tuple(int(d) for d in shapes[name])
            if len(given) != rank:
                raise ArgumentError(
                    f"shape of input {name!r} is {list(given)}, of rank {len(given)}; the model's "
                    f"input has rank {rank} ({_show(declared)})"
                )
            dims = given
        else:
            if any(d is None for d in declared[1:]):
                raise DynamicShapeError(
                    f"input {name!r} has the unknown dimensions of {_show(declared)}: give its "
                    f"shape, e.g. from_keras(model, {{{name!r}: (1, ...)}})"
                )
            dims = tuple(1 if d is None else int(d) for d in declared)
            if flip:
                dims = (dims[0], dims[-1], *dims[1:-1])
        var = Var(name, TensorType(dims, str(tensor.dtype)))
        variables.append(var)
        exprs.append(op.transpose(var, [0, *range(2, rank), 1]) if flip else var)
    return variables, exprs


def _show(shape: Sequence[Any]) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


def _convert(keras: Any, ctx: LayerContext, graph: Any, inputs: list[Expr]) -> list[Expr]:
    """The expressions of ``graph``'s outputs given those of its inputs."""
    env: dict[int, Expr] = {}
    if len(inputs) != len(graph.inputs):
        raise FrontendError(
            f"model {graph.name!r} takes {len(graph.inputs)} inputs, it was given {len(inputs)}"
        )
    for tensor, expr in zip(graph.inputs, inputs, strict=False):
        env[id(tensor)] = expr
    for node in _nodes(graph):
        if node.is_input:
            continue
        operation = node.operation
        args = _substitute(keras, node.arguments.args, env)
        kwargs = {k: _substitute(keras, v, env) for k, v in node.arguments.kwargs.items()}
        if isinstance(operation, keras.Model):
            with _naming(operation):
                outs = _convert(keras, ctx, _graph(operation), _flatten(args))
        else:
            ctx.layer = operation
            _check_masks(operation, node, kwargs)
            with _naming(operation):
                if isinstance(operation, keras.layers.Layer):
                    result = LAYERS[type(operation).__name__](
                        ctx, operation, _flatten(args), kwargs
                    )
                else:
                    result = OPERATIONS[type(operation).__name__](
                        ctx, operation, list(args), kwargs
                    )
            outs = _flatten([result])
        if len(outs) != len(node.outputs):
            raise FrontendError(
                f"{describe(operation)}: converted to {len(outs)} outputs, Keras has "
                f"{len(node.outputs)}"
            )
        for tensor, expr in zip(node.outputs, outs, strict=False):
            env[id(tensor)] = expr
    missing = [t.name for t in graph.outputs if id(t) not in env]
    if missing:
        raise FrontendError(
            f"model {graph.name!r}: outputs {missing} are not reached from its inputs"
        )
    return [env[id(t)] for t in graph.outputs]


def _check_masks(layer: Any, node: Any, kwargs: dict[str, Any]) -> None:
    """Refuse a layer whose inputs carry Keras masks that the model does not record.

    Keras hands a layer the masks of its inputs (``mask_zero=True``, ``Masking``)
    implicitly; a functional model records them as call arguments only for some
    layers (a recurrent layer's ``mask=``). A layer that takes masks but whose masks
    went unrecorded would be converted as if unmasked."""
    call = getattr(layer, "call", None)
    try:
        params = set(inspect.signature(call).parameters) if call is not None else set()
    except (TypeError, ValueError):
        return
    takes = {p for p in params if p == "mask" or p in ("query_mask", "value_mask", "key_mask")}
    if not takes or any(kwargs.get(p) is not None for p in takes):
        return
    if any(getattr(t, "_keras_mask", None) is not None for t in node.input_tensors):
        raise FrontendError(
            f"{describe(layer)}: its inputs carry Keras masks (from mask_zero=True or "
            "Masking) that Keras passes to it implicitly and the model does not record; "
            "relaykit converts recorded masks only (recurrent layers, "
            "GlobalAveragePooling1D): pass the mask explicitly or drop it"
        )


def _substitute(keras: Any, value: Any, env: dict[int, Expr]) -> Any:
    """``value`` (a call argument: a tensor, a structure of them, or a Python value)
    with each Keras tensor replaced by its expression."""
    if isinstance(value, keras.KerasTensor):
        if id(value) not in env:
            raise FrontendError(f"the tensor {value.name!r} is used before it is computed")
        return env[id(value)]
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(keras, v, env) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(keras, v, env) for k, v in value.items()}
    return value


def _flatten(value: Any) -> list[Expr]:
    """The expressions in ``value`` (an expression or a nested list of them), in order."""
    if isinstance(value, TupleWrapper):
        return [value[i] for i in range(len(value))]
    if isinstance(value, Expr):
        return [value]
    if isinstance(value, (list, tuple)):
        return [e for v in value for e in _flatten(v)]
    if isinstance(value, dict):
        return [e for v in value.values() for e in _flatten(v)]
    return []


@contextmanager
def _naming(layer: Any) -> Iterator[None]:
    """Errors raised while ``layer`` is converted name it."""
    where = describe(layer)
    try:
        yield
    except UnsupportedOpError:
        raise
    except RelayKitError as err:
        if where in str(err):
            raise
        raise FrontendError(f"{where}: {err}") from err
    except Exception as err:  # a converter's own failure still names the layer
        raise FrontendError(
            f"{where}: its conversion failed ({type(err).__name__}: {err}); this is a bug in "
            "the converter or a case it does not handle: please report it with the model"
        ) from err
