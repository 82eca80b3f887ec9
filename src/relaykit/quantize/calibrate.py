"""Quantization's third pass: give every simulated quantize its scale and clip bounds.

Weights (kind WEIGHT) take the scale of their largest magnitude (``weight_scale``:
``power2`` rounds it up to a power of two, ``max`` keeps it). Other values take
``global_scale`` (``calibrate_mode="global_scale"``), or are measured on a dataset:
the model runs with every simulated quantize made an identity, their inputs are the
outputs (:func:`collect_stats`), and each gets the KL-optimal threshold
(``kl_divergence``) or the 99.999th percentile of its magnitudes (``percentile``).
A value of ``nbit`` signed bits with threshold ``t`` gets ``dom_scale = t / 2**(nbit-1)``
and clip bounds ``±(2**(nbit-1) - 1)``.

>>> power2_scale(np.array([0.3, -0.7])), max_scale(np.array([0.3, -0.7]))
(1.0, 0.7)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from relaykit.errors import ArgumentError
from relaykit.execution.build_module import build_graph
from relaykit.ir.analysis import free_vars
from relaykit.ir.expr import Call, Constant, Expr, Function, Tuple, Var, const
from relaykit.ir.functor import post_order, rewrite_post_order
from relaykit.ir.module import IRModule
from relaykit.ir.op import get_op
from relaykit.op.relay.quantize import OP_NAME
from relaykit.transform.bind import bind
from relaykit.transform.pass_infra import ModulePass, Pass, PassContext

from .config import QAnnotateKind, current_qconfig, kind2str
from .kl_divergence import find_scale_by_kl

__all__ = [
    "calibrate",
    "collect_stats",
    "create_stats_collector",
    "max_scale",
    "percentile_scale",
    "power2_scale",
]

ScaleFunc = Callable[[Call], float]


def power2_scale(values: np.ndarray) -> float:
    """The largest magnitude rounded up to a power of two (1.0 for all zeros)."""
    top = float(np.max(np.abs(values))) if np.size(values) else 0.0
    return float(2.0 ** math.ceil(math.log2(top))) if top > 0 else 1.0


def max_scale(values: np.ndarray) -> float:
    """The largest magnitude."""
    return float(np.max(np.abs(values)))


def percentile_scale(values: np.ndarray, percentile: float = 0.99999) -> float:
    """The magnitude below which ``percentile`` of the values lie."""
    x = np.abs(np.asarray(values).reshape(-1))
    k = int(x.size * percentile)
    return float(np.partition(x, k)[k])


def _is_sq(node: Expr) -> bool:
    return type(node) is Call and node.op is get_op(OP_NAME)


def create_stats_collector(func: Function) -> Function:
    """``func`` with every simulated quantize an identity, returning the tuple of the
    inputs of those that are not weights, in post-order (TVM's ``CreateStatsCollector``)."""
    profiled: list[Expr] = []
    zero = const(0.0, "float32")

    def post(new: Expr, old: Expr) -> Expr | None:
        if not _is_sq(new):
            return None
        assert isinstance(new, Call)
        identity = Call(
            new.op,
            [new.args[0], zero, zero, zero],
            new.attrs.with_updates(kind=QAnnotateKind.IDENTITY),
        )
        if new.attrs.kind != QAnnotateKind.WEIGHT:
            profiled.append(identity)
        return identity

    rewrite_post_order(func.body, post)
    body = Tuple(profiled)
    return Function(free_vars(body), body)


def collect_stats(
    mod: IRModule, dataset: Iterable[Mapping[str, Any]], chunk_by: int = -1
) -> Iterator[list[np.ndarray]]:
    """Run the stats collector of ``mod["main"]`` on each batch of ``dataset``; yield, per
    chunk of ``chunk_by`` profiled values (all at once for -1), each value's samples
    flattened and concatenated over the batches."""
    if dataset is None:
        raise ArgumentError(
            f"calibrate_mode={current_qconfig().calibrate_mode!r} measures the model: pass "
            "dataset=[{input_name: array}, ...] to relay.quantize.quantize"
        )
    batches = list(dataset)
    if not batches:
        raise ArgumentError("the calibration dataset is empty; give at least one batch")
    stats = create_stats_collector(mod["main"])
    runtime = build_graph(IRModule.from_expr(stats), target="llvm").create()
    inputs = {p.name_hint for p in stats.params}
    num = runtime.get_num_outputs()
    step = num if chunk_by is None or chunk_by <= 0 else int(chunk_by)
    for start in range(0, num, max(step, 1)):
        stop = min(start + step, num)
        samples: list[list[np.ndarray]] = [[] for _ in range(start, stop)]
        for batch in batches:
            # names the profiled values do not read are ignored, as TVM's set_input does
            runtime.set_input(**{k: v for k, v in _names(batch).items() if k in inputs})
            runtime.run()
            for j in range(start, stop):
                samples[j - start].append(runtime.get_output(j).numpy().reshape(-1))
        yield [np.concatenate(s) for s in samples]


def _names(batch: Mapping[Any, Any]) -> dict[str, Any]:
    return {(k.name_hint if isinstance(k, Var) else str(k)): v for k, v in batch.items()}


def _measured(mod: IRModule, dataset: Any, fn: Callable[[np.ndarray], float]) -> ScaleFunc:
    scales: list[float] = []
    for chunk in collect_stats(mod, dataset, current_qconfig().calibrate_chunk_by):
        scales.extend(fn(samples) for samples in chunk)
    it = iter(scales)
    return lambda call: next(it)


def _input_scale_func(mod: IRModule, dataset: Any) -> ScaleFunc:
    mode = current_qconfig().calibrate_mode
    if mode == "kl_divergence":
        dtype = current_qconfig().dtype_input
        return _measured(mod, dataset, lambda a: find_scale_by_kl(a, dtype))
    if mode == "percentile":
        return _measured(mod, dataset, percentile_scale)
    scale = current_qconfig().global_scale
    return lambda call: scale


def _weight_scale_func() -> ScaleFunc:
    fn = power2_scale if current_qconfig().weight_scale == "power2" else max_scale

    def weight(call: Call) -> float:
        data = call.args[0]
        if type(data) is not Constant:
            raise ArgumentError(
                "quantize calibrate: a weight is not a constant; pass the weights as params "
                "to relay.quantize.quantize (or bind them) so they can be scaled"
            )
        return fn(data.data.numpy())

    return weight


def _checked_scale(scale: float, kind: int) -> float:
    """``scale``, or a stand-in when the value was all zeros (any scale represents zero
    exactly: 1.0 for a weight, ``global_scale`` for a measured value); TVM divided by
    zero here."""
    if not math.isfinite(scale) or scale < 0:
        raise ArgumentError(
            f"quantize calibrate: a {kind2str(kind)} value got the scale {scale!r}; the "
            "calibration data or the weights hold inf or NaN"
        )
    if scale > 0:
        return scale
    return 1.0 if kind == QAnnotateKind.WEIGHT else current_qconfig().global_scale


def calibrate_module(mod: IRModule, dataset: Any = None) -> IRModule:
    """``mod`` with the scale and clip parameters of its simulated quantizes bound."""
    cfg = current_qconfig()
    main = mod["main"]
    input_scale = _input_scale_func(mod, dataset)
    weight_scale = _weight_scale_func()
    binds: dict[Var, Expr] = {}
    for node in post_order(main.body):
        if not _is_sq(node):
            continue
        assert isinstance(node, Call)
        kind = int(node.attrs.kind)
        if kind == QAnnotateKind.IDENTITY:
            continue
        scale = _checked_scale(
            weight_scale(node) if kind == QAnnotateKind.WEIGHT else input_scale(node), kind
        )
        valid_range = 2.0 ** (cfg.get_nbit_by_kind(kind) - int(bool(node.attrs.sign)))
        for var, value in zip(
            node.args[1:4], (scale / valid_range, -(valid_range - 1), valid_range - 1), strict=True
        ):
            if isinstance(var, Var):
                binds[var] = const(np.float32(value), "float32")
    out = mod.copy()
    out["main"] = bind(main, binds)
    return out


def calibrate(dataset: Any = None) -> Callable[[IRModule, PassContext], IRModule]:
    """TVM's ``relay.quantize.calibrate(dataset)``: the module-pass function that sets
    the scales (wrap it with ``tvm.transform.module_pass``, or use :func:`calibrate_pass`)."""

    def run(mod: IRModule, ctx: PassContext) -> IRModule:
        return calibrate_module(mod, dataset)

    return run


def calibrate_pass(dataset: Any = None) -> Pass:
    """The pass ``QuantizeCalibrate``."""
    return ModulePass(calibrate(dataset), 1, "QuantizeCalibrate")
