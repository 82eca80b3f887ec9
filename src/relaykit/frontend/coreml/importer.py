"""``from_coreml``: a Core ML NeuralNetwork model (plain, classifier or regressor)
as a Relay module, layer by layer.

The model's inputs become NCHW float32 variables (an image input of ``C x H x W``
is ``[1, C, H, W]``; give ``shape`` to choose another batch), its image
preprocessing (scale and per-channel bias, mean image) is applied to them, each
layer is converted by its entry in :data:`~.registry.CONVERTERS`, and the model's
outputs that layers produce are the function's result (a classifier's predicted
label, which Core ML adds after the network, is left out, as TVM does). Weights
become parameters, returned in ``params``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from relaykit import op
from relaykit.errors import FrontendError, MissingDependencyError, UnsupportedOpError
from relaykit.frontend.common import build_module, converting
from relaykit.ir.expr import Expr, TupleWrapper, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray

from .registry import CONVERTERS, LayerContext

__all__ = ["from_coreml", "require_coremltools"]

_NETWORKS = ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor")
# ImageFeatureType.ColorSpace: GRAYSCALE, RGB, BGR, GRAYSCALE_FLOAT16
_CHANNELS = {10: 1, 20: 3, 30: 3, 40: 1}
_RGB = 20
_EXACT_ARRAY_MAPPING = 1  # NeuralNetworkMultiArrayShapeMapping: arrays keep their rank


def require_coremltools() -> Any:
    """The ``coremltools`` module, or a clear error saying which extra to install."""
    try:
        import coremltools
    except ImportError:
        raise MissingDependencyError(
            "the Core ML frontend needs coremltools: pip install 'relaykit[coreml]' "
            "(coremltools==9.0)"
        ) from None
    return coremltools


def _spec(model: Any) -> Any:
    if isinstance(model, str):
        return require_coremltools().utils.load_spec(model)
    if hasattr(model, "get_spec"):  # coremltools.models.MLModel
        return model.get_spec()
    if hasattr(model, "WhichOneof") and hasattr(model, "description"):  # a Model spec
        return model
    raise FrontendError(
        f"from_coreml takes a coremltools.models.MLModel (or its spec, or a path to an "
        f".mlmodel file), not a {type(model).__name__}"
    )


def _input_shape(feature: Any, shape: Mapping[str, Sequence[int]] | None, exact: bool) -> list[int]:
    if shape is not None and feature.name in shape:
        return [int(d) for d in shape[feature.name]]
    kind = feature.type.WhichOneof("Type")
    if kind == "imageType":
        image = feature.type.imageType
        channels = _CHANNELS.get(int(image.colorSpace), 3)
        return [1, channels, int(image.height), int(image.width)]
    if kind == "multiArrayType":
        dims = [int(d) for d in feature.type.multiArrayType.shape]
        if exact and dims:  # the network's arrays have exactly the declared shape
            return dims
        if len(dims) == 1:  # [C]: Core ML's rank-5 blob [1, 1, C, 1, 1]
            return [1, dims[0], 1, 1]
        if len(dims) == 3:  # [C, H, W]
            return [1, *dims]
        if dims:
            return dims
    raise FrontendError(
        f"the Core ML input {feature.name!r} ({kind}) has no static shape in the model: "
        f"give it in shape, e.g. from_coreml(model, {{{feature.name!r}: (1, 3, 224, 224)}})"
    )


def _scaler(ctx: LayerContext, scaler: Any, x: Expr, color_space: int) -> Expr:
    """``x * channelScale + bias``, the bias per channel in the image's channel order."""
    channels = ctx.shape(x)[1]
    if channels == 1:
        bias = [scaler.grayBias]
    elif color_space == _RGB:
        bias = [scaler.redBias, scaler.greenBias, scaler.blueBias]
    else:  # BGR, as TVM reads every three-channel image
        bias = [scaler.blueBias, scaler.greenBias, scaler.redBias]
    scaled = op.multiply(x, ctx.scalar(scaler.channelScale))
    return op.add(scaled, ctx.param("bias", np.asarray(bias), [len(bias), 1, 1]))


