"""``partition_for_dnnl``: the whole partitioning pipeline for oneDNN, as TVM's.

The steps, those of :func:`relaykit.byoc.partition_for` for the ``dnnl`` record, each
run once: bind ``params`` into ``main``; the record's optimize hook, the
pre-partitioning optimisations
(:func:`optimize_for_dnnl`: type inference, ``SimplifyInference``,
``FoldConstant``, and ``FoldScaleAxis`` when relaykit has it, then
:class:`MaterializeWeightFills`: a constant fill that is a layer's weight becomes
a constant of any size, as oneDNN prepares weights once anyway); then
``MergeComposite`` with the dnnl pattern table, ``AnnotateTarget(["dnnl"])``,
``MergeCompilerRegions`` and ``PartitionGraph``.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 8))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
>>> sorted(gv.name_hint for gv in partition_for_dnnl(mod).get_global_vars())
['main', 'tvmgen_default_dnnl_main_0']
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from relaykit import transform
from relaykit.backends import backend_registry
from relaykit.backends.dnnl.run.library import find_onednn
from relaykit.byoc import configure_target, partition_for
from relaykit.ir.expr import Call, Constant, Expr, Function, const
from relaykit.ir.functor import rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.gather_quantized import GatherBeforeDequantize
from relaykit.transform.pass_infra import FunctionPass, Pass, PassContext, Sequential

from .dynamic import GroupDynamicQuantization
from .rules import TARGET

__all__ = [
    "partition_for_dnnl",
    "optimize_for_dnnl",
    "pre_partition_passes",
    "MaterializeWeightFills",
]

#: Operators whose second input is a weight the dnnl runtime prepares once at load.
_WEIGHTED = frozenset({"nn.dense", "nn.conv2d"})
_FILLS = {"zeros": 0.0, "ones": 1.0, "full": None}
#: Largest weight fill made a constant (bytes): beyond it the layer stays on the host.
MAX_WEIGHT_FILL_BYTES = 1 << 31


def _fill_value(expr: Expr) -> np.ndarray | None:
    """The tensor a ``zeros``/``ones``/``full(constant)`` call with a static shape makes."""
    if type(expr) is not Call or type(expr.op) is not Op or expr.op.name not in _FILLS:
        return None
    shape = tuple(int(d) for d in expr.attrs.shape)
    dtype = str(expr.attrs.dtype) or "float32"
    if math.prod(shape) * np.dtype(dtype).itemsize > MAX_WEIGHT_FILL_BYTES:
        return None
    value: Any = _FILLS[expr.op.name]
    if value is None:
        if not expr.args or type(expr.args[0]) is not Constant:
            return None
        value = expr.args[0].data.numpy()
    return np.full(shape, value, dtype=dtype)


def materialize_weight_fills(fn: Function) -> Function:
    """Replace fill calls (``full``/``zeros``/``ones``) that are the weight of a dense or
    convolution by the constant they make, however large (up to
    :data:`MAX_WEIGHT_FILL_BYTES`).

    ``FoldConstant`` keeps large fills as runtime operators (a few bytes of program
    should not make the compiler allocate gigabytes), but as a weight such a fill
    also keeps the layer off oneDNN, and the host fills it again on every run (VGG-19
    exported with ``ConstantOfShape`` weights: a 400 MB fill per inference). oneDNN
    prepares weights once at load anyway, as onnxruntime folds ``ConstantOfShape``
    into an initializer when it creates a session.
    """

    def post(new: Expr, old: Expr) -> Expr | None:
        if type(new) is not Call or type(new.op) is not Op or new.op.name not in _WEIGHTED:
            return None
        weight = _fill_value(new.args[1])
        if weight is None:
            return None
        return Call(new.op, [new.args[0], const(weight), *new.args[2:]], new.attrs, span=new.span)

    out = rewrite_post_order(fn, post)
    return out if isinstance(out, Function) else fn


class MaterializeWeightFills(FunctionPass):
    """:func:`materialize_weight_fills` on every function (part of :func:`pre_partition_passes`)."""

    def __init__(self) -> None:
        super().__init__(self._transform, opt_level=0, name="MaterializeWeightFills")

    @staticmethod
    def _transform(fn: Function, mod: IRModule, ctx: PassContext) -> Function:
        return materialize_weight_fills(fn)


def pre_partition_passes() -> list[Pass]:
    """The optimisations run before partitioning (those this relaykit provides)."""
    # quantize / dequantize around float operators (ONNX QDQ, torch) become QNN operators
    # first, so quantized layers run as oneDNN int8 primitives
    # and quantized constants (a layer norm's dequantized gamma and beta, the quantized
    # scalars of GELU) fold to constants, so the float patterns see them
    passes: list[Pass] = [
        transform.InferType(),
        transform.FakeQuantizationToInteger(),
        # a quantized embedding table is gathered before it is dequantized: otherwise
        # the whole table (too large to fold) is dequantized on every run
        GatherBeforeDequantize(),
        transform.InferType(),
        transform.FoldConstant(fold_qnn=True),
    ]
    for name in ("SimplifyInference", "FoldConstant", "FoldScaleAxis", "FoldConstant"):
        cls = getattr(transform, name, None)
        if cls is not None:
            passes.append(cls())
    passes += [transform.InferType(), MaterializeWeightFills(), transform.InferType()]
    # dynamic quantization (scales computed at run time) as composites the codegen
    # lowers to a range step and int8 matmuls reading that scale and zero point
    passes += [GroupDynamicQuantization(), transform.InferType()]
    return passes


def optimize_for_dnnl(
    mod: IRModule | Function, params: Mapping[str, Any] | None = None
) -> IRModule:
    """Bind ``params`` and run :func:`pre_partition_passes` (the codegen's optimize hook)."""
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if params:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    return Sequential(pre_partition_passes(), name="OptimizeForDnnl")(mod)


def partition_for_dnnl(
    mod: IRModule | Function,
    params: Mapping[str, Any] | None = None,
    alter_layout: bool = True,
    prune_subgraphs: bool = False,
    *,
    pin: Any = None,
    mod_name: str = "default",
) -> IRModule:
    """Partition ``mod`` for oneDNN (TVM's ``relay.op.contrib.dnnl.partition_for_dnnl``).

    ``params`` are bound first, so weights become constants the regions embed.
    ``alter_layout`` is accepted for TVM compatibility and has no effect: oneDNN
    chooses blocked layouts itself, inside each region. ``prune_subgraphs``
    returns regions without a convolution or dense layer to the host (TVM's
    ``prune_dnnl_subgraphs``). ``pin`` is as for ``AnnotateTarget`` (force
    operators to the host or to dnnl). Without oneDNN installed it raises
    :class:`~.run.library.DnnlNotFoundError`, which names the extra to install.
    """
    find_onednn()  # choosing dnnl without oneDNN installed fails here, saying what to install
    with backend_registry.scoped():  # prune_subgraphs holds for this call only
        if prune_subgraphs:
            configure_target(TARGET, min_region_macs=1)
        # the generic pipeline: the record's optimize hook (optimize_for_dnnl), then
        # MergeComposite with its pattern table and the three BYOC passes, each once
        return partition_for(mod, TARGET, params=params, pin=pin, mod_name=mod_name)
