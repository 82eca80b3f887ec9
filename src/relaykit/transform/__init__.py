"""Pass infrastructure and passes."""

from .bind import bind, bind_params_by_name
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

__all__ = [
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
