"""The built-in ``FTVMConvertOpLayout`` hooks: an operator with a layout attribute
rewritten into the layouts ``ConvertLayout`` asks for.

A hook is ``hook(attrs, inputs, tinfos, desired_layouts) -> Expr | None``; ``tinfos``
are the input types, ``desired_layouts`` the strings given for the operator
(``"default"`` for a kernel picks the kernel layout that goes with the data layout).
A hook registered with ``relay.op.register_convert_op_layout`` takes precedence.

>>> sorted(BUILTIN_HOOKS)[:3]
['image.resize1d', 'image.resize2d', 'image.resize3d']
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from relaykit.errors import ArgumentError
from relaykit.ir.expr import Call, Expr
from relaykit.ir.op import default_registry

__all__ = ["BUILTIN_HOOKS", "LayoutConfig", "convert_hook", "is_depthwise"]

ConvertHook = Callable[[Any, list[Expr], list[Any], Sequence[str]], "Expr | None"]
BUILTIN_HOOKS: dict[str, ConvertHook] = {}

_CURRENT = threading.local()


class LayoutConfig:
    """``relay.transform.LayoutConfig(skip_layers=[0, 2])``: inside ``with``, the
    convolutions counted in ``skip_layers`` (0 the first one converted) keep their layout.

    >>> with LayoutConfig(skip_layers=[0]) as cfg:
    ...     cfg.check_skip(), cfg.check_skip()
    (True, False)
    """

    #: the innermost active config (TVM's class attribute; :meth:`current_config` is the
    #: same per thread)
    current: LayoutConfig | None = None

    def __init__(self, skip_layers: Sequence[int] | None = None) -> None:
        self.skip_counter = 0
        self.skip_layers = list(skip_layers) if skip_layers is not None else []

    @classmethod
    def current_config(cls) -> LayoutConfig | None:
        """The innermost active config, if any."""
        return getattr(_CURRENT, "config", None)

    def check_skip(self) -> bool:
        """Whether the next layer is skipped (and count it)."""
        skip = self.skip_counter in self.skip_layers
        self.skip_counter += 1
        return skip

    def reset(self) -> None:
        """Forget the count and the layers to skip."""
        self.skip_counter = 0
        self.skip_layers = []

    def __enter__(self) -> LayoutConfig:
        self._old = getattr(_CURRENT, "config", None)
        self._old_class = LayoutConfig.current
        _CURRENT.config = self
        LayoutConfig.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.config = self._old
        LayoutConfig.current = self._old_class


def convert_hook(op_name: str) -> ConvertHook | None:
    """The hook of ``op_name``: a registered one first, else the built-in one."""
    fn = default_registry.get_attr(op_name, "FTVMConvertOpLayout")
    if callable(fn):
        return fn
    return BUILTIN_HOOKS.get(op_name)


def _hook(*names: str) -> Callable[[ConvertHook], ConvertHook]:
    def wrap(fn: ConvertHook) -> ConvertHook:
        for n in names:
            BUILTIN_HOOKS[n] = fn
        return fn

    return wrap


def _call(name: str, inputs: Sequence[Expr], attrs: Any, **updates: Any) -> Call:
    return Call(default_registry.get(name), list(inputs), attrs.with_updates(**updates))


def is_depthwise(
    data_shape: Sequence[Any],
    data_layout: str,
    kernel_shape: Sequence[Any],
    kernel_layout: str,
    groups: int,
) -> bool:
    """Whether a 2-D convolution is depthwise: one group per input channel."""
    ic = data_shape[data_layout.index("C")]
    ki = kernel_shape[kernel_layout.index("I")]
    return bool(groups > 1 and ic == groups and ki == 1)


def _desired_pair(name: str, desired: Sequence[str]) -> tuple[str, str]:
    if len(desired) != 2:
        raise ArgumentError(
            f"ConvertLayout: {name} needs two desired layouts (data and kernel), got "
            f"{list(desired)}; use 'default' for the kernel to pick the usual one"
        )
    data, kernel = str(desired[0]), str(desired[1])
    if data == "default":
        raise ArgumentError(f"ConvertLayout: the data layout of {name} cannot be 'default'")
    return data, kernel


def _unsupported(name: str, layout: str) -> ArgumentError:
    return ArgumentError(
        f"ConvertLayout: {name} has no default kernel layout for data layout {layout}; "
        "give the kernel layout explicitly"
    )


def _skip() -> bool:
    cfg = LayoutConfig.current_config()
    return cfg is not None and cfg.check_skip()


@_hook("nn.conv2d")
def convert_conv2d(
    attrs: Any, inputs: list[Expr], tinfos: list[Any], desired: Sequence[str]
) -> Expr:
    """``nn.conv2d`` into NCHW/OIHW, NHWC/HWIO (HWOI if depthwise), HWNC/HWOI or NCHWxc."""
    if _skip():
        return _call("nn.conv2d", inputs, attrs)
    data_l, kernel_l = _desired_pair("nn.conv2d", desired)
    tile = re.fullmatch(r"NCHW(\d*)c", data_l)
    if kernel_l != "default" and not tile:
        return _call("nn.conv2d", inputs, attrs, data_layout=data_l, kernel_layout=kernel_l)
    if data_l == "NCHW":
        kernel_l = "OIHW"
    elif data_l == "NHWC":
        dw = is_depthwise(
            tinfos[0].shape,
            attrs.data_layout,
            tinfos[1].shape,
            attrs.kernel_layout,
            int(attrs.groups),
        )
        kernel_l = "HWOI" if dw else "HWIO"
    elif data_l == "HWNC":
        kernel_l = "HWOI"
    elif tile:
        if kernel_l == "default":
            raise ArgumentError(
                "ConvertLayout: the kernel layout of a blocked nn.conv2d cannot be 'default'"
            )
        block = int(tile.group(1) or 1)
        channels = tinfos[0].shape[attrs.data_layout.index("C")]
        if isinstance(channels, int) and channels % block:
            return _call("nn.conv2d", inputs, attrs)
        return _call(
            "nn.contrib_conv2d_NCHWc", inputs, attrs, data_layout=data_l, kernel_layout=kernel_l
        )
    else:
        raise _unsupported("nn.conv2d", data_l)
    return _call("nn.conv2d", inputs, attrs, data_layout=data_l, kernel_layout=kernel_l)


def _simple_conv(name: str, defaults: dict[str, str], skip: bool = False) -> ConvertHook:
    def hook(attrs: Any, inputs: list[Expr], tinfos: list[Any], desired: Sequence[str]) -> Expr:
        if skip and _skip():
            return _call(name, inputs, attrs)
        data_l, kernel_l = _desired_pair(name, desired)
        if kernel_l == "default":
            if data_l not in defaults:
                raise _unsupported(name, data_l)
            kernel_l = defaults[data_l]
        return _call(name, inputs, attrs, data_layout=data_l, kernel_layout=kernel_l)

    hook.__doc__ = f"``{name}`` into the desired layouts (defaults {defaults})."
    return hook


BUILTIN_HOOKS["nn.conv2d_transpose"] = _simple_conv(
    "nn.conv2d_transpose", {"NCHW": "IOHW", "NHWC": "HWIO"}
)
BUILTIN_HOOKS["nn.conv3d"] = _simple_conv("nn.conv3d", {"NCDHW": "OIDHW", "NDHWC": "DHWIO"}, True)
BUILTIN_HOOKS["nn.conv3d_transpose"] = _simple_conv(
    "nn.conv3d_transpose", {"NCDHW": "IODHW", "NDHWC": "DHWOI"}
)
BUILTIN_HOOKS["nn.deformable_conv2d"] = _simple_conv(
    "nn.deformable_conv2d", {"NCHW": "OIHW", "NHWC": "HWIO"}, True
)
BUILTIN_HOOKS["qnn.conv2d"] = _simple_conv("qnn.conv2d", {"NCHW": "OIHW", "NHWC": "HWIO"})
BUILTIN_HOOKS["qnn.conv2d_transpose"] = _simple_conv(
    "qnn.conv2d_transpose", {"NCHW": "IOHW", "NHWC": "HWIO"}
)


def _pool(name: str) -> ConvertHook:
    def hook(attrs: Any, inputs: list[Expr], tinfos: list[Any], desired: Sequence[str]) -> Expr:
        lay = str(desired[0])
        return _call(name, inputs, attrs, layout=lay, out_layout=lay)

    hook.__doc__ = f"``{name}`` in the desired layout (input and output)."
    return hook


for _name in (
    "nn.max_pool2d", "nn.avg_pool2d", "nn.global_max_pool2d", "nn.global_avg_pool2d",
    "qnn.avg_pool2d",
):  # fmt: skip
    BUILTIN_HOOKS[_name] = _pool(_name)


def _layout_only(name: str) -> ConvertHook:
    def hook(attrs: Any, inputs: list[Expr], tinfos: list[Any], desired: Sequence[str]) -> Expr:
        return _call(name, inputs, attrs, layout=str(desired[0]))

    hook.__doc__ = f"``{name}`` in the desired layout."
    return hook


for _name in ("image.resize1d", "image.resize2d", "image.resize3d"):
    BUILTIN_HOOKS[_name] = _layout_only(_name)


@_hook("vision.roi_align")
def convert_roi_align(
    attrs: Any, inputs: list[Expr], tinfos: list[Any], desired: Sequence[str]
) -> Expr:
    """``vision.roi_align`` on NCHW or NHWC data; the boxes keep their layout."""
    data_l, rois_l = _desired_pair("vision.roi_align", desired)
    if rois_l != "default":
        raise ArgumentError("ConvertLayout: the rois layout of vision.roi_align must be 'default'")
    if data_l not in ("NCHW", "NHWC"):
        raise ArgumentError(f"ConvertLayout: vision.roi_align supports NCHW and NHWC, not {data_l}")
    return _call("vision.roi_align", inputs, attrs, layout=data_l)
