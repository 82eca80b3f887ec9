"""The ONNX converter table: ``(domain, op_type) -> {since_version: converter}``.

A converter is a function ``fn(ctx, *inputs, **attributes)`` that returns the
Relay expression of the node's output (or a list, one per output). Missing
optional inputs are ``None``; attributes arrive as keyword arguments with the
ONNX schema's defaults filled in. The converter used for a model is the newest
one whose ``since_version`` is not newer than the model's opset::

    @converter("Relu", 1)
    def relu(ctx, x):
        return relay.nn.relu(x)

>>> lookup("", "Relu", 14) is not None
True
>>> lookup("", "NoSuchOp", 14) is None
True
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from relaykit.errors import DynamicShapeError, FrontendError
from relaykit.ir.expr import Constant, Expr
from relaykit.ir.types import TensorType
from relaykit.registry import Registry

from .limits import check_shape
from .proto import attribute_value, check_attribute_type, require_onnx

__all__ = [
    "CONVERTERS",
    "Converter",
    "NodeContext",
    "converter",
    "lookup",
    "supported_ops",
    "schema_defaults",
]

Converter = Callable[..., Any]

#: ``(domain, op_type) -> {since_version: converter}``; a test can ``scoped()`` it.
CONVERTERS: Registry[tuple[str, str], dict[int, Converter]] = Registry("ONNX converter")


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def converter(op_type: str, since: int, domain: str = "") -> Callable[[Converter], Converter]:
    """Register ``fn`` as the converter of ``op_type`` from opset ``since`` on."""

    def register(fn: Converter) -> Converter:
        key = (_domain(domain), op_type)
        versions = dict(CONVERTERS.get(key) or {})  # a new dict: snapshots stay intact
        versions[since] = fn
        CONVERTERS.register(key, versions, override=True)
        return fn

    return register


def lookup(domain: str, op_type: str, opset: int) -> Converter | None:
    """The newest converter of ``op_type`` not newer than ``opset``, or None."""
    versions = CONVERTERS.get((_domain(domain), op_type))
    if not versions:
        return None
    usable = [v for v in versions if v <= opset]
    return versions[max(usable)] if usable else None


def supported_ops(domain: str = "") -> list[str]:
    """The op types of ``domain`` that have a converter."""
    return sorted(op for d, op in CONVERTERS if d == _domain(domain))


@functools.lru_cache(maxsize=4096)
def _schema(domain: str, op_type: str, opset: int) -> Any:
    onnx = require_onnx()
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except Exception:
        return None


@functools.lru_cache(maxsize=4096)
def schema_defaults(domain: str, op_type: str, opset: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The attribute defaults and attribute types of the op's schema at ``opset``."""
    schema = _schema(_domain(domain), op_type, opset)
    defaults: dict[str, Any] = {}
    types: dict[str, int] = {}
    if schema is None:
        return defaults, types
    for name, spec in schema.attributes.items():
        types[name] = int(spec.type)
        if spec.default_value is not None and spec.default_value.type != 0:
            defaults[name] = attribute_value(spec.default_value, f"{op_type} schema")
    return defaults, types


@functools.lru_cache(maxsize=4096)
def required_attributes(domain: str, op_type: str, opset: int) -> frozenset[str]:
    """The names of the attributes the op's schema at ``opset`` requires."""
    schema = _schema(_domain(domain), op_type, opset)
    if schema is None:
        return frozenset()
    return frozenset(name for name, spec in schema.attributes.items() if spec.required)


@functools.lru_cache(maxsize=1024)
def _accepted(fn: Converter) -> tuple[frozenset[str], bool]:
    params = inspect.signature(fn).parameters.values()
    names = frozenset(p.name for p in params if p.kind == p.KEYWORD_ONLY)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    return names, var_kw


