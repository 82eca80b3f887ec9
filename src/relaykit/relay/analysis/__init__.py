"""TVM's ``relay.analysis``: variable, type-variable, feature and graph analyses.

>>> from relaykit import relay
>>> x = relay.var("x", shape=(2,))
>>> [v.name_hint for v in free_vars(x + x)]
['x']
"""

from relaykit.byoc.annotated_regions import AnnotatedRegionSet
from relaykit.ir.kind_check import check_kind
from relaykit.ir.match_coverage import unmatched_cases
from relaykit.quantize.calibration_data import get_calibration_data
from relaykit.transform.basic_block import check_basic_block_normal_form
from relaykit.transform.call_graph import CallGraph
from relaykit.transform.extract import (
    extract_fused_functions,
    extract_intermdeiate_expr,
    extract_intermediate_expr,
)
from relaykit.transform.fake_quantization import list_fake_quantized_op_freqs
from relaykit.transform.op_count import get_total_mac_number, list_op_freqs

from . import _ffi_api, call_graph, feature
from .analysis import (
    all_type_vars,
    all_vars,
    bound_type_vars,
    bound_vars,
    free_type_vars,
    free_vars,
    post_order_visit,
    well_formed,
)
from .count_layers import count_layers
from .feature import Feature, detect_feature

__all__ = [
    "list_fake_quantized_op_freqs",
    "AnnotatedRegionSet",
    "CallGraph",
    "_ffi_api",
    "check_kind",
    "check_basic_block_normal_form",
    "unmatched_cases",
    "call_graph",
    "extract_fused_functions",
    "extract_intermdeiate_expr",
    "extract_intermediate_expr",
    "get_total_mac_number",
    "list_op_freqs",
    "all_type_vars",
    "all_vars",
    "bound_type_vars",
    "bound_vars",
    "count_layers",
    "get_calibration_data",
    "detect_feature",
    "Feature",
    "feature",
    "free_type_vars",
    "free_vars",
    "post_order_visit",
    "well_formed",
]
