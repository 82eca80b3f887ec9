"""The partitioning pipeline: bind the weights, optimise for the targets, partition.

:func:`prepare` is the one pipeline every command runs (``relaykit explain``,
``partition``, ``compile``, ``bench`` and ``demo``), so what a report shows is what a
build builds: ``params`` bound into ``main``, each target's optimize hook, then the four
BYOC passes with the pins and minimum region sizes given. :func:`partition_for` is the
same pipeline as TVM's ``partition_for_<lib>`` (it returns the partitioned module
alone); a backend's ``partition_for_<name>`` is :func:`partitioner` of its name, or a
thin wrapper when TVM's signature has options of its own (``partition_for_dnnl``).

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.byoc import scoped_registries
>>> x = relay.var("x", shape=(1, 8))
>>> mod = tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x)))
>>> with scoped_registries():
...     tvm.ir.register_op_attr("abs", "target.lib", True)
...     out = partition_for(mod, "lib")
>>> sorted(gv.name_hint for gv in out.get_global_vars())
['main', 'tvmgen_default_lib_main_0']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relaykit.dataflow_pattern import DFPattern, ExprPattern
from relaykit.errors import CodegenError
from relaykit.ir.expr import Function
from relaykit.ir.module import IRModule
from relaykit.ir.op import Op
from relaykit.op.contrib import get_pattern_table
from relaykit.runtime.registry import EXT_PREFIX, get_global_func
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.infer_type import InferType
from relaykit.transform.pass_infra import Pass, Sequential

from .annotate import AnnotateTarget
from .choose import normalize_targets
from .merge_composite import MergeComposite
from .merge_regions import MergeCompilerRegions
from .partition import PartitionGraph
from .pins import as_pins
from .targets import configure_target, scoped_registries

__all__ = [
    "Prepared",
    "prepare",
    "optimize_for",
    "partition_for",
    "partitioner",
    "partition_passes",
    "registered_patterns",
    "patterns_for",
    "run_optimize_hook",
]


def run_optimize_hook(
    mod: IRModule, target: str, params: Mapping[str, Any] | None = None
) -> IRModule:
    """Run ``target``'s optimize hook (``relay.ext.<target>.optimize``: the backend
    record's ``optimize``, or a function registered under that name) on ``mod``."""
    hook = get_global_func(f"{EXT_PREFIX}{target}.optimize", allow_missing=True)
    if hook is None:
        return mod
    out = hook(mod, params)
    if not isinstance(out, IRModule):
        raise CodegenError(
            f"the optimize hook of {target!r} returned {type(out).__name__}, not an IRModule"
        )
    return out


def registered_patterns(targets: str | Sequence[str]) -> list[tuple[Any, ...]]:
    """The registered pattern tables of ``targets``, concatenated in target order."""
    table: list[tuple[Any, ...]] = []
    for t in normalize_targets(targets):
        table.extend(get_pattern_table(t) or [])
    return table


def _pattern_ops(pattern: Any) -> set[str]:
    """The operator names a dataflow pattern matches calls of."""
    names: set[str] = set()
    stack, seen = [pattern], set()
    while stack:
        p = stack.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        if isinstance(p, ExprPattern) and isinstance(p.expr, Op):
            names.add(str(p.expr.name))
        if isinstance(p, DFPattern):
            for value in vars(p).values():
                items = value if isinstance(value, (list, tuple)) else (value,)
                stack.extend(v for v in items if isinstance(v, DFPattern))
    return names


def patterns_for(targets: str | Sequence[str], pin: Any = None) -> list[tuple[Any, ...]]:
    """The registered pattern tables of ``targets``, without the patterns of one target
    that would fuse an operator the user pinned to another target (``pin("nn.dense",
    to="ccompiler")`` keeps ``nn.dense`` out of dnnl's ``dense_bias``), so the pin can
    send it there: that target cannot compile another target's composite."""
    names = normalize_targets(targets)
    table = registered_patterns(names)
    moved: dict[str, str] = {}  # operator -> the target it is pinned to
    for p in reversed(as_pins(pin, names)):  # the first pin wins
        if p.to in names:
            moved.update(dict.fromkeys(p.names, p.to))
    if not moved:
        return table
    kept = []
    for entry in table:
        owner = str(entry[0]).split(".", 1)[0]
        ops = _pattern_ops(entry[1]) if len(entry) > 1 else set()
        if any(moved.get(op, owner) != owner for op in ops):
            continue
        kept.append(entry)
    return kept


def partition_passes(
    targets: str | Sequence[str],
    *,
    patterns: Sequence[tuple[Any, ...]] | None = None,
    pin: Any = None,
    include_non_call_ops: bool = True,
    mod_name: str = "default",
    bind_constants: bool = True,
) -> list[Pass]:
    """The passes :func:`partition_for` runs, for use in a ``Sequential``."""
    names = normalize_targets(targets)
    table = patterns_for(names, pin) if patterns is None else list(patterns)
    passes: list[Pass] = [InferType()]
    if table:
        passes.append(MergeComposite(table))
    passes += [
        AnnotateTarget(names, include_non_call_ops, pin=pin),
        MergeCompilerRegions(),
        PartitionGraph(mod_name, bind_constants),
    ]
    return passes


