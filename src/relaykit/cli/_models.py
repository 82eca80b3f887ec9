"""Models by name or file for the command line, operator breakdowns, and the demo target.

A MODEL argument is a built-in workload (``resnet18``, ``mobilenet``, ``vgg11``, ``mlp``
...), an ONNX file (``.onnx``) or a Relay text file (anything else). Files are checked
(regular, within the size limit) before they are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relaykit.backends import target_key
from relaykit.byoc.pipeline import Prepared, prepare
from relaykit.byoc.report.explain import Report
from relaykit.byoc.report.summary import Summary, summarize
from relaykit.byoc.report.visual import analyse
from relaykit.byoc.targets import configure_target, scoped_registries
from relaykit.cli._common import (
    DEFAULT_MAX_FILE_SIZE,
    Progress,
    check_file,
    read_text_file,
    targets_label,
)
from relaykit.cli._inputs import check_input_shapes, declared_inputs, shapes_example
from relaykit.dataflow_pattern import is_op, wildcard
from relaykit.errors import DynamicShapeError, UsageError
from relaykit.frontend import from_onnx
from relaykit.frontend.onnx.proto import load_model_proto
from relaykit.ir import Call, Function, IRModule, Op, post_order
from relaykit.ir.op import default_registry, register_op_attr
from relaykit.op.contrib import register_pattern_table
from relaykit.testing import mlp, mobilenet, resnet, vgg
from relaykit.testing.init import create_workload
from relaykit.text.parser import parse
from relaykit.transform.bind import bind_params_by_name

__all__ = [
    "DEMO_TARGET",
    "WORKLOADS",
    "op_breakdown",
    "format_breakdown",
    "main_breakdown",
    "demo_patterns",
    "register_demo_target",
    "load_model",
    "load_for_build",
    "PreparedModel",
    "prepare_model",
    "report_partition",
    "MODEL_HELP",
]

#: The target of the BYOC walkthrough; ``relaykit partition`` gives it the demo rules.
DEMO_TARGET = "byoc-target"

WORKLOADS = (
    "vgg11",
    "vgg13",
    "vgg16",
    "vgg19",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "mobilenet",
    "mlp",
)

MODEL_HELP = (
    f"a built-in workload ({', '.join(WORKLOADS)}), an ONNX file (.onnx) or a Relay text file"
)


# -- operator breakdowns --------------------------------------------------------------------
def _call_kind(op: Any, by_global: bool) -> str:
    if isinstance(op, Op):
        return str(op.name)
    if isinstance(op, Function) and "Composite" in op.attrs:
        return f"composite {op.attrs['Composite']}"
    if by_global and hasattr(op, "name_hint"):
        return f"@{op.name_hint}"
    return f"call {type(op).__name__}"


def op_breakdown(func: Function | IRModule) -> Counter[str]:
    """How many calls of each operator (or of each called function kind) ``func`` holds."""
    roots = [f for _, f in func.items()] if isinstance(func, IRModule) else [func]
    counts: Counter[str] = Counter()
    for root in roots:
        for node in post_order(root):
            if isinstance(node, Call):
                counts[_call_kind(node.op, by_global=False)] += 1
    return counts


def main_breakdown(mod: IRModule) -> Counter[str]:
    """The breakdown of ``main``, naming calls of globals by name as the walkthrough does."""
    counts: Counter[str] = Counter()
    for node in post_order(mod["main"]):
        if isinstance(node, Call):
            counts[_call_kind(node.op, by_global=True)] += 1
    return counts


def format_breakdown(counts: Counter[str], indent: str = "  ") -> str:
    total = sum(counts.values())
    width = max((len(k) for k in counts), default=10)
    lines = [f"{indent}{name:<{width}}  {n:>5}" for name, n in counts.most_common()]
    lines.append(f"{indent}{'total':<{width}}  {total:>5}")
    return "\n".join(lines)


# -- the demo target ------------------------------------------------------------------------
def demo_patterns() -> list[tuple[str, Any]]:
    """The walkthrough's conv2d(+bias_add)+relu patterns for ``byoc-target``."""

    def make_pattern(with_bias: bool = True) -> Any:
        data, weight, bias = wildcard(), wildcard(), wildcard()
        conv = is_op("nn.conv2d")(data, weight)
        conv_out = is_op("nn.bias_add")(conv, bias) if with_bias else conv
        return is_op("nn.relu")(conv_out)

    return [
        (f"{DEMO_TARGET}.conv2d_relu_with_bias", make_pattern(with_bias=True)),
        (f"{DEMO_TARGET}.conv2d_relu_wo_bias", make_pattern(with_bias=False)),
    ]


