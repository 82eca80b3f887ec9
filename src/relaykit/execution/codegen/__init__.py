"""The codegen plug-in interface and the two reusable backend bases.

- :mod:`.registry`: ``register_codegen`` / ``relay.ext.<target>``, optimize hooks.
- :mod:`.c_source`: generated C compiled by the system C compiler (``CSourceCodegen``).
- :mod:`.json_graph`: a region serialised to JSON for a JSON runtime (``JSONSerializer``).
- :mod:`.names` and :mod:`.toolchain`: safe C names, finding and running the compiler.
"""

from .c_source import C_TYPES, CBuffer, CSourceCodegen, EmitContext, composite_calls
from .json_graph import JSONSerializer, json_attr_value, make_json_codegen
from .names import c_comment, c_identifier, c_string
from .registry import (
    CodegenInfo,
    get_codegen,
    list_codegens,
    partition_for_target,
    register_codegen,
    run_optimize_hook,
    scoped_codegens,
)
from .toolchain import DEFAULT_CFLAGS, compile_shared_library, find_c_compiler

__all__ = [
    "register_codegen",
    "get_codegen",
    "list_codegens",
    "scoped_codegens",
    "CodegenInfo",
    "run_optimize_hook",
    "partition_for_target",
    "CSourceCodegen",
    "CBuffer",
    "EmitContext",
    "C_TYPES",
    "composite_calls",
    "JSONSerializer",
    "json_attr_value",
    "make_json_codegen",
    "c_identifier",
    "c_comment",
    "c_string",
    "find_c_compiler",
    "compile_shared_library",
    "DEFAULT_CFLAGS",
]
