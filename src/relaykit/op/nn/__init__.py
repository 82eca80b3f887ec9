"""Neural-network operators (``relay.nn.*``), with TVM's signatures and defaults.

One module per operator family, each holding its operators' attribute schemas, type
relations, reference kernels, input solvers and constructors:

- :mod:`.convolution`: ``conv1d``, ``conv2d``, ``conv3d`` and their transposes;
- :mod:`.deformable_conv2d`: ``deformable_conv2d``;
- :mod:`.pooling`: max, average, global and adaptive pooling, 2-D and 3-D;
- :mod:`.adaptive_pooling`: global and adaptive pooling of 1-D and 3-D data;
- :mod:`.linear`: ``dense``, ``matmul``, ``batch_matmul``, ``bias_add``;
- :mod:`.activation`: ``relu``, ``leaky_relu``, ``prelu``, ``gelu``, ``softmax``,
  ``log_softmax``;
- :mod:`.normalization`: ``batch_norm``, ``layer_norm``, ``instance_norm``, ``group_norm``,
  ``lrn``;
- :mod:`.dropout`: ``dropout``;
- :mod:`.loss`: ``nll_loss``;
- :mod:`.sparse`: ``sparse_dense`` and ``sparse_conv2d`` (a block-sparse weight);
- :mod:`.grad_ops`: ``max_pool2d_grad``, ``avg_pool2d_grad``, ``conv2d_backward_weight``;
- :mod:`.rearrange`: ``pad``, ``batch_flatten`` and the block rearrangements.

:mod:`.geometry` holds the layout, window and output-size helpers the families, the
host kernels and the backends share; :mod:`.operands` what the families ask of their
operands.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(1, 3, 8, 8))
>>> w = relay.var("w", shape=(16, 3, 3, 3))
>>> y = conv2d(x, w, padding=1, channels=16, kernel_size=3)
>>> y.attrs.padding, y.attrs.kernel_size
([1, 1, 1, 1], [3, 3])
>>> batch_norm(y, *[relay.var(n, shape=(16,)) for n in "abcd"])[0].index
0
"""

from __future__ import annotations

from relaykit.ir.expr import Constant  # TVM's relay.nn re-exports it

from .activation import (
    cross_entropy,
    cross_entropy_with_logits,
    fast_softmax,
    gelu,
    leaky_relu,
    log_softmax,
    prelu,
    relu,
    softmax,
)
from .adaptive_pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool3d,
    global_avg_pool1d,
    global_max_pool1d,
)
from .conv2d_nchwc import contrib_conv2d_nchwc
from .convolution import (
    conv1d,
    conv1d_transpose,
    conv2d,
    conv2d_transpose,
    conv3d,
    conv3d_transpose,
)
from .deformable_conv2d import deformable_conv2d
from .dropout import dropout, dropout_raw
from .geometry import get_pad_tuple2d
from .grad_ops import avg_pool2d_grad, conv2d_backward_weight, max_pool2d_grad
from .linear import batch_matmul, bias_add, dense, matmul
from .loss import nll_loss
from .normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    l2_normalize,
    layer_norm,
    lrn,
)
from .pooling import (
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    global_avg_pool2d,
    global_max_pool2d,
    max_pool1d,
    max_pool2d,
    max_pool2d_with_argmax,
    max_pool3d,
)
from .rearrange import (
    batch_flatten,
    batch_to_space_nd,
    depth_to_space,
    pad,
    space_to_batch_nd,
    space_to_depth,
)
from .sparse import sparse_conv2d, sparse_dense
from .upsampling import upsampling, upsampling3d

__all__ = [
    "Constant",
    "conv2d",
    "conv2d_transpose",
    "conv1d",
    "conv1d_transpose",
    "conv3d",
    "conv3d_transpose",
    "contrib_conv2d_nchwc",
    "dense",
    "matmul",
    "batch_matmul",
    "bias_add",
    "relu",
    "leaky_relu",
    "prelu",
    "softmax",
    "log_softmax",
    "fast_softmax",
    "max_pool2d",
    "avg_pool2d",
    "global_avg_pool2d",
    "global_max_pool2d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "global_avg_pool1d",
    "global_max_pool1d",
    "batch_norm",
    "layer_norm",
    "instance_norm",
    "group_norm",
    "dropout",
    "dropout_raw",
    "batch_flatten",
    "pad",
    "get_pad_tuple2d",
    "lrn",
    "l2_normalize",
    "max_pool3d",
    "max_pool2d_with_argmax",
    "avg_pool3d",
    "batch_to_space_nd",
    "deformable_conv2d",
    "depth_to_space",
    "space_to_batch_nd",
    "space_to_depth",
    "gelu",
    "upsampling",
    "upsampling3d",
    "max_pool1d",
    "avg_pool1d",
    "cross_entropy",
    "nll_loss",
    "sparse_conv2d",
    "sparse_dense",
    "max_pool2d_grad",
    "avg_pool2d_grad",
    "conv2d_backward_weight",
    "cross_entropy_with_logits",
]
