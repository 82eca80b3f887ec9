"""``from_paddle``: a PaddlePaddle model (a ``paddle.jit.load`` layer or a static
program) to a Relay module and its parameters.

The program is read into one plain form (:mod:`.program`), then each op goes through
the converter table (:mod:`.registry`) in program order. Every op without a converter
is reported at once, before anything is converted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from relaykit.errors import FrontendError, MissingDependencyError, UnsupportedOpError
from relaykit.frontend.common import build_module, converting
from relaykit.ir.expr import Constant, Expr, TupleWrapper, Var, const
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import NDArray
from relaykit.transform.fold_constant import fold_constant

from . import (  # noqa: F401 - each registers its converters
    ops_activation,
    ops_math,
    ops_nn,
    ops_rnn,
    ops_tensor,
)
from .program import Graph, PaddleOp, read_layer, read_program
from .registry import CONVERTERS, OpContext

__all__ = ["from_paddle"]

# builtin ops of PIR that only regroup values
_GROUPING = ("builtin.combine", "builtin.split", "builtin.slice")


def _require_paddle() -> Any:
    try:
        import paddle
    except ImportError:
        raise MissingDependencyError(
            "the PaddlePaddle frontend needs paddle: pip install 'relaykit[paddle]' "
            "(paddlepaddle==3.3.1)"
        ) from None
    return paddle


def _read(model: Any, scope: Any) -> Graph:
    paddle = _require_paddle()
    if isinstance(model, paddle.nn.Layer):
        if not hasattr(model, "program") or not hasattr(model, "_program_holder_dict"):
            raise FrontendError(
                f"from_paddle takes a layer loaded by paddle.jit.load, not a "
                f"{type(model).__name__}: save it with paddle.jit.save(layer, path, "
                "input_spec=[...]) and load it with paddle.jit.load(path)"
            )
        return read_layer(model)
    if hasattr(model, "global_block"):
        return read_program(model, scope if scope is not None else paddle.static.global_scope())
    raise FrontendError(
        f"from_paddle takes a paddle.jit.TranslatedLayer or a static Program, not a "
        f"{type(model).__name__}"
    )


def _main_slot(op: PaddleOp) -> str:
    for slot in ("out", "output", "y"):
        if op.outputs.get(slot):
            return slot
    return next(iter(op.outputs), "")


def _bind(op: PaddleOp, result: Any, values: dict[str, Any]) -> None:
    if isinstance(result, dict):
        for slot, value in result.items():
            keys = op.outputs.get(slot, [])
            if isinstance(value, list) and len(keys) > 1:  # a list slot (ProgramDesc)
                values.update(zip(keys, value, strict=False))
            elif keys:
                values[keys[0]] = value
        return
    keys = op.outputs.get(_main_slot(op), [])
    if isinstance(result, list) and len(keys) > 1:
        for key, value in zip(keys, result, strict=False):
            values[key] = value
    elif keys:
        values[keys[0]] = result


def _group(op: PaddleOp, values: dict[str, Any]) -> None:
    ins = [values[k] for keys in op.inputs.values() for k in keys]
    outs = [k for keys in op.outputs.values() for k in keys]
    if op.raw == "builtin.combine":
        values[outs[0]] = list(ins)
    elif op.raw == "builtin.split":
        for key, value in zip(outs, ins[0], strict=False):
            values[key] = value
    else:  # builtin.slice
        values[outs[0]] = ins[0][int(op.attrs["index"])]


def _report_unsupported(graph: Graph) -> None:
    """One error listing every op without a converter, with its count and first use."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for op in graph.ops:
        if op.raw in _GROUPING or op.type in CONVERTERS:
            continue
        counts[op.raw] += 1
        first.setdefault(op.raw, op.describe())
    if not counts:
        return
    lines = [
        f"  {name}: {n} op{'s' if n > 1 else ''} (first: {first[name]})"
        for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    raise UnsupportedOpError(
        f"the PaddlePaddle model uses {len(counts)} operator{'s' if len(counts) > 1 else ''} "
        "relaykit cannot convert:\n" + "\n".join(lines) + "\nregister a converter for each "
        "(relaykit.frontend.paddle.CONVERTERS, keyed by the op name without 'pd_op.') or "
        "rewrite the model to avoid them",
        {k: (counts[k], first[k]) for k in counts},
    )


def _all_constant(op: PaddleOp, values: dict[str, Any]) -> bool:
    found = [values.get(k) for keys in op.inputs.values() for k in keys]
    flat = [v for f in found for v in (f if isinstance(f, list) else [f])]
    return bool(flat) and all(isinstance(v, Constant) for v in flat)


def _fold(result: Any) -> Any:
    if isinstance(result, TupleWrapper):
        return result
    if isinstance(result, Expr):
        return fold_constant(result)
    if isinstance(result, list):
        return [_fold(r) for r in result]
    if isinstance(result, dict):
        return {k: _fold(v) for k, v in result.items()}
    return result


def _feed_var(feed: Any, shape_dict: Mapping[str, Sequence[int]] | None) -> Var:
    shape = tuple(feed.shape)
    if shape_dict is not None and feed.name in shape_dict:
        given = tuple(int(d) for d in shape_dict[feed.name])
        if len(given) != len(shape) or any(
            s not in (-1, g) for s, g in zip(shape, given, strict=True)
        ):
            raise FrontendError(
                f"shape_dict gives input {feed.name!r} the shape {list(given)}, but the "
                f"model declares {list(shape)} (-1: any size)"
            )
        shape = given
    if any(d < 0 for d in shape):
        raise FrontendError(
            f"input {feed.name!r} has the shape {list(shape)} with unknown (-1) sizes: give "
            f"its shape in shape_dict, e.g. shape_dict={{{feed.name!r}: [1, ...]}}"
        )
    return Var(feed.name, TensorType(shape, feed.dtype))


def convert_graph(
    graph: Graph, shape_dict: Mapping[str, Sequence[int]] | None = None
) -> tuple[IRModule, dict[str, NDArray]]:
    """The Relay module and parameters of a program read by :mod:`.program`."""
    if shape_dict is not None:
        unknown = sorted(set(shape_dict) - {f.name for f in graph.feeds})
        if unknown:
            raise FrontendError(
                f"shape_dict names {unknown}, which are not inputs of the model (its inputs: "
                f"{[f.name for f in graph.feeds]})"
            )
    _report_unsupported(graph)
    values: dict[str, Any] = {}
    inputs = [_feed_var(feed, shape_dict) for feed in graph.feeds]
    for feed, var in zip(graph.feeds, inputs, strict=True):
        values[feed.key] = var
    # the weights are constants of main, as TVM's importer makes them; params also
    # lists them by name (building with them is harmless: no parameter has those names)
    params: dict[str, NDArray] = {}
    for key, (name, arr) in graph.params.items():
        dtype = "bool" if arr.dtype == bool else arr.dtype.name
        values[key] = const(arr.copy(), dtype)
        params[name] = NDArray(arr.copy())
    for op in graph.ops:
        if op.raw in _GROUPING:
            _group(op, values)
            continue
        with converting(op, PaddleOp.describe):
            result = CONVERTERS[op.type](OpContext(op, values))
            if _all_constant(op, values):  # shape arithmetic: later ops read its values
                result = _fold(result)
            _bind(op, result, values)
    outputs = []
    for key in graph.fetches:
        if key not in values:
            raise FrontendError(f"the model's output {key} is not computed by any op")
        value = values[key]
        outputs.append(value[0] if isinstance(value, TupleWrapper) else value)
    body: Expr | list[Expr] = outputs[0] if len(outputs) == 1 else outputs
    return build_module(body, inputs, [], "the PaddlePaddle model"), params


def from_paddle(
    program_or_layer: Any,
    shape_dict: Mapping[str, Sequence[int]] | None = None,
    scope: Any = None,
) -> tuple[IRModule, dict[str, NDArray]]:
    """A PaddlePaddle model as a Relay module and its parameters (TVM's signature).

    ``program_or_layer`` is a layer from ``paddle.jit.load`` or a static program from
    ``paddle.static.load_inference_model`` (its parameters read from ``scope``: a
    paddle scope, by default the global one, or a dict of name -> array); either IR
    works, Paddle 3's PIR (``.json``) or the ProgramDesc of ``.pdmodel`` files.
    ``shape_dict`` maps input names to shapes and is needed for inputs saved with
    unknown (-1) sizes. As in TVM, the weights are constants of ``main`` and
    ``params`` holds them by their Paddle names.

    >>> import paddle  # doctest: +SKIP
    >>> layer = paddle.jit.load("resnet50/model")  # doctest: +SKIP
    >>> mod, params = from_paddle(layer, {"inputs": [1, 3, 224, 224]})  # doctest: +SKIP
    """
    return convert_graph(_read(program_or_layer, scope), shape_dict)