def register_demo_target() -> None:
    """Register the walkthrough's rules for ``byoc-target``: ``nn.dense`` and the
    conv2d(+bias_add)+relu pattern table. Use inside ``scoped_registries()``."""
    if default_registry.get_attr("nn.dense", target_key(DEMO_TARGET)) is None:
        register_op_attr("nn.dense", target_key(DEMO_TARGET), lambda expr: True)
    register_pattern_table(DEMO_TARGET, demo_patterns)


# -- models ---------------------------------------------------------------------------------
def _workload(name: str, batch: int, image_size: int) -> Function | None:
    key = name.lower().replace("-", "").replace("_", "")
    shape = (3, image_size, image_size)
    if key.startswith("vgg") and key[3:].isdigit():
        return vgg.get_net(batch, shape, 1000, "float32", num_layers=int(key[3:]))
    if key.startswith("resnet") and key[6:].isdigit():
        return resnet.get_net(batch, 1000, num_layers=int(key[6:]), image_shape=shape)
    if key == "mobilenet":
        return mobilenet.mobile_net(1000, (batch, *shape))
    if key == "mlp":
        return mlp.get_net(batch)
    return None


def _model_path(name: str, limit: int) -> Path:
    path = Path(name)
    looks_like_a_file = path.suffix != "" or len(path.parts) > 1
    if looks_like_a_file and not path.exists() and not path.is_symlink():
        raise UsageError(f"model file {name!r} does not exist")
    if not path.exists() and not path.is_symlink():
        raise UsageError(
            f"unknown model {name!r}: give a built-in workload ({', '.join(WORKLOADS)}), "
            "an ONNX file or the path of a Relay text file"
        )
    return check_file(name, "model file", limit)


_WORKLOAD_SHAPES = (
    "--input-shapes applies to ONNX models; the built-in workload {name} is sized with "
    "--batch and --image-size"
)

_TEXT_SHAPES = "--input-shapes applies to ONNX models; a Relay text file has its types"


def _import_onnx(
    path: Path, shapes: Mapping[str, Any] | None, freeze: bool
) -> tuple[IRModule, Any]:
    """Import an ONNX file with ``--input-shapes`` checked against its inputs."""
    proto = load_model_proto(str(path))
    inputs = declared_inputs(proto)
    check_input_shapes(inputs, shapes or {})
    try:
        return from_onnx(proto, shape=shapes, freeze_params=freeze, dynamic=False)
    except DynamicShapeError as err:
        example = shapes_example([i for i in inputs if i.name not in (shapes or {})])
        if not example:  # every input is static: an operator makes the dynamic shape
            raise UsageError(
                f"{err}. The model's inputs all have static shapes ({', '.join(map(str, inputs))}"
                "); relaykit compiles models whose shapes are known before they run"
            ) from None
        raise UsageError(
            f"{err}. On the command line, give static shapes with --input-shapes, e.g. "
            f"--input-shapes {example}"
        ) from None


def _parse_text(path: Path, limit: int) -> IRModule:
    text = read_text_file(path, "model file", limit)
    parsed = parse(text, source_name=str(path))
    return parsed if isinstance(parsed, IRModule) else IRModule.from_expr(parsed)


def load_model(
    name: str,
    batch: int = 1,
    image_size: int = 224,
    *,
    shapes: Mapping[str, Any] | None = None,
    limit: int = DEFAULT_MAX_FILE_SIZE,
) -> tuple[IRModule, set[str]]:
    """A built-in workload by name, an ONNX file or a text-format file; and the names of
    its weights (for workloads and text files, every input of ``main`` but the first)."""
    net = _workload(name, batch, image_size)
    if net is not None and shapes:
        raise UsageError(_WORKLOAD_SHAPES.format(name=name))
    if net is None:
        path = _model_path(name, limit)
        if path.suffix.lower() == ".onnx":
            onnx_mod, params = _import_onnx(path, shapes, freeze=False)
            return onnx_mod, set(params)
        if shapes:
            raise UsageError(_TEXT_SHAPES)
        mod = _parse_text(path, limit)
        return mod, {p.name_hint for p in mod["main"].params[1:]}
    mod = IRModule.from_expr(net)
    return mod, {p.name_hint for p in net.params[1:]}


