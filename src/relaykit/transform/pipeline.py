"""The standard optimisation pipeline that ``relay.build`` runs at ``opt_level=3``.

Each pass keeps its own ``opt_level``; the ``PassContext`` decides which run:
at 3, inference simplification, atrous convolutions written as
``space_to_batch_nd -> conv2d -> batch_to_space_nd`` made dilated ones (at every
opt_level, as in TVM), dynamic operators with constant shape inputs made
static (``DynamicToStatic``) and constant folding, batch-norm scales folded
into convolution weights, common subexpressions shared and dead bindings
removed; the parallel-matmul combiners and FastMath (opt_level 4, as in TVM) run when
the context asks for 4 (or requires them by name).

>>> from relaykit import relay
>>> from relaykit.ir import IRModule
>>> x = relay.var("x", shape=(2,))
>>> f = relay.Function([x], relay.add(relay.exp(x), relay.exp(x)))
>>> out = optimize(IRModule.from_expr(f))["main"].body
>>> out.args[0] is out.args[1]
True
"""

from __future__ import annotations

from relaykit.ir.module import IRModule

from .combine_parallel import CombineParallelBatchMatmul
from .combine_parallel_dense import CombineParallelDense
from .dead_code import DeadCodeElimination
from .dynamic_to_static import DynamicToStatic
from .eliminate_common_subexpr import EliminateCommonSubexpr
from .fast_math import FastMath
from .flatten_atrous_conv import FlattenAtrousConv
from .fold_constant import FoldConstant
from .fold_scale_axis import FoldScaleAxis
from .infer_type import InferType
from .pass_infra import Pass, PassContext, Sequential
from .simplify_inference import SimplifyInference

__all__ = ["optimization_passes", "optimization_pipeline", "optimize"]


def optimization_passes() -> list[Pass]:
    """The passes of the pipeline, in order (each filtered by its opt_level)."""
    return [
        InferType(),
        SimplifyInference(),
        FlattenAtrousConv(),
        DynamicToStatic(),
        FoldConstant(),
        FoldScaleAxis(),
        FoldConstant(),
        EliminateCommonSubexpr(),
        CombineParallelDense(min_num_branches=3, to_batch=False),
        CombineParallelBatchMatmul(min_num_branches=3),
        FastMath(),
        FoldConstant(),
        DeadCodeElimination(),
        InferType(),
    ]


def optimization_pipeline() -> Sequential:
    """The pipeline as one ``Sequential`` named ``"RelayOptimize"``; run it inside a
    ``PassContext(opt_level=3)`` (as ``relay.build`` does)."""
    return Sequential(optimization_passes(), opt_level=0, name="RelayOptimize")


def optimize(mod: IRModule, opt_level: int = 3) -> IRModule:
    """Run the pipeline on ``mod``; inside an active ``PassContext`` its settings
    apply, otherwise ``opt_level``."""
    if PassContext.is_entered():
        return optimization_pipeline()(mod)
    with PassContext(opt_level=opt_level):
        return optimization_pipeline()(mod)
