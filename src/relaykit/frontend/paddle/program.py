"""A PaddlePaddle program read into one plain form, whichever IR it is in.

Paddle 3 has two program representations: the ProgramDesc of Paddle 1-2 (``.pdmodel``
files; ``paddle.base.framework.Program``, ops such as ``conv2d`` / ``elementwise_add``
with named input slots ``Input``/``X``) and the new IR, PIR (``.json`` files, the
default since Paddle 3; ``pir.Program``, ops ``pd_op.conv2d`` / ``pd_op.add`` whose
operands are SSA values and whose list attributes are often operands made by
``pd_op.full_int_array``). :func:`read_layer` and :func:`read_program` turn either
into a :class:`Graph`: ops with lower-case slot names and canonical op names
(:func:`canonical_op`), value keys, the feeds, the fetched values and the parameters
as NumPy arrays. Everything Paddle-specific about reading stays here; the converters
only see :class:`PaddleOp`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relaykit.errors import FrontendError

__all__ = ["Feed", "Graph", "PaddleOp", "canonical_op", "read_layer", "read_program"]

# ProgramDesc op names -> the PIR name (without "pd_op."), which is the canonical one.
_OLD_NAMES = {
    "elementwise_add": "add",
    "elementwise_sub": "subtract",
    "elementwise_mul": "multiply",
    "elementwise_div": "divide",
    "elementwise_max": "maximum",
    "elementwise_min": "minimum",
    "elementwise_pow": "elementwise_pow",
    "elementwise_floordiv": "floor_divide",
    "elementwise_mod": "remainder",
    "matmul_v2": "matmul",
    "matmul": "matmul_v1",
    "reshape2": "reshape",
    "transpose2": "transpose",
    "flatten_contiguous_range": "flatten",
    "flatten2": "flatten2",
    "squeeze2": "squeeze",
    "unsqueeze2": "unsqueeze",
    "lookup_table_v2": "embedding",
    "expand_v2": "expand",
    "hard_swish": "hardswish",
    "hard_sigmoid": "hardsigmoid",
    "bilinear_interp_v2": "bilinear_interp",
    "nearest_interp_v2": "nearest_interp",
    "bicubic_interp_v2": "bicubic_interp",
    "linear_interp_v2": "linear_interp",
    "fill_constant": "full",
    "reduce_mean": "mean",
    "reduce_sum": "sum",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce_prod": "prod",
    "reduce_all": "all",
    "reduce_any": "any",
    "range": "arange",
    "top_k_v2": "topk",
    "arg_max": "argmax",
    "arg_min": "argmin",
    "less_than": "less_than",
    "fill_any_like": "full_like",
    "expand_as_v2": "expand_as",
    "hard_shrink": "hardshrink",
    "one_hot_v2": "one_hot",
    "fill_zeros_like": "zeros_like",
    "grid_sampler": "grid_sample",
    "top_k": "topk",
    "floor_mod": "remainder",
    "isinf_v2": "isinf",
    "isnan_v2": "isnan",
    "isfinite_v2": "isfinite",
}


def canonical_op(name: str) -> str:
    """The converter key of a ProgramDesc or PIR op name.

    >>> canonical_op("pd_op.relu_"), canonical_op("elementwise_add"), canonical_op("conv2d")
    ('relu', 'add', 'conv2d')
    """
    if name.startswith("pd_op."):
        name = name[len("pd_op.") :]
        # an in-place form (relu_, batch_norm_) converts as its functional op
        return name[:-1] if name.endswith("_") and not name.endswith("__") else name
    return _OLD_NAMES.get(name, name)


@dataclass
class PaddleOp:
    """One op: canonical ``type``, the ``raw`` name, slot -> value keys, attributes."""

    type: str
    raw: str
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    attrs: dict[str, Any]
    #: the op's position in the program's global block
    index: int = -1
    #: ProgramDesc: the variable names of the outputs, for messages
    named: bool = False

    def describe(self) -> str:
        where = [f"op {self.index} of the program"]
        layer = self.attrs.get("struct_name")
        if layer:
            where.append(f"in layer {layer}")
        outs = [k for keys in self.outputs.values() for k in keys][:1]
        if self.named and outs:
            where.append(f"output {outs[0]}")
        return f"paddle op {self.raw} ({', '.join(where)})"


@dataclass
class Feed:
    """A model input: its name, value key, shape (``-1`` unknown) and dtype."""

    name: str
    key: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class Graph:
    """A program in plain form (see the module docstring)."""

    ops: list[PaddleOp]
    feeds: list[Feed]
    fetches: list[str]
    #: value key -> (parameter name, value)
    params: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    #: "pir" or "programdesc"
    ir: str = "pir"


_VARTYPE_DTYPES = {
    0: "bool", 1: "int16", 2: "int32", 3: "int64", 4: "float16", 5: "float32",
    6: "float64", 20: "uint8", 21: "int8", 22: "bfloat16",
}  # fmt: skip


def dtype_name(value: Any) -> str:
    """A relaykit dtype name from a Paddle dtype (``paddle.float32``, a PIR ``DataType``,
    a ProgramDesc ``VarType`` number or enum)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) in _VARTYPE_DTYPES:
            return _VARTYPE_DTYPES[int(value)]
        raise FrontendError(f"paddle dtype number {int(value)} is not one relaykit supports")
    text = str(value).split(".")[-1].lower()
    names = {"fp32": "float32", "fp16": "float16", "fp64": "float64", "bf16": "bfloat16"}
    text = names.get(text, text)
    if text in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
                "int64", "uint8", "bool"):  # fmt: skip
        return text
    raise FrontendError(f"paddle dtype {value!r} is not one relaykit supports")


