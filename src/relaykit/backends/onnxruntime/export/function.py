"""A Relay function -> an ONNX model (TVM's ``contrib/target/onnx``, rebuilt).

Parameters become graph inputs, constants initializers, every call one or a few
nodes (:mod:`.converters`); composite calls are exported as their bodies; each
result (a tuple's fields: several) reaches its graph output ``out<i>`` through an
``Identity`` node, so an output is never also an input or an initializer.

>>> import numpy as np
>>> from relaykit import relay
>>> from relaykit.transform import InferType
>>> import relaykit as tvm
>>> x = relay.var("x", shape=(2, 3))
>>> mod = InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x))))
>>> model = function_to_onnx(mod["main"])
>>> [n.op_type for n in model.graph.node]
['Relu', 'Identity']
"""

from __future__ import annotations

from typing import Any

from relaykit.errors import CodegenError
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from relaykit.ir.functor import post_order
from relaykit.ir.op import Op
from relaykit.ir.types import TensorType, TupleType

from .builder import OPSET, GraphBuilder, onnx_dtype
from .converters import CONVERTERS

__all__ = ["function_to_onnx", "value_info"]


def value_info(name: str, ty: Any) -> Any:
    """An ONNX value info for a static tensor type."""
    from onnx import helper

    if not isinstance(ty, TensorType):
        raise CodegenError(f"{name} has type {ty}; onnxruntime regions take tensors")
    return helper.make_tensor_value_info(name, onnx_dtype(ty.dtype), [int(d) for d in ty.shape])


def _flatten(values: Any) -> list[str]:
    return list(values) if isinstance(values, list) else [values]


def _emit(b: GraphBuilder, body: Expr, env: dict[Expr, Any]) -> Any:
    """Convert ``body`` under ``env`` (a Var or node -> ONNX name, or list of names for
    tuples); returns the names of ``body``."""
    for node in post_order(body, skip=lambda n: isinstance(n, Function)):
        if node in env:
            continue
        if isinstance(node, Var):
            raise CodegenError(f"free variable {node.name_hint} in an onnxruntime region")
        if isinstance(node, Constant):
            env[node] = b.const(node.data.numpy(), hint="w")
        elif isinstance(node, Tuple):
            env[node] = [n for f in node.fields for n in _flatten(env[f])]
        elif isinstance(node, TupleGetItem):
            env[node] = env[node.tuple_value][node.index]
        elif isinstance(node, Call):
            args = [env[a] for a in node.args]
            if isinstance(node.op, Function):
                inner: dict[Expr, Any] = dict(zip(node.op.params, args, strict=True))
                env[node] = _emit(b, node.op.body, inner)
                continue
            name = getattr(node.op, "name", None)
            entry = CONVERTERS.get(str(name))
            if entry is None:
                raise CodegenError(f"onnxruntime has no converter for operator {name}")
            convert, check = entry
            verdict = check(node)
            if verdict is not True:
                raise CodegenError(f"onnxruntime cannot run {name}: {verdict}")
            # a tuple argument (concatenate's) passes its fields
            ins = [n for a in args for n in (a if isinstance(a, list) else [a])]
            outs = convert(b, node, ins)
            env[node] = outs if isinstance(node.checked_type, TupleType) else outs[0]
        elif isinstance(node, (Function, Op)):
            continue  # an operator handle, or a composite body converted at its call
        else:
            raise CodegenError(f"onnxruntime regions cannot hold {type(node).__name__} nodes")
    return env[body]


def function_to_onnx(func: Function, name: str = "region") -> Any:
    """The ONNX model (an ``onnx.ModelProto``) computing ``func`` (typed, static shapes)."""
    from onnx import checker, helper

    b = GraphBuilder()
    env: dict[Expr, Any] = {}
    inputs = []
    for i, p in enumerate(func.params):
        env[p] = f"in{i}"
        inputs.append(value_info(f"in{i}", p.checked_type))
    result = _flatten(_emit(b, func.body, env))
    ret = func.body.checked_type
    out_types = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    outputs = []
    for i, (src, ty) in enumerate(zip(result, out_types, strict=True)):
        b.nodes.append(helper.make_node("Identity", [src], [f"out{i}"]))
        outputs.append(value_info(f"out{i}", ty))
    graph = helper.make_graph(b.nodes, name, inputs, outputs, b.initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="relaykit"
    )
    model.ir_version = 8
    checker.check_model(model)
    return model
