"""The ``jsonref`` codegen: a partitioned function -> JSON graph -> :class:`JSONRefRuntime`.

Composite nodes list their inputs as (data, weight, bias), whatever order the
composite function's parameters are in.
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import CodegenError
from relaykit.execution.codegen.c_source import composite_calls
from relaykit.execution.codegen.json_graph import JSONSerializer, make_json_codegen
from relaykit.ir.expr import Call, Function

from .runtime import JSONRefRuntime

__all__ = ["JSONRefSerializer", "codegen"]


class JSONRefSerializer(JSONSerializer):
    def kernel_inputs(self, call: Call, args: list[Any]) -> list[list[int]]:
        fn = call.op
        if not isinstance(fn, Function):
            return super().kernel_inputs(call, args)
        inner = composite_calls(call)
        main = inner.get("nn.conv2d") or inner.get("nn.dense")
        bias = inner.get("nn.bias_add")
        if main is None or bias is None:
            raise CodegenError(f"jsonref has no kernel for composite {fn.attrs.get('Composite')}")
        order = [main.args[0], main.args[1], bias.args[1]]
        out = []
        for e in order:
            if e not in fn.params:
                raise CodegenError(
                    "jsonref composites take their data, weight and bias as arguments; "
                    f"{fn.attrs.get('Composite')} embeds one"
                )
            out.append(args[fn.params.index(e)])
        return out


codegen = make_json_codegen(JSONRefRuntime, JSONRefSerializer())
