"""``tvmc.transform``: TVMC's graph transforms (mixed precision, layout) on a module.

``apply_graph_transforms(mod, args)`` applies the transforms a ``tvmc compile``
option dict asks for: ``desired_layout`` (and ``desired_layout_ops``) converts
the layouts of those operators; ``mixed_precision`` converts
``mixed_precision_ops`` (default conv2d and dense) to
``mixed_precision_calculation_type``, accumulating in
``mixed_precision_acc_type``, keeping the model's output dtype.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 4), dtype="float32")
>>> w = relay.const([[1.0] * 4] * 2)
>>> mod = relay.transform.InferType()(relay.IRModule.from_expr(relay.nn.dense(x, w)))
>>> out = apply_graph_transforms(mod, {"mixed_precision": True,
...     "mixed_precision_calculation_type": "float16", "mixed_precision_acc_type": "float32"})
>>> "float16" in str(out), str(out["main"].ret_type)
(True, 'Tensor[(1, 2), float32]')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from relaykit import transform as passes
from relaykit.ir.module import IRModule
from relaykit.ir.op import default_registry
from relaykit.transform.mixed_precision import MIXED_PRECISION_ALWAYS, ToMixedPrecision
from relaykit.transform.pass_infra import PassContext, Sequential

from .model import TVMCException

__all__ = [
    "apply_graph_transforms",
    "convert_to_mixed_precision",
    "convert_graph_layout",
    "parse_graph_transform_args",
]

_RULE = "FTVMMixedPrecisionConversionType"
_TRANSFORM_ARGS = (
    "desired_layout",
    "desired_layout_ops",
    "mixed_precision",
    "mixed_precision_ops",
    "mixed_precision_calculation_type",
    "mixed_precision_acc_type",
)


def _always(acc_dtype: str) -> Callable[[Any, str], list[Any]]:
    def rule(call: Any, mixed_type: str) -> list[Any]:
        return [MIXED_PRECISION_ALWAYS, acc_dtype, mixed_type]

    return rule


@contextmanager
def _always_convert(ops: Sequence[str], acc_dtype: str) -> Iterator[None]:
    """Within the block, ``ops`` always convert and accumulate in ``acc_dtype``."""
    saved = {op: default_registry.attr_entry(op, _RULE) for op in ops}
    try:
        for op in ops:
            default_registry.reset_attr(op, _RULE)
            default_registry.set_attr(op, _RULE, _always(acc_dtype))
        yield
    finally:
        for op, entry in saved.items():
            default_registry.restore_attr(op, _RULE, entry)


def convert_to_mixed_precision(
    mod: IRModule,
    ops: Sequence[str] | None = None,
    calculation_type: str = "float16",
    acc_type: str = "float16",
) -> IRModule:
    """``ops`` computed in ``calculation_type``, accumulated in ``acc_type``."""
    ops = list(ops) if ops is not None else ["nn.conv2d", "nn.dense"]
    for op in ops:
        if op not in default_registry:
            raise TVMCException(f"mixed precision: {op!r} is not an operator")
    seq = Sequential([passes.InferType(), ToMixedPrecision(calculation_type)])
    config = {"relay.ToMixedPrecision.keep_orig_output_dtype": True}
    with _always_convert(ops, acc_type), PassContext(opt_level=3, config=config):
        try:
            return seq(mod)
        except Exception as err:
            raise TVMCException(f"Error converting mixed precision: {err}") from err


def convert_graph_layout(
    mod: IRModule, desired_layouts: str | Sequence[str], ops: Sequence[str] | None = None
) -> IRModule:
    """Convert ``ops`` (default the convolutions) to ``desired_layouts``
    (``"NHWC"`` or ``"NHWC:HWIO"``; one for all, or one per operator)."""
    ops = list(ops) if ops is not None else ["nn.conv2d", "nn.conv2d_transpose", "qnn.conv2d"]
    layouts = [desired_layouts] if isinstance(desired_layouts, str) else list(desired_layouts)
    if len(layouts) == 1:
        layouts *= len(ops)
    if len(layouts) != len(ops):
        raise TVMCException(f"expected 1 or {len(ops)} layouts, got {len(layouts)}")
    desired = {
        op: (layout.split(":", 1) if ":" in layout else [layout, "default"])
        for op, layout in zip(ops, layouts, strict=True)
    }
    convert_layout = getattr(passes, "ConvertLayout", None)
    if convert_layout is None:
        raise TVMCException("desired_layout needs the ConvertLayout pass, which is missing")
    seq = Sequential(
        [passes.RemoveUnusedFunctions(), convert_layout(desired), passes.FoldConstant()]
    )
    try:
        return seq(mod)
    except Exception as err:
        raise TVMCException(f"Error converting layouts: {err}") from err


def apply_graph_transforms(mod: IRModule, args: Mapping[str, Any] | None) -> IRModule:
    """Apply the layout and mixed-precision transforms that ``args`` ask for."""
    if not args:
        return mod
    if args.get("desired_layout"):
        mod = convert_graph_layout(mod, args["desired_layout"], args.get("desired_layout_ops"))
    if args.get("mixed_precision"):
        mod = convert_to_mixed_precision(
            mod,
            args.get("mixed_precision_ops"),
            args.get("mixed_precision_calculation_type") or "float16",
            args.get("mixed_precision_acc_type") or "float16",
        )
    return mod


def parse_graph_transform_args(args: Any) -> dict[str, Any]:
    """The graph-transform options of an argparse namespace or dict."""
    values = args if isinstance(args, Mapping) else vars(args)
    return {key: values.get(key) for key in _TRANSFORM_ARGS}