def _plain(value: Any) -> Any:
    """An attribute value with Paddle's scalar wrappers (``Scalar``, NumPy scalars)
    turned into Python numbers, in lists too."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__name__ == "Scalar" and callable(getattr(value, "value", None)):
        return value.value()
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- PIR ------------------------------------------------------------------------------------
def _is_pir(program: Any) -> bool:
    return "pir" in type(program).__module__.split(".")


def _pir_key(value: Any) -> str | None:
    try:
        if not value.initialized():
            return None
    except (AttributeError, RuntimeError, ValueError):
        pass
    return str(value.id)


def _read_pir(program: Any, lookup: Any) -> Graph:
    ops: list[PaddleOp] = []
    feeds: list[Feed] = []
    fetches: list[str] = []
    fetched: set[str] = set()
    params: dict[str, tuple[str, np.ndarray]] = {}
    for index, op in enumerate(program.global_block().ops):
        raw = op.name()
        attrs = {k: _plain(v) for k, v in op.attrs().items()}
        if raw.startswith("pd_op."):
            in_names = list(op.get_input_names())
            out_names = list(op.get_output_names())
        else:  # builtin ops have no slot names (asking for them crashes paddle)
            in_names = [str(i) for i in range(op.num_operands())]
            out_names = [str(i) for i in range(op.num_results())]
        sources = op.operands_source()
        inputs: dict[str, list[str]] = {}
        for slot, value in zip(in_names, sources, strict=False):
            key = _pir_key(value)
            inputs[slot] = [key] if key is not None else []
        outputs = {slot: [str(v.id)] for slot, v in zip(out_names, op.results(), strict=False)}
        if raw in ("builtin.parameter", "builtin.constant"):
            name = str(attrs.get("parameter_name", attrs.get("value", "")))
            params[outputs["0"][0]] = (name, lookup(name))
            continue
        if raw in ("pd_op.data", "pd_op.feed"):
            result = op.result(0)
            shape = attrs.get("shape") or list(result.shape)
            feeds.append(
                Feed(str(attrs["name"]), outputs["out"][0], tuple(int(d) for d in shape),
                     dtype_name(result.dtype))
            )  # fmt: skip
            continue
        if raw in ("builtin.shadow_output", "pd_op.fetch"):
            # running a loaded layer appends a second shadow_output of the same name
            name = str(attrs.get("output_name", attrs.get("name", "")))
            if name not in fetched:
                fetched.add(name)
                fetches.extend(inputs.get("0", inputs.get("x", [])))
            continue
        ops.append(PaddleOp(canonical_op(raw), raw, inputs, outputs, attrs, index))
    return Graph(ops, feeds, fetches, params, "pir")


# -- ProgramDesc ----------------------------------------------------------------------------
def _old_attrs(op: Any) -> dict[str, Any]:
    attrs = {}
    for name in op.attr_names:
        if name.startswith("op_") or name in ("with_quant_attr", "use_cudnn", "use_mkldnn"):
            continue
        try:
            attrs[name] = _plain(op.attr(name))
        except (ValueError, TypeError, RuntimeError):  # block attributes (control flow)
            attrs[name] = None
    return attrs


def _read_programdesc(
    program: Any, lookup: Any, feed_names: list[str] | None, fetch_names: list[str] | None
) -> Graph:
    block = program.global_block()
    ops: list[PaddleOp] = []
    feeds = list(feed_names or [])
    fetches = list(fetch_names or [])
    used: set[str] = set()
    for index, op in enumerate(block.ops):
        if op.type == "feed":
            if feed_names is None:
                feeds.append(op.output("Out")[0])
            continue
        if op.type == "fetch":
            if fetch_names is None:
                fetches.append(op.input("X")[0])
            continue
        inputs = {slot.lower(): list(op.input(slot)) for slot in op.input_names}
        outputs = {slot.lower(): list(op.output(slot)) for slot in op.output_names}
        for keys in inputs.values():
            used.update(keys)
        attrs = _old_attrs(op)
        ops.append(PaddleOp(canonical_op(op.type), op.type, inputs, outputs, attrs, index, True))
    params: dict[str, tuple[str, np.ndarray]] = {}
    for name in sorted(used):
        var = block._find_var_recursive(name)
        if var is not None and var.persistable and name not in ("feed", "fetch"):
            params[name] = (name, lookup(name))
    feed_list = []
    for name in feeds:
        var = block.var(name)
        feed_list.append(Feed(name, name, tuple(int(d) for d in var.shape), dtype_name(var.dtype)))
    return Graph(ops, feed_list, fetches, params, "programdesc")


# -- entry points ---------------------------------------------------------------------------
def _scope_lookup(scope: Any) -> Any:
    def lookup(name: str) -> np.ndarray:
        if isinstance(scope, dict):
            if name not in scope:
                raise FrontendError(f"parameter {name!r} of the program is not in the scope dict")
            value = scope[name]
            return np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        var = scope.find_var(name)
        if var is None:
            raise FrontendError(
                f"parameter {name!r} of the program is not in the scope: pass the scope the "
                "program was loaded into (scope=...), or load it with "
                "paddle.static.load_inference_model first"
            )
        return np.array(var.get_tensor())

    return lookup


def read_layer(layer: Any) -> Graph:
    """The forward program of a ``paddle.jit.TranslatedLayer`` (``paddle.jit.load``),
    with its parameters."""
    tensors = {t.name: t for t in [*layer.parameters(), *layer.buffers()]}

    def lookup(name: str) -> np.ndarray:
        if name not in tensors:
            raise FrontendError(f"parameter {name!r} of the program is not in the layer")
        return np.asarray(tensors[name].numpy())

    program = layer.program()
    if _is_pir(program):
        return _read_pir(program, lookup)
    holder = layer._program_holder_dict["forward"]
    feeds = [d.name() for d in holder.input_descs]
    fetches = [d.name() for d in holder.output_descs]
    return _read_programdesc(program, lookup, feeds, fetches)


def read_program(program: Any, scope: Any) -> Graph:
    """A static program (``paddle.static.load_inference_model``'s) with the parameters
    held in ``scope``."""
    lookup = _scope_lookup(scope)
    if _is_pir(program):
        return _read_pir(program, lookup)
    return _read_programdesc(program, lookup, None, None)