class NodeContext:
    """What a converter knows about the node it converts, and helpers to ask the
    importer about shapes and constant values."""

    def __init__(self, importer: Any, node: Any, name: str, opset: int) -> None:
        self.importer = importer
        self.node = node
        self.name = name
        self.op_type: str = node.op_type
        self.opset = opset
        self.num_outputs = len(node.output)
        self.output_names = tuple(node.output)

    # -- messages -------------------------------------------------------------
    @property
    def where(self) -> str:
        return f"node {self.name!r} ({self.op_type})"

    def fail(self, message: str) -> FrontendError:
        """A FrontendError about this node."""
        return FrontendError(f"{self.where}: {message}")

    def unsupported(self, what: str) -> FrontendError:
        return FrontendError(f"{self.where}: {what} is not supported by relaykit yet")

    # -- types ----------------------------------------------------------------
    def type_of(self, expr: Expr) -> TensorType:
        t = self.importer.type_of(expr, self)
        if not isinstance(t, TensorType):
            raise self.fail(f"expected a tensor input, got a value of type {t}")
        return t

    def shape(self, expr: Expr) -> tuple[int, ...]:
        return self.type_of(expr).shape

    def dtype(self, expr: Expr) -> str:
        return self.type_of(expr).dtype

    def ndim(self, expr: Expr) -> int:
        return len(self.shape(expr))

    # -- constants ------------------------------------------------------------
    def is_constant(self, expr: Expr | None) -> bool:
        return isinstance(expr, Constant)

    def value(self, expr: Expr | None, what: str) -> Any:
        """The NumPy value of an input that must be known at import time."""
        if expr is None:
            raise self.fail(f"the {what} input is missing")
        if isinstance(expr, Constant):
            return expr.data.numpy()
        if expr in self.importer.too_large:
            raise self.fail(
                f"its {what} input is a constant of {self.importer.type_of(expr, self)}, above "
                f"the import-time folding limit of {self.importer.max_fold_bytes} bytes; raise "
                "it with PassContext(config={'relay.FoldConstant.max_bytes': ...}) if the model "
                "really needs it"
            )
        raise DynamicShapeError(
            f"{self.where}: its {what} input is computed at run time, but relaykit needs it "
            "at import time (its IR has static shapes only); pass fixed input shapes with "
            "from_onnx(..., shape={...}), or make the value a constant/initializer"
        )

    def scalar(self, expr: Expr | None, what: str) -> Any:
        """A one-element input that must be known at import time, as a NumPy scalar."""
        import numpy as np

        arr = np.asarray(self.value(expr, what))
        if arr.size != 1:
            raise self.fail(f"its {what} input must hold one value, got shape {arr.shape}")
        return arr.reshape(-1)[0]

    def ints(self, expr: Expr | None, what: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.value(expr, what).reshape(-1))

    def check_constant(self, shape: Any, itemsize: int = 8, what: str = "a constant") -> None:
        """Raise before the converter builds a NumPy constant of ``shape`` whose size is
        above the import-time folding limit (or whose shape is absurd)."""
        dims = tuple(int(d) for d in shape)
        check_shape(dims, f"{self.where}: {what}")
        nbytes = math.prod(dims) * int(itemsize)
        limit = self.importer.max_fold_bytes
        if nbytes > limit:
            raise self.fail(
                f"{what} of shape {dims} ({nbytes} bytes) would be built at import, above the "
                f"limit of {limit} bytes (PassContext config 'relay.FoldConstant.max_bytes')"
            )

    def const(self, value: Any, dtype: str | None = None) -> Constant:
        import numpy as np

        arr = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
        return Constant(np.array(arr, order="C"))


def call_converter(fn: Converter, ctx: NodeContext, inputs: list[Any], attrs: dict[str, Any]):
    """Call ``fn`` with the attributes it accepts; a non-default attribute it does not
    know is an error naming the node."""
    names, var_kw = _accepted(fn)
    if var_kw:
        return fn(ctx, *inputs, **attrs)
    kwargs = {k: v for k, v in attrs.items() if k in names}
    return fn(ctx, *inputs, **kwargs)


def node_attributes(ctx: NodeContext, domain: str) -> tuple[dict[str, Any], set[str]]:
    """The node's attributes with schema defaults, and the names the node set itself."""
    defaults, types = schema_defaults(domain, ctx.op_type, ctx.opset)
    attrs = dict(defaults)
    given: set[str] = set()
    for a in ctx.node.attribute:
        if not isinstance(a.name, str):
            raise ctx.fail(f"an attribute name is not valid UTF-8 text: {a.name!r}")
        if a.ref_attr_name:
            raise ctx.unsupported(f"attribute {a.name!r} refers to a function attribute; this")
        check_attribute_type(a, types.get(a.name, 0), ctx.where)
        attrs[a.name] = attribute_value(a, ctx.where)
        given.add(a.name)
    missing = sorted(required_attributes(domain, ctx.op_type, ctx.opset) - given)
    if missing:
        raise ctx.fail(f"its required attribute {missing[0]!r} is missing")
    return attrs, given


@functools.lru_cache(maxsize=4096)
def _input_spec(domain: str, op_type: str, opset: int) -> tuple[int, tuple[tuple[str, str], ...]]:
    """The most inputs the op's schema allows and ``(name, "single"|"optional"|"variadic")``
    of each formal input; ``(-1, ())`` when there is no schema."""
    schema = _schema(_domain(domain), op_type, opset)
    if schema is None:
        return -1, ()
    option = require_onnx().defs.OpSchema.FormalParameterOption
    kinds = {option.Single: "single", option.Optional: "optional", option.Variadic: "variadic"}
    return int(schema.max_input), tuple((p.name, kinds[p.option]) for p in schema.inputs)


def check_inputs(ctx: NodeContext, domain: str, inputs: list[Any]) -> None:
    """Raise when the node has more inputs than its schema allows, or misses a required
    one (converters may then assume every required input is there)."""
    max_input, params = _input_spec(domain, ctx.op_type, ctx.opset)
    if max_input < 0:
        return
    if len(inputs) > max_input:
        raise ctx.fail(f"has {len(inputs)} inputs; {ctx.op_type} takes at most {max_input}")
    for k, (name, kind) in enumerate(params):
        if kind == "variadic":
            missing = [j for j in range(k, len(inputs)) if inputs[j] is None]
            if missing:
                raise ctx.fail(f"its variadic input {missing[0]} ({name!r}) is empty")
            break
        if kind == "single" and (k >= len(inputs) or inputs[k] is None):
            raise ctx.fail(f"its required input {k} ({name!r}) is missing")


def check_known_attributes(fn: Converter, ctx: NodeContext, given: set[str]) -> None:
    names, var_kw = _accepted(fn)
    if var_kw:
        return
    unknown = sorted(given - names)
    if unknown:
        raise ctx.unsupported(f"attribute {', '.join(map(repr, unknown))}")
