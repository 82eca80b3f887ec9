"""Pass infrastructure and passes."""

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
    "FunctionPass", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "Sequential", "function_pass", "module_pass", "pass_instrument",
]
