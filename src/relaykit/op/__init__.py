"""Operators: definitions (type relation + reference kernel) and constructors.

Importing this package registers every operator. Constructors have TVM's
names and signatures: ``relaykit.op.add``, ``relaykit.op.reshape``,
``relaykit.op.nn.conv2d``, ``relaykit.op.annotation.compiler_begin``...
The submodules ``tensor``, ``transform`` and ``reduce`` are attributes but are
left out of ``__all__``, so ``from relaykit.op import *`` (as ``relay`` does)
cannot shadow ``relay.transform``, the passes.

>>> from relaykit import op
>>> op.get("nn.conv2d").get_attr("TOpPattern") == op.OpPattern.OUT_ELEMWISE_FUSABLE
True
"""

from relaykit.ir.op import get_op as get
from relaykit.ir.op import register_op_attr

from . import _make as _make  # TVM's relay.op._make (raw constructors)
from . import annotation, dyn, image, nn  # dyn: the dynamic operators (relay.op.dyn)
from . import device as device
from . import indexing as indexing
from . import linalg as linalg
from . import masking as masking
from . import memory as memory  # memory.alloc_storage, alloc_tensor, kill
from . import ml as ml
from . import moments as moments
from . import op as op  # TVM's relay.op.op: defining operators, register_* helpers
from . import random as random  # relay.random: the threefry operators
from . import reduce as reduce  # submodules, kept out of __all__
from . import relay as relay  # relay.op.annotation.simulated_quantize (automatic quantization)
from . import shape_ops as shape_ops  # shape_of, arange, argwhere, one_hot
from . import signal as signal
from . import sparse as sparse
from . import tensor as tensor
from . import transform as transform
from . import vision as vision
from . import vm as vm  # vm.shape_of, vm.reshape_tensor
from .debug import debug
from .define import OpPattern, TypeRelError, define_op, make_call
from .device import device_copy, on_device
from .indexing import *  # noqa: F403
from .indexing import __all__ as _indexing_all
from .layout import layout_transform
from .linalg import *  # noqa: F403
from .linalg import __all__ as _linalg_all
from .masking import *  # noqa: F403
from .masking import __all__ as _masking_all
from .moments import *  # noqa: F403
from .moments import __all__ as _moments_all
from .op import register_alter_op_layout as register_alter_op_layout
from .op import register_broadcast_schedule as register_broadcast_schedule
from .op import register_compute as register_compute
from .op import register_convert_op_layout as register_convert_op_layout
from .op import register_gradient as register_gradient
from .op import register_infer_correct_layout as register_infer_correct_layout
from .op import register_injective_schedule as register_injective_schedule
from .op import register_legalize as register_legalize
from .op import register_mixed_precision_conversion as register_mixed_precision_conversion
from .op import register_pattern as register_pattern
from .op import register_reduce_schedule as register_reduce_schedule
from .op import register_shape_func as register_shape_func
from .op import register_stateful as register_stateful
from .reduce import *  # noqa: F403
from .reduce import __all__ as _reduce_all
from .shape_func import register_default_shape_funcs
from .shape_like import *  # noqa: F403
from .shape_like import __all__ as _shape_like_all
from .shape_ops import *  # noqa: F403
from .shape_ops import __all__ as _shape_ops_all
from .signal import *  # noqa: F403
from .signal import __all__ as _signal_all
from .sparse import *  # noqa: F403
from .sparse import __all__ as _sparse_all
from .tensor import *  # noqa: F403
from .tensor import __all__ as _tensor_all
from .transform import *  # noqa: F403
from .transform import __all__ as _transform_all

register_default_shape_funcs()  # every op gets an FShapeFunc (issue 12; op/shape_func.py)

__all__ = [
    "get",
    "register_op_attr",
    "OpPattern",
    "TypeRelError",
    "define_op",
    "make_call",
    "nn",
    "annotation",
    "image",
    "vision",
    "dyn",
    *_shape_ops_all,
    *_tensor_all,
    *_indexing_all,
    *_linalg_all,
    *_masking_all,
    *_transform_all,
    *_reduce_all,
    *_moments_all,
    *_shape_like_all,
    *_sparse_all,
    *_signal_all,
    "layout_transform",
    "device_copy",
    "on_device",
    "debug",
]
