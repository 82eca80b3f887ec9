"""TVM's ``relay.analysis``: variable and graph analyses."""

from relaykit.ir.analysis import all_vars, bound_vars, free_vars
from relaykit.ir.functor import post_order_visit

__all__ = ["all_vars", "bound_vars", "free_vars", "post_order_visit"]
