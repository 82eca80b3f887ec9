"""What torch.ao stores in a quantized TorchScript module, read into NumPy: quantized
tensors (``QInt8``/``QUInt8`` attributes) and the packed weights of quantized
convolutions and linear layers (``__torch__.torch.classes.quantized.*PackedParamsBase``
objects, unpacked with their own ``unpack``/``stride``/... methods).

>>> PACKED_PREFIX
'__torch__.torch.classes.quantized.'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relaykit.errors import FrontendError
from relaykit.ir.expr import Expr

from .quantized import PackedParams, QTensor, torch_qdtype
from .registry import tensor_to_numpy

__all__ = ["PACKED_PREFIX", "qtensor_parts", "quantized_tensor", "unpack_params"]

#: the TorchScript class names of torch's packed quantized weights start so
PACKED_PREFIX = "__torch__.torch.classes.quantized."


def qtensor_parts(t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, str]:
    """A torch quantized tensor as (integers, scale, zero point, axis, dtype); scale and
    zero point are scalars (per tensor) or 1-D along ``axis`` (per channel)."""
    dtype = torch_qdtype(t.dtype)
    if dtype is None:
        raise FrontendError(f"unsupported quantized dtype {t.dtype} (quint8, qint8, qint32 are)")
    ints = t.int_repr().numpy().astype(dtype)
    scheme = str(t.qscheme())
    if "per_channel" in scheme:
        scale = t.q_per_channel_scales().numpy().astype("float32")
        zp = t.q_per_channel_zero_points().numpy().astype("int32")
        return ints, scale, zp, int(t.q_per_channel_axis()), dtype
    if "per_tensor" not in scheme:
        raise FrontendError(f"unsupported quantization scheme {scheme}")
    return ints, np.float32(t.q_scale()), np.int32(t.q_zero_point()), -1, dtype


def quantized_tensor(t: Any, make_param: Callable[[np.ndarray], Expr]) -> QTensor:
    """A quantized tensor attribute as a :class:`QTensor` over an integer parameter."""
    ints, scale, zp, axis, dtype = qtensor_parts(t)
    return QTensor(make_param(ints), np.asarray(scale), np.asarray(zp), dtype, axis)


def _call(obj: Any, name: str) -> Any:
    return getattr(obj, name)() if obj._has_method(name) else None


def unpack_params(
    obj: Any, make_param: Callable[[str, np.ndarray], Expr], keep_quantized_weight: bool
) -> PackedParams:
    """A ``*PackedParamsBase`` object as :class:`PackedParams`."""
    name = obj._type().name() if hasattr(obj, "_type") else type(obj).__name__
    if not obj._has_method("unpack"):
        raise FrontendError(f"the packed weights {name} have no unpack method")
    weight, bias = obj.unpack()
    if not getattr(weight, "is_quantized", False):
        raise FrontendError(
            f"{name} holds float weights ({weight.dtype}): fp16 packed weights are not supported"
        )
    ints, scale, zp, axis, dtype = qtensor_parts(weight)
    if dtype != "int8":
        raise FrontendError(f"{name}: the weight is {dtype}; relaykit takes qint8 weights")
    b = None if bias is None else tensor_to_numpy(bias).astype("float32")
    common: dict[str, Any] = {
        "weight": ints,
        "w_scale": scale,
        "w_zero_point": zp,
        "w_axis": max(axis, 0),
        "bias": b,
        "make_param": make_param,
        "keep_quantized_weight": keep_quantized_weight,
        "weight_shape": tuple(ints.shape),
    }
    if "Conv" not in name:
        return PackedParams(kind="linear", **common)
    if ints.ndim != 4:
        raise FrontendError(f"{name}: only 2-d quantized convolutions are supported")
    return PackedParams(
        kind="conv",
        stride=tuple(int(v) for v in _call(obj, "stride")),
        padding=tuple(int(v) for v in _call(obj, "padding")),
        dilation=tuple(int(v) for v in _call(obj, "dilation")),
        output_padding=tuple(int(v) for v in (_call(obj, "output_padding") or (0, 0))),
        groups=int(_call(obj, "groups")),
        transposed=bool(_call(obj, "transpose")),
        **common,
    )