def load_for_build(
    name: str,
    batch: int = 1,
    image_size: int = 224,
    *,
    shapes: Mapping[str, Any] | None = None,
    limit: int = DEFAULT_MAX_FILE_SIZE,
    seed: int = 0,
) -> tuple[IRModule, str]:
    """The model ready to build, its weights bound as constants, and what it is.

    A workload's weights are generated (seeded); an ONNX file's initializers become
    constants; every parameter of a Relay text file stays an input of the artifact.
    """
    net = _workload(name, batch, image_size)
    if net is not None and shapes:
        raise UsageError(_WORKLOAD_SHAPES.format(name=name))
    if net is not None:
        mod, params = create_workload(IRModule.from_expr(net), seed=seed)
        weights = {p.name_hint for p in net.params[1:]}
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], {k: params[k] for k in weights})
        return mod, f"workload {name} (batch {batch}, generated weights)"
    path = _model_path(name, limit)
    if path.suffix.lower() == ".onnx":
        mod, _ = _import_onnx(path, shapes, freeze=True)
        return mod, f"ONNX model {path.name}"
    if shapes:
        raise UsageError(_TEXT_SHAPES)
    return _parse_text(path, limit), f"Relay text {path.name}"


@dataclass(frozen=True)
class PreparedModel:
    """A model through the pipeline every command runs (:func:`prepare_model`)."""

    #: The bound, optimised and partitioned module, and the options it was made with.
    prepared: Prepared
    #: What the model is, for messages (``ONNX model net.onnx``).
    what: str
    #: The inputs of ``main`` that hold weights (a Relay text file's parameters but the
    #: first, which stay inputs of the artifact): their bytes count as region parameters.
    weights: frozenset[str]


def prepare_model(
    name: str,
    targets: list[str],
    *,
    batch: int = 1,
    image_size: int = 224,
    shapes: Mapping[str, Any] | None = None,
    limit: int = DEFAULT_MAX_FILE_SIZE,
    pins: Any = None,
    min_ops: int | None = None,
    min_macs: int | None = None,
    progress: Progress | None = None,
) -> PreparedModel:
    """Import → bind the weights → optimise → partition: the one pipeline of ``explain``,
    ``partition``, ``compile``, ``bench`` and ``demo``, so what they show is what is built.

    The weights are bound as a build binds them (:func:`load_for_build`): generated for a
    workload, the initializers of an ONNX file; a Relay text file keeps its parameters.
    """
    progress = progress or Progress(enabled=False)
    with progress.step(f"import {name}"):
        mod, what = load_for_build(name, batch, image_size, shapes=shapes, limit=limit)
    is_text = _workload(name, 1, 32) is None and Path(name).suffix.lower() != ".onnx"
    weights = frozenset(p.name_hint for p in mod["main"].params[1:]) if is_text else frozenset()
    with progress.step(f"partition for {targets_label(targets)}"):
        prepared = prepare(mod, targets, pins=pins, min_ops=min_ops, min_macs=min_macs)
    return PreparedModel(prepared, what, weights)


def report_partition(
    model: PreparedModel, title: str, *, explain: bool = True
) -> tuple[Report | None, Summary]:
    """The placement report (when ``explain``) and the summary of ``model``'s partition:
    the same module, targets, pins and minimum region sizes as the build, so the regions
    they list are the ones the build compiles."""
    p = model.prepared
    if explain:
        return analyse(
            p.optimized,
            p.targets,
            params=model.weights,
            pins=p.pins,
            min_ops=p.min_ops,
            min_macs=p.min_macs,
            patterns=list(p.patterns),
            model=title,
        )
    with scoped_registries():
        if p.min_ops is not None or p.min_macs is not None:
            for t in p.targets:
                configure_target(t, min_region_ops=p.min_ops, min_region_macs=p.min_macs)
        summary = summarize(
            p.optimized,
            p.targets,
            patterns=list(p.patterns),
            pin=p.pins,
            param_names=model.weights,
            model=title,
        )
    return None, summary
