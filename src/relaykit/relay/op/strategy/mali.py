"""``tvm.relay.op.strategy.mali``: not in relaykit.

In TVM: TVM's mali operator strategies. The module imports so that scripts naming it
load; each of TVM's names here raises :class:`~relaykit.errors.UnsupportedFeatureError`
when used.
"""

from relaykit.relay._facade import SCHEDULES, module_getattr, unsupported

_NAMES: list[str] = [
    "all_class_nms_strategy", "argsort_strategy", "argwhere_strategy",
    "batch_matmul_strategy", "batch_norm_strategy", "bitserial_conv2d_strategy",
    "bitserial_dense_strategy", "concatenate_strategy", "conv1d_strategy",
    "conv1d_transpose_strategy", "conv2d_NCHWc_strategy",
    "conv2d_backward_weight_strategy", "conv2d_gemm_without_weight_transform_strategy",
    "conv2d_strategy", "conv2d_strategy_mali", "conv2d_transpose_strategy",
    "conv2d_winograd_without_weight_transform_strategy",
    "conv2d_winograd_without_weight_transform_strategy_mali", "conv3d_strategy",
    "conv3d_transpose_strategy", "conv3d_winograd_without_weight_transform_strategy",
    "copy_if_identical", "correlation_strategy", "cumprod_strategy", "cumsum_strategy",
    "deformable_conv2d_strategy", "dense_pack_strategy", "dense_strategy",
    "dense_strategy_mali", "depthwise_conv2d_NCHWc_strategy", "dft_strategy",
    "dilation2d_strategy", "einsum_strategy", "fast_softmax_strategy",
    "get_auto_scheduler_rewritten_layout", "get_conv2d_in_channels",
    "get_conv2d_out_channels", "get_meta_schedule_original_shape",
    "get_valid_counts_strategy", "group_conv1d_strategy", "invert_permutation_strategy",
    "is_depthwise_conv2d", "layout_transform_strategy", "log_softmax_strategy", "logger",
    "matmul_strategy", "multibox_prior_strategy", "multibox_transform_loc_strategy",
    "multinomial_strategy", "naive_schedule", "nms_strategy", "normal_strategy",
    "proposal_strategy", "regular_nms_strategy", "roi_align_strategy",
    "scatter_elements_strategy", "scatter_nd_strategy", "schedule_adaptive_pool",
    "schedule_bitpack", "schedule_concatenate", "schedule_conv2d_gemm_weight_transform",
    "schedule_conv2d_winograd_nnpack_weight_transform",
    "schedule_conv2d_winograd_weight_transform",
    "schedule_conv3d_winograd_weight_transform", "schedule_injective", "schedule_lrn",
    "schedule_pad", "schedule_pool", "schedule_pool_grad", "schedule_reduce",
    "schedule_roi_pool", "schedule_sparse_transpose", "schedule_transpose",
    "searchsorted_strategy", "sliding_window_strategy", "softmax_strategy",
    "sort_strategy", "sparse_add_strategy", "sparse_conv2d_strategy",
    "sparse_dense_padded_strategy", "sparse_dense_strategy",
    "sparse_fill_empty_rows_strategy", "sparse_reshape_strategy", "stft_strategy",
    "threefry_generate_strategy", "threefry_split_strategy", "topk_strategy",
    "trilu_strategy", "uniform_strategy", "unique_strategy", "wrap_compute_all_class_nms",
    "wrap_compute_argsort", "wrap_compute_argwhere", "wrap_compute_batch_matmul",
    "wrap_compute_batch_norm", "wrap_compute_bitserial_conv2d",
    "wrap_compute_bitserial_dense", "wrap_compute_concat", "wrap_compute_conv1d",
    "wrap_compute_conv1d_transpose", "wrap_compute_conv2d",
    "wrap_compute_conv2d_backward_weight", "wrap_compute_conv2d_transpose",
    "wrap_compute_conv3d", "wrap_compute_conv3d_transpose", "wrap_compute_correlation",
    "wrap_compute_deformable_conv2d", "wrap_compute_dense", "wrap_compute_dft",
    "wrap_compute_dilation2d", "wrap_compute_einsum", "wrap_compute_get_valid_counts",
    "wrap_compute_group_conv1d", "wrap_compute_invert_permutation",
    "wrap_compute_layout_transform", "wrap_compute_matmul", "wrap_compute_multibox_prior",
    "wrap_compute_multibox_transform_loc", "wrap_compute_multinomial", "wrap_compute_nms",
    "wrap_compute_proposal", "wrap_compute_regular_nms", "wrap_compute_roi_align",
    "wrap_compute_scanop", "wrap_compute_scatter_elements", "wrap_compute_scatter_nd",
    "wrap_compute_searchsorted", "wrap_compute_sliding_window", "wrap_compute_softmax",
    "wrap_compute_sort", "wrap_compute_sparse_add", "wrap_compute_sparse_conv2d",
    "wrap_compute_sparse_dense", "wrap_compute_sparse_fill_empty_rows",
    "wrap_compute_sparse_reshape", "wrap_compute_stft", "wrap_compute_threefry_generate",
    "wrap_compute_threefry_split", "wrap_compute_topk", "wrap_compute_trilu",
    "wrap_compute_uniform", "wrap_compute_unique", "wrap_topi_compute",
    "wrap_topi_schedule",
]  # fmt: skip

__all__ = list(_NAMES)
globals().update(unsupported(__name__, _NAMES, SCHEDULES))
__getattr__ = module_getattr(__name__, SCHEDULES)