def optimize_for(
    mod: IRModule | Function,
    targets: str | Sequence[str],
    params: Mapping[str, Any] | None = None,
    *,
    optimize: bool = True,
) -> IRModule:
    """The pipeline up to partitioning: ``params`` bound into ``main`` (weights become
    constants that region functions embed), then, unless ``optimize=False``, each
    target's optimize hook in target order."""
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if params:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    # Each target's backend may rewrite the module first (its ``optimize`` hook).
    for target in normalize_targets(targets) if optimize else ():
        mod = run_optimize_hook(mod, target, params)
    return mod


@dataclass(frozen=True)
class Prepared:
    """What :func:`prepare` made of a model, and the options it was made with.

    ``optimized`` is the module the partitioning passes start from (weights bound, the
    targets' optimize hooks run): reports (:func:`relaykit.byoc.report.visual.analyse`)
    given it and the same ``targets``, ``pins``, ``min_ops`` and ``min_macs`` describe
    exactly the regions of ``partitioned``, which a build compiles.
    """

    source: IRModule
    optimized: IRModule
    partitioned: IRModule
    targets: tuple[str, ...]
    #: The pattern table the partitioning used (:func:`patterns_for` of the pins).
    patterns: tuple[tuple[Any, ...], ...] = ()
    pins: Any = None
    min_ops: int | None = None
    min_macs: int | None = None


def prepare(
    mod: IRModule | Function,
    targets: str | Sequence[str],
    params: Mapping[str, Any] | None = None,
    *,
    pins: Any = None,
    min_ops: int | None = None,
    min_macs: int | None = None,
    patterns: Sequence[tuple[Any, ...]] | None = None,
    optimize: bool = True,
) -> Prepared:
    """Bind ``params``, optimise for ``targets`` and partition (``pins`` as for
    ``AnnotateTarget``; regions with fewer than ``min_ops`` operators or ``min_macs``
    multiply-accumulates go back to the host, for this call only).

    No targets (a host-only build) partitions nothing.

    >>> import relaykit as tvm
    >>> from relaykit import relay
    >>> x = relay.var("x", shape=(1, 8))
    >>> mod = tvm.IRModule.from_expr(relay.nn.relu(relay.abs(x)))
    >>> with scoped_registries():
    ...     tvm.ir.register_op_attr("abs", "target.lib", True)
    ...     done = prepare(mod, "lib", min_ops=2)
    >>> done.targets, [gv.name_hint for gv in done.partitioned.get_global_vars()]
    (('lib',), ['main'])
    """
    names = normalize_targets(targets)
    source = IRModule.from_expr(mod) if isinstance(mod, Function) else mod
    optimized = optimize_for(source, names, params, optimize=optimize)
    with scoped_registries():  # the minimum sizes set here do not outlive the call
        if min_ops is not None or min_macs is not None:
            for t in names:
                configure_target(t, min_region_ops=min_ops, min_region_macs=min_macs)
        table = patterns_for(names, pins) if patterns is None else list(patterns)
        passes = partition_passes(names, patterns=table, pin=pins)
        partitioned = Sequential(passes, name="Prepare")(optimized)
    return Prepared(source, optimized, partitioned, names, tuple(table), pins, min_ops, min_macs)


def partition_for(
    mod: IRModule | Function,
    targets: str | Sequence[str],
    params: Mapping[str, Any] | None = None,
    *,
    patterns: Sequence[tuple[Any, ...]] | None = None,
    pin: Any = None,
    include_non_call_ops: bool = True,
    mod_name: str = "default",
    bind_constants: bool = True,
    optimize: bool = True,
) -> IRModule:
    """Partition ``mod`` for ``targets`` (highest priority first).

    Unless ``optimize=False``, each target's ``optimize`` hook (registered with its
    codegen) runs first.

    ``patterns`` defaults to the registered pattern tables of the targets
    (:func:`patterns_for` the pins);
    ``params`` are bound into ``main`` first (so weights become constants that
    region functions embed); ``pin`` is as for ``AnnotateTarget``. Every pass runs once.
    The pipeline of :func:`prepare`, with TVM's options.
    """
    mod = optimize_for(mod, targets, params, optimize=optimize)
    passes = partition_passes(
        targets,
        patterns=patterns,
        pin=pin,
        include_non_call_ops=include_non_call_ops,
        mod_name=mod_name,
        bind_constants=bind_constants,
    )
    return Sequential(passes, name="PartitionFor")(mod)


def partitioner(target: str) -> Callable[..., IRModule]:
    """TVM's ``partition_for_<target>(mod, params=None, **options)``: :func:`partition_for`
    for one backend (``options`` as for :func:`partition_for`).

    >>> partitioner("ccompiler").__name__
    'partition_for_ccompiler'
    """

    def partition(
        mod: IRModule | Function, params: Mapping[str, Any] | None = None, **options: Any
    ) -> IRModule:
        return partition_for(mod, target, params=params, **options)

    partition.__name__ = partition.__qualname__ = f"partition_for_{target}"
    partition.__doc__ = (
        f"Bind ``params``, run {target}'s optimize hook (simplify and fold), then partition "
        f"``mod`` for {target} (:func:`relaykit.byoc.partition_for`)."
    )
    return partition
