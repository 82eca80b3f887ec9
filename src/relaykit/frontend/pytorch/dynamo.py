"""``torch.compile(model, backend="relaykit")``: relaykit as a TorchDynamo backend.

Dynamo captures each graph of the model (graph breaks are its business) and calls
:func:`relaykit_backend` once per graph and guard set. The backend lowers the graph
to core aten with torch's own decompositions and functionalisation (``make_fx``),
converts it with the same converter table as
:func:`~relaykit.frontend.from_pytorch`, partitions it for ``options["targets"]``
(default: dnnl when oneDNN is installed, else the host alone), builds it with
``relay.build`` and returns a callable that runs relaykit's graph executor. Tensors
cross over by DLPack without copies: inputs are read in place as NumPy views of the
tensors' memory (the executor copies them into its input buffers), and each output
is handed back as a tensor over the executor's fresh output array.

The backend is for inference: parameters and buffers are captured as constants
when the graph is compiled (as ``torch.jit.freeze`` does), so call
``torch._dynamo.reset()`` after changing the weights; outputs carry no autograd
history. A graph relaykit cannot convert (an unsupported op, a data-dependent
shape) runs eagerly, with a :class:`RelayKitFallbackWarning` saying why.

Importing this module registers the backend under the name ``"relaykit"``; an
installed relaykit also declares it in the ``torch_dynamo_backends`` entry-point
group, so ``backend="relaykit"`` works after ``import torch`` alone.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relaykit.backends.status import best_available
from relaykit.byoc.pipeline import partition_for
from relaykit.errors import (
    FrontendError,
    MissingDependencyError,
    RegistryKeyError,
    RelayKitError,
    UsageError,
)
from relaykit.execution.build_module import build
from relaykit.ir.expr import Expr, Var
from relaykit.ir.module import IRModule
from relaykit.ir.types import TensorType
from relaykit.runtime.ndarray import cpu
from relaykit.transform.pass_infra import PassContext

from .common import build_module
from .exported import FxImporter, static_shape
from .registry import OpContext, dtype_name, require_torch
from .tensors import as_numpy as _as_numpy
from .tensors import as_tensor as _as_tensor
from .tensors import torch_threads_kept as _torch_threads_kept

torch = require_torch()

__all__ = [
    "RelayKitFallbackWarning",
    "relaykit_backend",
    "CompiledGraph",
    "default_targets",
    "register",
]

#: the options ``torch.compile(..., options={...})`` may give
KNOWN_OPTIONS = frozenset({"targets", "opt_level", "num_threads", "config", "fallback"})


#: aten ops torch's default decompositions would lower further, kept whole: relaykit has
#: these ops (nn.resize2d), and attention converts to fewer, bigger ops than its
#: decomposition (which also tests every row of the scores for a fully masked one)
KEPT_OPS = (
    torch.ops.aten.upsample_nearest2d.default,
    torch.ops.aten.upsample_bilinear2d.default,
    torch.ops.aten.scaled_dot_product_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
)


class RelayKitFallbackWarning(UserWarning):
    """A graph ran eagerly because relaykit could not compile it (the message says why)."""


def _aten_graph(gm: Any, inputs: Sequence[Any]) -> Any:
    """``gm`` as a functional graph of core aten ops (torch's decompositions)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    table = torch.export.default_decompositions()
    for op in KEPT_OPS:
        table.pop(op, None)

    def interpret(*args: Any) -> Any:  # node by node, so each aten node keeps its source
        return torch.fx.Interpreter(gm).run(*args)

    functional = torch.func.functionalize(interpret, remove="mutations")
    with torch.no_grad(), torch.fx.traceback.preserve_node_meta():
        return make_fx(functional, decomposition_table=table, tracing_mode="real")(*inputs)


def _is_static(tensor: Any) -> bool:
    """A parameter or buffer of the module (dynamo marks their inputs as static)."""
    return isinstance(tensor, torch.nn.Parameter) or (
        getattr(tensor, "_dynamo_static_input_type", None) is not None
    )


def _concrete(value: Any) -> Any:
    """A ``SymInt`` (a dynamic size dynamo passes) as the int it stands for now."""
    if isinstance(value, torch.SymInt):
        hint = getattr(value.node, "hint", None)
        return int(hint) if hint is not None else int(value)
    return value


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


class _Plan:
    """One build: the executor and how the graph's inputs and outputs map to it."""

    def __init__(self, executor: Any, feeds: list[tuple[int, str]], outputs: list[Any]) -> None:
        self.executor = executor
        self.feeds = feeds  # (position in the call's arguments, executor input name)
        self.outputs = outputs  # an output index, or a fixed Python value (None...)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        ex = self.executor
        threads = torch.get_num_threads()
        for pos, name in self.feeds:
            ex.set_input(name, _as_numpy(args[pos]))
        ex.run()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        return [
            _as_tensor(ex.get_output(o).numpy()) if isinstance(o, int) else o for o in self.outputs
        ]


class CompiledGraph:
    """What the backend returns to dynamo for one graph: builds on the first call of
    each input signature (shapes, dtypes, int arguments), then runs the build."""

    def __init__(self, gm: Any, example_inputs: Sequence[Any], options: Mapping[str, Any]):
        self.gm = gm
        self.options = dict(options)
        self.static = [isinstance(t, torch.Tensor) and _is_static(t) for t in example_inputs]
        self.plans: dict[tuple[Any, ...], _Plan] = {}
        args = [_concrete(a) for a in example_inputs]
        self.plans[self.signature(args)] = self.build(args)

    def signature(self, args: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(
            (tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else _concrete(a)
            for a, s in zip(args, self.static, strict=True)
            if not s
        )

    def convert(self, args: Sequence[Any]) -> tuple[IRModule, list[tuple[int, str]], list[Any]]:
        agm = _aten_graph(self.gm, args)
        placeholders = [n for n in agm.graph.nodes if n.op == "placeholder"]
        values: dict[Any, Any] = {}
        inputs: list[Var] = []
        feeds: list[tuple[int, str]] = []
        ctx = OpContext("placeholder", "the graph's inputs")
        for i, (node, arg) in enumerate(zip(placeholders, args, strict=True)):
            if not isinstance(arg, torch.Tensor):
                values[node] = arg.node.hint if hasattr(arg, "node") else arg
            elif self.static[i]:
                values[node] = ctx.expr(arg)
            else:
                name = f"input{i}"
                var = Var(name, TensorType(static_shape(arg, name), dtype_name(arg.dtype)))
                values[node] = var
                inputs.append(var)
                feeds.append((i, name))
        result = FxImporter(agm.graph, values).run(agm)
        flat = _flat(result)
        tensors = [v for v in flat if isinstance(v, Expr)]
        if any(isinstance(v, Var) for v in tensors):
            raise FrontendError("the graph returns one of its inputs unchanged")
        outputs: list[Any] = []
        k = 0
        for v in flat:
            if isinstance(v, Expr):
                outputs.append(k)
                k += 1
            elif v is None or isinstance(v, (int, float, bool)):
                outputs.append(v)
            else:
                raise FrontendError(f"the graph returns a {type(v).__name__}")
        mod = build_module(tensors, inputs, [], "the torch.compile graph")
        return mod, feeds, outputs

    def build(self, args: Sequence[Any]) -> _Plan:
        mod, feeds, outputs = self.convert(args)
        targets = self.options.get("targets")
        if targets is None:  # none named: the fastest backend installed (dnnl), else the host
            targets = default_targets()
        elif isinstance(targets, str):
            targets = [targets]
        config = dict(self.options.get("config") or {})
        if self.options.get("num_threads") is not None:
            config["relay.num_threads"] = int(self.options["num_threads"])
        level = int(self.options.get("opt_level", 3))
        with _torch_threads_kept(), PassContext(opt_level=level, config=config):
            if targets:
                mod = partition_for(mod, list(targets))
            lib = build(mod, target="llvm")
        return _Plan(lib["default"](cpu()), feeds, outputs)

    def __call__(self, *args: Any) -> list[Any]:
        key = self.signature(args)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self.build([_concrete(a) for a in args])
        return plan(args)


def default_targets() -> list[str]:
    """The backends a graph is partitioned for when ``options`` names none: dnnl when
    oneDNN is installed (``relaykit[dnnl]``), else none (the host kernels run it all;
    ccompiler's plain C loops are slower than those)."""
    name, _ = best_available(("dnnl",))
    return [name] if name else []


def _check_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    opts = dict(options or {})
    unknown = sorted(set(opts) - KNOWN_OPTIONS)
    if unknown:
        raise UsageError(
            f"unknown relaykit backend option(s) {unknown}: the options are "
            f"{sorted(KNOWN_OPTIONS)} (e.g. options={{'targets': ['dnnl']}})"
        )
    return opts


def relaykit_backend(
    gm: Any,
    example_inputs: Sequence[Any],
    *,
    options: Mapping[str, Any] | None = None,
    mode: str | None = None,
) -> Callable[..., Any]:
    """The TorchDynamo backend: ``torch.compile(model, backend="relaykit",
    options={"targets": ["dnnl"]})``.

    ``options``: ``targets`` (backends to partition for, highest priority first;
    default: dnnl when installed, see :func:`default_targets`; ``[]`` runs everything
    on relaykit's host kernels), ``opt_level`` (3),
    ``num_threads`` and ``config`` (``PassContext`` options), ``fallback`` (True: a
    graph relaykit cannot compile runs eagerly with a :class:`RelayKitFallbackWarning`;
    False: its error, e.g. the :class:`~relaykit.errors.UnsupportedOpError` listing
    every unsupported op, is raised). ``mode`` is accepted and ignored.
    """
    opts = _check_options(options)
    try:
        return CompiledGraph(gm, example_inputs, opts)
    except (UsageError, RegistryKeyError, MissingDependencyError):
        raise  # a wrong option, an unknown target, oneDNN missing: the user must act
    except RelayKitError as err:
        if not opts.get("fallback", True):
            raise  # options={"fallback": False}: the error itself, not eager
        warnings.warn(
            f"relaykit could not compile a graph of {len(list(gm.graph.nodes))} nodes; it "
            f"runs eagerly: {err}",
            RelayKitFallbackWarning,
            stacklevel=2,
        )
        return gm.forward


def register() -> None:
    """Register :func:`relaykit_backend` with TorchDynamo as ``"relaykit"`` (unless an
    installed entry point already declares it; torch then loads it from there)."""
    if "relaykit" not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(relaykit_backend, name="relaykit")


register()