def _preprocess(ctx: LayerContext, network: Any, spec: Any, values: dict[str, Expr]) -> None:
    inputs = list(spec.description.input)
    for step in network.preprocessing:
        kind = step.WhichOneof("preprocessor")
        targets = [f for f in inputs if f.name == step.featureName or not step.featureName]
        if step.featureName and not targets:
            raise FrontendError(
                f"Core ML preprocessing names the input {step.featureName!r}, which the "
                f"model does not have (its inputs: {[f.name for f in inputs]})"
            )
        for feature in targets:
            ctx.layer, ctx.kind = f"{feature.name}_preprocess", kind or "preprocessing"
            x = values[feature.name]
            if kind == "scaler":
                space = int(feature.type.imageType.colorSpace)
                values[feature.name] = _scaler(ctx, step.scaler, x, space)
            elif kind == "meanImage":
                mean = np.asarray(step.meanImage.meanImage, dtype=np.float32)
                values[feature.name] = op.subtract(
                    x, ctx.param("mean", mean, list(ctx.shape(x)[1:]))
                )
            else:
                raise ctx.fail("this preprocessing is not supported")


def _set_outputs(ctx: LayerContext, layer: Any, result: Any, values: dict[str, Expr]) -> None:
    names = list(layer.output)
    if isinstance(result, TupleWrapper):
        result = [result[i] for i in range(len(result))]
    if not isinstance(result, list):
        result = [result]
    if len(result) != len(names):
        raise ctx.fail(f"it gives {len(result)} outputs, the layer names {len(names)}: {names}")
    values.update(zip(names, result, strict=True))


def _outputs(spec: Any, network_kind: str, values: dict[str, Expr]) -> list[Expr]:
    label = ""
    if network_kind == "neuralNetworkClassifier":
        label = spec.description.predictedFeatureName
    outs = []
    for feature in spec.description.output:
        if feature.name in values:
            outs.append(values[feature.name])
        elif feature.name != label:
            raise FrontendError(
                f"the Core ML model's output {feature.name!r} is not produced by any layer"
            )
    if not outs:
        raise FrontendError("no output of the Core ML model is produced by its layers")
    return outs


def _check_supported(layers: Any) -> None:
    """One :class:`UnsupportedOpError` listing every layer kind no converter takes."""
    found: dict[str, tuple[int, str]] = {}
    for layer in layers:
        kind = layer.WhichOneof("layer") or "(empty)"
        if kind not in CONVERTERS:
            count, first = found.get(kind, (0, repr(layer.name)))
            found[kind] = (count + 1, first)
    if found:
        lines = [f"  {kind}: {n} layer{'s' if n > 1 else ''} (first: {first})"
                 for kind, (n, first) in sorted(found.items())]  # fmt: skip
        raise UnsupportedOpError(
            f"the Core ML model uses {len(found)} layer kind{'s' if len(found) > 1 else ''} "
            "relaykit cannot convert:\n" + "\n".join(lines) + "\nsupported layers: "
            "relaykit.frontend.coreml.supported_layers()",
            found,
        )


def from_coreml(
    model: Any, shape: Mapping[str, Sequence[int]] | None = None
) -> tuple[IRModule, dict[str, NDArray]]:
    """See :func:`relaykit.frontend.coreml.from_coreml`."""
    spec = _spec(model)
    kind = spec.WhichOneof("Type")
    if kind not in _NETWORKS:
        raise FrontendError(
            f"from_coreml imports NeuralNetwork models ({', '.join(_NETWORKS)}); this "
            f"model is a {kind!r}. Convert the source model with coremltools' "
            "convert_to='neuralnetwork'"
        )
    network = getattr(spec, kind)
    _check_supported(network.layers)
    exact = network.arrayInputShapeMapping == _EXACT_ARRAY_MAPPING
    params: dict[str, np.ndarray] = {}
    param_vars: list[Var] = []
    ctx = LayerContext(params, param_vars)
    inputs = [
        Var(f.name, TensorType(tuple(_input_shape(f, shape, exact)), "float32"))
        for f in spec.description.input
    ]
    values: dict[str, Expr] = {v.name_hint: v for v in inputs}
    _preprocess(ctx, network, spec, values)
    for layer in network.layers:
        ctx.layer, ctx.kind = layer.name, layer.WhichOneof("layer")
        missing = [name for name in layer.input if name not in values]
        if missing:
            raise ctx.fail(f"its inputs {missing} are produced by no earlier layer or input")
        with converting(layer, lambda lay: f"Core ML layer {lay.name!r} ({ctx.kind})"):
            args = [values[name] for name in layer.input]
            result = CONVERTERS[ctx.kind](ctx, getattr(layer, ctx.kind), args)
            _set_outputs(ctx, layer, result, values)
    outs = _outputs(spec, kind, values)
    mod = build_module(outs[0] if len(outs) == 1 else outs, inputs, param_vars, "Core ML model")
    used = {v.name_hint for v in mod["main"].params}
    return mod, {name: NDArray(arr) for name, arr in params.items() if name in used}
