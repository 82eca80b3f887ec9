"""``get_calibration_data(mod, data)``: the inputs and outputs of every function that
``main`` calls, on one set of inputs (TVM's ``relay.analysis.get_calibration_data``),
for calibrating the regions handed to an external compiler.

The regions are run on the host (their ``Compiler`` attributes dropped): the result
is what their inputs and outputs are, whatever backend would run them.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> a = relay.var("a", shape=(2,))
>>> mod = tvm.IRModule()
>>> g = relay.GlobalVar("g")
>>> mod[g] = relay.Function([a], a * relay.const(2.0)).with_attr("Compiler", "x")
>>> x = relay.var("x", shape=(2,))
>>> mod["main"] = relay.Function([x], relay.Call(g, [x]))
>>> data = get_calibration_data(mod, {"x": np.array([1.0, 2.0], "float32")})
>>> data[g]["outputs"][0].numpy().tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.execution.build_module import build_graph
from relaykit.ir.expr import Call, Expr, Function, GlobalVar, Tuple, TupleGetItem
from relaykit.ir.functor import post_order
from relaykit.ir.module import IRModule
from relaykit.ir.types import TupleType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.infer_type import InferType

__all__ = ["get_calibration_data"]

_DROPPED = ("Compiler", "global_symbol", "Primitive", "Inline")


def _outputs(call: Call) -> list[Expr]:
    ty = call.checked_type
    if isinstance(ty, TupleType):
        return [TupleGetItem(call, i) for i in range(len(ty.fields))]
    return [call]


def get_calibration_data(
    mod: IRModule, data: Mapping[str, Any]
) -> dict[GlobalVar, dict[str, list[NDArray]]]:
    """``{gv: {"inputs": [...], "outputs": [...]}}`` for each function ``main`` calls."""
    if not isinstance(mod, IRModule) or "main" not in [g.name_hint for g in mod.get_global_vars()]:
        raise ArgumentError("get_calibration_data takes an IRModule with a 'main' function")
    mod = InferType()(mod)
    calls: list[tuple[GlobalVar, Call]] = [
        (n.op, n)
        for n in post_order(mod["main"].body)
        if type(n) is Call and type(n.op) is GlobalVar
    ]
    fields: list[Expr] = []
    layout: list[tuple[GlobalVar, int, int]] = []
    for gv, call in calls:
        outs = _outputs(call)
        layout.append((gv, len(call.args), len(outs)))
        fields.extend(call.args)
        fields.extend(outs)
    main = mod["main"]
    probe = IRModule()
    for gv, fn in mod.functions.items():
        if gv.name_hint != "main" and isinstance(fn, Function):
            probe[gv] = fn.without_attrs(*[k for k in _DROPPED if k in fn.attrs])
    probe["main"] = Function(list(main.params), Tuple(fields))
    runtime = build_graph(probe, target="llvm").create()
    runtime.set_input(**dict(data))
    runtime.run()
    out: dict[GlobalVar, dict[str, list[NDArray]]] = {}
    k = 0
    for gv, n_in, n_out in layout:
        values = [runtime.get_output(k + i) for i in range(n_in + n_out)]
        k += n_in + n_out
        if gv in out:
            raise ArgumentError(
                f"get_calibration_data: main calls {gv.name_hint} more than once; "
                "each external function must be called once"
            )
        out[gv] = {"inputs": values[:n_in], "outputs": values[n_in:]}
    return out
