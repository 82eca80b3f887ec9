"""TVM's ``relay.analysis``: variable and graph analyses."""

from ..ir.analysis import all_vars, bound_vars, free_vars
from ..ir.functor import post_order_visit

__all__ = ["all_vars", "bound_vars", "free_vars", "post_order_visit"]
