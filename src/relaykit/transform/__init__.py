"""Pass infrastructure and passes."""

from .anf import ToANormalForm, ToGraphNormalForm, to_a_normal_form, to_graph_normal_form
from .basic_block import ToBasicBlockNormalForm, to_basic_block_normal_form
from .bind import bind, bind_params_by_name
from .call_graph import CallGraph
from .canonicalize_cast import CanonicalizeCast, canonicalize_cast
from .change_batch import ChangeBatch, change_batch
from .combine_parallel import CombineParallelBatchMatmul, combine_parallel_batch_matmul
from .combine_parallel_conv2d import CombineParallelConv2D, combine_parallel_conv2d
from .combine_parallel_dense import CombineParallelDense, combine_parallel_dense
from .compiler_functions import (
    InlineCompilerFunctionsBoundTo,
    MarkCompilerFunctionsAsExtern,
    OutlineCompilerFunctionsWithExistingGlobalSymbols,
)
from .dead_code import DeadCodeElimination, dead_code_elimination
from .defunctionalization import Defunctionalization
from .defuse_ops import DefuseOps, defuse_ops
from .device_map import recover_virtual_device_map
from .div_to_mul import DivToMul, div_to_mul
from .dynamic_to_static import DynamicToStatic, dynamic_to_static
from .eliminate_common_subexpr import EliminateCommonSubexpr, eliminate_common_subexpr
from .eta_expand import EtaExpand, eta_expand
from .fake_quantization import FakeQuantizationToInteger, fake_quantization_to_integer
from .fast_math import FastMath, fast_math
from .flatten_atrous_conv import FlattenAtrousConv, flatten_atrous_conv
from .flexible_shape import FlexibleShapeDispatch
from .fold_constant import FoldConstant, fold_constant
from .fold_explicit_padding import FoldExplicitPadding, fold_explicit_padding
from .fold_scale_axis import FoldScaleAxis, fold_scale_axis, forward_fold_scale_axis
from .gradient import gradient
from .infer_type import InferType, InferTypeLocal, infer_module, infer_type
from .inline import Inline
from .lambda_lift import LambdaLift, lambda_lift
from .layout import AlterOpLayout, ConvertLayout, LayoutConfig
from .lazy_gradient_init import LazyGradientInit, lazy_gradient_init
from .legalize import Legalize
from .manifest_lifetimes import ManifestLifetimes, manifest_lifetimes
from .partial_eval import PartialEvaluate, partial_evaluate
from .pass_infra import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    PrintIR,
    Sequential,
    function_pass,
    module_pass,
    pass_instrument,
)
from .pipeline import optimization_passes, optimization_pipeline, optimize
from .plan_devices import PlanDevices, plan_devices
from .remove_unused_functions import RemoveUnusedFunctions, remove_unused_functions
from .simplify_expr import SimplifyExpr, simplify_expr
from .simplify_inference import SimplifyInference, simplify_inference
from .split_args import SplitArgs, split_args
from .to_cps import to_cps, un_cps

__all__ = [
    "PlanDevices",
    "plan_devices",
    "recover_virtual_device_map",
    "FakeQuantizationToInteger",
    "fake_quantization_to_integer",
    "DynamicToStatic",
    "dynamic_to_static",
    "FoldConstant",
    "fold_constant",
    "SimplifyInference",
    "SimplifyExpr",
    "simplify_expr",
    "simplify_inference",
    "InferType",
    "infer_type",
    "infer_module",
    "InferTypeLocal",
    "bind",
    "bind_params_by_name",
    "FunctionPass",
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "PrintIR",
    "Sequential",
    "function_pass",
    "module_pass",
    "pass_instrument",
    "EliminateCommonSubexpr",
    "eliminate_common_subexpr",
    "DeadCodeElimination",
    "dead_code_elimination",
    "FoldScaleAxis",
    "fold_scale_axis",
    "forward_fold_scale_axis",
    "gradient",
    "CombineParallelDense",
    "CanonicalizeCast",
    "canonicalize_cast",
    "CombineParallelBatchMatmul",
    "combine_parallel_dense",
    "combine_parallel_batch_matmul",
    "ToANormalForm",
    "ToBasicBlockNormalForm",
    "to_basic_block_normal_form",
    "ToGraphNormalForm",
    "to_a_normal_form",
    "to_graph_normal_form",
    "Inline",
    "Legalize",
    "ConvertLayout",
    "LayoutConfig",
    "AlterOpLayout",
    "optimization_passes",
    "optimization_pipeline",
    "optimize",
    "CallGraph",
    "CombineParallelConv2D",
    "combine_parallel_conv2d",
    "DefuseOps",
    "PartialEvaluate",
    "Defunctionalization",
    "to_cps",
    "un_cps",
    "partial_evaluate",
    "defuse_ops",
    "DivToMul",
    "ManifestLifetimes",
    "manifest_lifetimes",
    "InlineCompilerFunctionsBoundTo",
    "MarkCompilerFunctionsAsExtern",
    "OutlineCompilerFunctionsWithExistingGlobalSymbols",
    "SplitArgs",
    "split_args",
    "div_to_mul",
    "FlattenAtrousConv",
    "flatten_atrous_conv",
    "LazyGradientInit",
    "lazy_gradient_init",
    "FoldExplicitPadding",
    "fold_explicit_padding",
    "FastMath",
    "fast_math",
    "FlexibleShapeDispatch",
    "ChangeBatch",
    "change_batch",
    "EtaExpand",
    "eta_expand",
    "LambdaLift",
    "lambda_lift",
    "RemoveUnusedFunctions",
    "remove_unused_functions",
]
