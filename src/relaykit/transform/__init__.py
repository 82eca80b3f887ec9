"""Pass infrastructure and passes."""

from .bind import bind, bind_params_by_name
from .fold_constant import FoldConstant, fold_constant
from .infer_type import InferType, infer_module, infer_type
from .pass_infra import (
    FunctionPass,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    Sequential,
    function_pass,
    module_pass,
    pass_instrument,
)
from .simplify_inference import SimplifyInference, simplify_inference

__all__ = [
    "FoldConstant",
    "fold_constant",
    "SimplifyInference",
    "simplify_inference",
    "InferType",
    "infer_type",
    "infer_module",
    "bind",
    "bind_params_by_name",
    "FunctionPass",
    "ModulePass",
    "Pass",
    "PassContext",
    "PassInfo",
    "PassInstrument",
    "Sequential",
    "function_pass",
    "module_pass",
    "pass_instrument",
]

# The BYOC partitioning passes live in relaykit.byoc (which builds on this package);
# they are reachable here under Relay's names, as relay.transform.MergeComposite etc.
_BYOC_PASSES = ("MergeComposite", "AnnotateTarget", "MergeCompilerRegions", "PartitionGraph")


def __getattr__(name: str):  # noqa: ANN202 - module-level lazy attribute
    if name in _BYOC_PASSES:
        from .. import byoc

        return getattr(byoc, name)
    raise AttributeError(f"module 'relaykit.transform' has no attribute {name!r}")
