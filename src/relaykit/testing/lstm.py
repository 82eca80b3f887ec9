"""An unrolled LSTM, as TVM's ``relay.testing.lstm``.

Each step calls its own cell function (``lstm_cell``) with the step's input
``data``, the running ``(h, c)`` state and weights ``i2h_<i>_weight``,
``i2h_<i>_bias``, ``h2h_<i>_weight``, ``h2h_<i>_bias``. Inside a cell every
intermediate is let-bound with its type (``i2h``, ``h2h``, ``gates``,
``slice_gates``, ``in_gate``, ``forget_gate``, ``in_transform``, ``out_gate``,
``next_c``, ``next_h``, ``ret``) and the cell returns ``(h, (h, c))``. The
network starts from zero states and returns the last step's ``h``.

>>> net = get_net(2, 4)
>>> [p.name_hint for p in net.params][:3]
['data', 'i2h_0_weight', 'i2h_0_bias']
"""

from __future__ import annotations

from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Expr, Function, Let, Tuple, TupleGetItem, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType, TupleType, Type
from relaykit.op.tensor import add, multiply, sigmoid, tanh, zeros
from relaykit.op.transform import split
from relaykit.runtime.ndarray import NDArray

from . import layers
from .init import create_workload

__all__ = ["lstm_cell", "get_net", "get_workload"]


class _Lets:
    """Collects ``let name: type = value;`` bindings and closes them around a body."""

    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []

    def let(self, name: str, ty: Type, value: Expr) -> Var:
        var = Var(name, ty)
        self.bindings.append((var, value))
        return var

    def close(self, body: Expr) -> Expr:
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        return body


def _types(num_hidden: int, batch_size: int, dtype: str) -> dict[str, Type]:
    hidden = TensorType((batch_size, num_hidden), dtype)
    state = TupleType([hidden, hidden])
    return {
        "hidden": hidden,
        "weight": TensorType((4 * num_hidden, num_hidden), dtype),
        "bias": TensorType((4 * num_hidden,), dtype),
        "dense": TensorType((batch_size, 4 * num_hidden), dtype),
        "slice": TupleType([hidden] * 4),
        "state": state,
        "cell": TupleType([hidden, state]),
    }


def lstm_cell(
    num_hidden: int, batch_size: int = 1, dtype: str = "float32", name: str = ""
) -> Function:
    """One LSTM step as a function of ``(inputs, states, i2h_weight, i2h_bias, h2h_weight,
    h2h_bias)`` returning ``(next_h, (next_h, next_c))``."""
    t = _types(num_hidden, batch_size, dtype)
    inputs = Var("inputs", t["hidden"])
    states = Var("states", t["state"])
    params = [
        inputs,
        states,
        Var("i2h_weight", t["weight"]),
        Var("i2h_bias", t["bias"]),
        Var("h2h_weight", t["weight"]),
        Var("h2h_bias", t["bias"]),
    ]
    b = _Lets()
    units = 4 * num_hidden
    i2h = b.let(
        "i2h",
        t["dense"],
        layers.dense_add_bias(inputs, params[2], params[3], units=units, name=f"{name}i2h"),
    )
    h2h = b.let(
        "h2h",
        t["dense"],
        layers.dense_add_bias(
            TupleGetItem(states, 0), params[4], params[5], units=units, name=f"{name}h2h"
        ),
    )
    gates = b.let("gates", t["dense"], add(i2h, h2h))
    sliced = b.let("slice_gates", t["slice"], split(gates, 4, axis=1).astuple())
    hidden = t["hidden"]
    in_gate = b.let("in_gate", hidden, sigmoid(TupleGetItem(sliced, 0)))
    forget_gate = b.let("forget_gate", hidden, sigmoid(TupleGetItem(sliced, 1)))
    in_transform = b.let("in_transform", hidden, tanh(TupleGetItem(sliced, 2)))
    out_gate = b.let("out_gate", hidden, sigmoid(TupleGetItem(sliced, 3)))
    next_c = b.let(
        "next_c",
        hidden,
        add(multiply(forget_gate, TupleGetItem(states, 1)), multiply(in_gate, in_transform)),
    )
    next_h = b.let("next_h", hidden, multiply(out_gate, tanh(next_c)))
    ret = b.let("ret", t["cell"], Tuple([next_h, Tuple([next_h, next_c])]))
    return Function(params, b.close(ret), t["cell"])


def get_net(
    iterations: int, num_hidden: int, batch_size: int = 1, dtype: str = "float32"
) -> Function:
    """``iterations`` unrolled LSTM steps, each with its own input and weights."""
    t = _types(num_hidden, batch_size, dtype)
    b = _Lets()
    zero = b.let("zeros", t["hidden"], zeros((batch_size, num_hidden), dtype))
    states: Expr = b.let("init_states", t["state"], Tuple([zero, zero]))
    out: Expr = zero
    for i in range(iterations):
        args = [
            Var("data", t["hidden"]),
            states,
            Var(f"i2h_{i}_weight", t["weight"]),
            Var(f"i2h_{i}_bias", t["bias"]),
            Var(f"h2h_{i}_weight", t["weight"]),
            Var(f"h2h_{i}_bias", t["bias"]),
        ]
        cell = lstm_cell(num_hidden, batch_size, dtype, f"lstm_{i}")
        call = b.let(f"call_{i}", t["cell"], Call(cell, args))
        out = b.let(f"out_{i}", t["hidden"], TupleGetItem(call, 0))
        states = b.let(f"states_{i}", t["state"], TupleGetItem(call, 1))
    body = b.close(out)
    return Function(free_vars(body), body, t["hidden"])


def get_workload(
    iterations: int, num_hidden: int, batch_size: int = 1, dtype: str = "float32"
) -> tuple[IRModule, dict[str, NDArray]]:
    """The unrolled LSTM module and its generated parameters (see :func:`create_workload`)."""
    net = get_net(iterations, num_hidden, batch_size, dtype)
    return create_workload(net)
