"""``quantize(mod, params, dataset)``: TVM's automatic quantization, step by step.

prerequisite_optimize (bind ``params``, SimplifyInference, FoldConstant, FoldScaleAxis,
CanonicalizeOps, FoldConstant) → :func:`~.partition.partition` →
:func:`~.annotate.annotate` → :func:`~.calibrate.calibrate` → InferType →
:func:`~.realize.realize` (unless ``do_simulation``) → FoldConstant, in the current
:func:`~.config.qconfig`.

>>> import numpy as np
>>> import relaykit as tvm
>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4, 8, 8))
>>> w = relay.const(np.random.default_rng(0).uniform(-1, 1, (4, 4, 3, 3)).astype("float32"))
>>> body = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), kernel_size=(3, 3)))
>>> from relaykit.quantize.config import qconfig
>>> with qconfig(skip_conv_layers=None):
...     qmod = quantize(tvm.IRModule.from_expr(relay.Function([x], body)))
>>> "int8" in str(qmod)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.module import IRModule
from relaykit.transform import FoldScaleAxis
from relaykit.transform.bind import bind_params_by_name
from relaykit.transform.fold_constant import FoldConstant
from relaykit.transform.infer_type import InferType
from relaykit.transform.legalize import CanonicalizeOps
from relaykit.transform.pass_infra import PassContext, Sequential
from relaykit.transform.simplify_inference import SimplifyInference

from .annotate import annotate
from .calibrate import calibrate_pass
from .config import current_qconfig
from .context import quantize_context
from .conversions import partition_conversions
from .partition import partition
from .realize import realize

__all__ = ["prerequisite_optimize", "quantize"]


def prerequisite_optimize(mod: IRModule, params: Mapping[str, Any] | None = None) -> IRModule:
    """Bind ``params`` into ``main`` and simplify the model for quantization (TVM's
    ``relay.quantize.prerequisite_optimize``; FoldScaleAxis runs at ``opt_level`` 3)."""
    if not isinstance(mod, IRModule):
        raise ArgumentError(
            f"relay.quantize takes an IRModule, got {type(mod).__name__}; "
            "wrap a function with tvm.IRModule.from_expr(...)"
        )
    if params:
        mod = mod.copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    seq = Sequential(
        [
            SimplifyInference(),
            FoldConstant(),
            FoldScaleAxis(),
            CanonicalizeOps(),
            FoldConstant(),
        ]
    )
    return seq(mod)


def quantize(
    mod: IRModule, params: Mapping[str, Any] | None = None, dataset: Any = None
) -> IRModule:
    """``mod`` quantized as the current :func:`qconfig` says (see the module docstring).

    ``dataset`` (a list of ``{input_name: array}``) is needed by the ``kl_divergence``
    and ``percentile`` calibration modes.
    """
    mod = prerequisite_optimize(mod, params)
    cfg = current_qconfig()
    passes = [partition(), annotate(), calibrate_pass(dataset), InferType()]
    if not cfg.do_simulation:
        passes.append(realize())
    passes.append(FoldConstant())
    required = ["QuantizeAnnotate", "QuantizeCalibrate", "QuantizeRealize"]
    outer = PassContext.current()
    ctx = PassContext(
        opt_level=3,
        required_pass=required,
        disabled_pass=outer.disabled_pass,
        config=outer.config,
    )
    with ctx, quantize_context():
        mod = Sequential(passes)(mod)
    if cfg.partition_conversions != "disabled":
        dtypes = {cfg.dtype_input, cfg.dtype_weight, cfg.dtype_activation}
        return partition_conversions(mod, dtypes, cfg.partition_conversions == "fully_integral")
    return mod
