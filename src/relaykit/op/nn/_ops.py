"""Registration of the ``nn.*`` operators: schema (TVM's attribute names and
C++ defaults, in TVM's field order), type relation, kernel and fusion pattern.

The C++ defaults matter: the text printer prints only attributes that differ
from them, as TVM does. Where TVM's Python constructor has a different default
(``leaky_relu`` alpha, ``batch_matmul`` transpose_b), the constructor passes
it explicitly, so it shows in printed IR exactly as in TVM.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relaykit.ir.attrs import Attrs
from relaykit.op._numeric import as_out
from relaykit.op._relations import identity_rel
from relaykit.op.define import OpPattern, define_op

from . import _kernels as k
from . import _relations as r

__all__: list[str] = []

_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE

CONV2D_ATTRS = {
    "strides": (1, 1),
    "padding": (0, 0),
    "dilation": (1, 1),
    "groups": 1,
    "channels": None,
    "kernel_size": None,
    "data_layout": "NCHW",
    "kernel_layout": "OIHW",
    "out_layout": "",
    "out_dtype": "",
}

CONV2D_TRANSPOSE_ATTRS = {
    "channels": None,
    "kernel_size": None,
    "strides": (1, 1),
    "output_padding": (0, 0),
    "padding": (0, 0),
    "dilation": (1, 1),
    "groups": 1,
    "data_layout": "NCHW",
    "kernel_layout": "IOHW",
    "out_layout": "",
    "out_dtype": "",
}

POOL2D_ATTRS = {
    "pool_size": None,
    "strides": (1, 1),
    "dilation": (1, 1),
    "padding": (0, 0),
    "layout": "NCHW",
    "out_layout": "",
    "ceil_mode": False,
}

NORM_ATTRS = {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}


define_op(
    "nn.conv2d",
    num_inputs=2,
    attrs=CONV2D_ATTRS,
    attrs_type_key="relay.attrs.Conv2DAttrs",
    type_rel=r.conv2d_rel,
    compute=k.conv2d,
    pattern=_FUSABLE,
    doc="2-D convolution.",
)
define_op(
    "nn.conv2d_transpose",
    num_inputs=2,
    attrs=CONV2D_TRANSPOSE_ATTRS,
    attrs_type_key="relay.attrs.Conv2DTransposeAttrs",
    type_rel=r.conv2d_transpose_rel,
    compute=k.conv2d_transpose,
    pattern=_FUSABLE,
    doc="2-D transposed convolution.",
)
define_op(
    "nn.dense",
    num_inputs=2,
    attrs={"units": None, "out_dtype": ""},
    attrs_type_key="relay.attrs.DenseAttrs",
    type_rel=r.dense_rel,
    compute=k.dense,
    pattern=_FUSABLE,
    doc="data @ weight.T with weight of shape (units, in_features).",
)
define_op(
    "nn.batch_matmul",
    num_inputs=2,
    attrs={"out_dtype": "", "transpose_a": False, "transpose_b": False},
    attrs_type_key="relay.attrs.BatchMatmulAttrs",
    type_rel=r.batch_matmul_rel,
    compute=k.batch_matmul,
    pattern=_FUSABLE,
    doc="Batched matrix product.",
)


def _bias_add(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, bias = inputs
    shape = [1] * data.ndim
    shape[attrs.axis % data.ndim] = bias.shape[0]
    return as_out(data + bias.reshape(shape), data.dtype)


def _prelu(inputs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    data, alpha = inputs
    shape = [1] * data.ndim
    shape[attrs.axis % data.ndim] = alpha.shape[0]
    return as_out(np.where(data > 0, data, data * alpha.reshape(shape)), data.dtype)


define_op(
    "nn.bias_add",
    num_inputs=2,
    attrs={"axis": 1},
    attrs_type_key="relay.attrs.BiasAddAttrs",
    type_rel=r.bias_add_rel,
    compute=_bias_add,
    pattern=OpPattern.BROADCAST,
    doc="Add a 1-D bias along an axis.",
)
define_op(
    "nn.relu",
    num_inputs=1,
    type_rel=identity_rel,
    compute=lambda ins, attrs: as_out(np.maximum(ins[0], 0), ins[0].dtype),
    pattern=OpPattern.ELEMWISE,
    doc="max(data, 0).",
)
define_op(
    "nn.leaky_relu",
    num_inputs=1,
    attrs={"alpha": 0.25},
    attrs_type_key="relay.attrs.LeakyReluAttrs",
    type_rel=r.float_unary_rel,
    compute=lambda ins, attrs: as_out(
        np.where(ins[0] > 0, ins[0], ins[0] * attrs.alpha), ins[0].dtype
    ),
    pattern=OpPattern.ELEMWISE,
    doc="data if data > 0 else alpha * data.",
)
define_op(
    "nn.prelu",
    num_inputs=2,
    attrs={"axis": 1},
    attrs_type_key="relay.attrs.PReluAttrs",
    type_rel=r.prelu_rel,
    compute=_prelu,
    pattern=OpPattern.BROADCAST,
    doc="Leaky ReLU with a learned slope per channel.",
)
for _name, _kernel in (("nn.softmax", k.softmax), ("nn.log_softmax", k.log_softmax)):
    define_op(
        _name,
        num_inputs=1,
        attrs={"axis": -1},
        attrs_type_key="relay.attrs.SoftmaxAttrs",
        type_rel=r.softmax_rel,
        compute=_kernel,
        pattern=OpPattern.OPAQUE,
        doc=f"{_name[3:]} along an axis.",
    )

define_op(
    "nn.max_pool2d",
    num_inputs=1,
    attrs=POOL2D_ATTRS,
    attrs_type_key="relay.attrs.MaxPool2DAttrs",
    type_rel=r.pool2d_rel,
    compute=k.max_pool2d,
    pattern=_FUSABLE,
    doc="2-D max pooling.",
)
define_op(
    "nn.avg_pool2d",
    num_inputs=1,
    attrs={**POOL2D_ATTRS, "count_include_pad": False},
    attrs_type_key="relay.attrs.AvgPool2DAttrs",
    type_rel=r.pool2d_rel,
    compute=k.avg_pool2d,
    pattern=_FUSABLE,
    doc="2-D average pooling.",
)
for _name, _kernel in (
    ("nn.global_avg_pool2d", k.global_avg_pool2d),
    ("nn.global_max_pool2d", k.global_max_pool2d),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"layout": "NCHW", "out_layout": ""},
        attrs_type_key="relay.attrs.GlobalPool2DAttrs",
        type_rel=r.global_pool2d_rel,
        compute=_kernel,
        pattern=_FUSABLE,
        doc="Pool over the whole H x W plane.",
    )
for _name, _kernel in (
    ("nn.adaptive_avg_pool2d", k.adaptive_avg_pool2d),
    ("nn.adaptive_max_pool2d", k.adaptive_max_pool2d),
):
    define_op(
        _name,
        num_inputs=1,
        attrs={"output_size": (), "layout": "NCHW", "out_layout": ""},
        attrs_type_key="relay.attrs.AdaptivePool2DAttrs",
        type_rel=r.adaptive_pool2d_rel,
        compute=_kernel,
        pattern=_FUSABLE,
        doc="Pool to a fixed output size.",
    )

define_op(
    "nn.batch_norm",
    num_inputs=5,
    num_outputs=3,
    attrs=NORM_ATTRS,
    attrs_type_key="relay.attrs.BatchNormAttrs",
    type_rel=r.batch_norm_rel,
    compute=k.batch_norm,
    pattern=OpPattern.OPAQUE,
    doc="Inference batch norm; returns (out, moving_mean, moving_var).",
)
define_op(
    "nn.layer_norm",
    num_inputs=3,
    attrs={**NORM_ATTRS, "axis": -1},
    attrs_type_key="relay.attrs.LayerNormAttrs",
    type_rel=r.layer_norm_rel,
    compute=k.layer_norm,
    pattern=OpPattern.OPAQUE,
    doc="Layer normalisation along an axis.",
)
define_op(
    "nn.dropout",
    num_inputs=1,
    num_outputs=2,
    attrs={"rate": 0.5},
    attrs_type_key="relay.attrs.DropoutAttrs",
    type_rel=r.dropout_rel,
    compute=lambda ins, attrs: (ins[0].copy(), np.ones_like(ins[0])),
    pattern=OpPattern.OPAQUE,
    doc="Dropout; at inference the identity (out, mask).",
)
define_op(
    "nn.batch_flatten",
    num_inputs=1,
    type_rel=r.batch_flatten_rel,
    compute=lambda ins, attrs: ins[0].reshape(ins[0].shape[0], int(np.prod(ins[0].shape[1:]))),
    pattern=OpPattern.INJECTIVE,
    doc="Flatten all but the first axis.",
)
define_op(
    "nn.pad",
    num_inputs=2,
    attrs={"pad_width": None, "pad_mode": "constant"},
    attrs_type_key="relay.attrs.PadAttrs",
    type_rel=r.pad_rel,
    compute=k.pad,
    pattern=OpPattern.INJECTIVE,
    doc="Pad with a scalar (input 1), the edge, or a reflection.",
)

del _name, _kernel
