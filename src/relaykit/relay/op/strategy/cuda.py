"""``tvm.relay.op.strategy.cuda``: not in relaykit.

In TVM: TVM's cuda operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

from .generic import _NAMES as _GENERIC  # TVM's module re-exports generic's names

_NAMES: list[str] = [
    *_GENERIC,
    "all_class_nms_strategy_cuda",
    "argsort_strategy_cuda",
    "argwhere_strategy_cuda",
    "batch_matmul_strategy_cuda",
    "concatenate_strategy_cuda",
    "conv1d_strategy_cuda",
    "conv1d_transpose_strategy_cuda",
    "conv2d_backward_weight_strategy_cuda",
    "conv2d_strategy_cuda",
    "conv2d_transpose_strategy_cuda",
    "conv2d_winograd_without_weight_transform_strategy_cuda",
    "conv3d_strategy_cuda",
    "conv3d_transpose_strategy_cuda",
    "conv3d_winograd_without_weight_transform_strategy_cuda",
    "correlation_strategy_cuda",
    "cumprod_strategy_cuda",
    "cumsum_strategy_cuda",
    "deformable_conv2d_strategy_cuda",
    "dense_strategy_cuda",
    "dft_strategy_cuda",
    "einsum_strategy_cuda",
    "fast_softmax_strategy_cuda",
    "get_valid_counts_strategy_cuda",
    "invert_permutation_strategy_cuda",
    "judge_winograd",
    "layout_transform_strategy_cuda",
    "log_softmax_strategy_cuda",
    "matmul_strategy_cuda",
    "multibox_prior_strategy_cuda",
    "multibox_transform_loc_strategy_cuda",
    "nms_strategy_cuda",
    "proposal_strategy_cuda",
    "roi_align_strategy_cuda",
    "scatter_elements_cuda",
    "scatter_nd_cuda",
    "schedule_adaptive_pool_cuda",
    "schedule_injective_cuda",
    "schedule_lrn_cuda",
    "schedule_pool_cuda",
    "schedule_pool_grad_cuda",
    "schedule_reduce_cuda",
    "schedule_roi_pool_cuda",
    "schedule_transpose_cuda",
    "searchsorted_strategy_cuda",
    "softmax_strategy_cuda",
    "sort_strategy_cuda",
    "sparse_dense_padded_strategy_cuda",
    "sparse_dense_strategy_cuda",
    "sparse_reshape_strategy_cuda",
    "stft_strategy_cuda",
    "topk_strategy_cuda",
    "unique_strategy_cuda",
]

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
