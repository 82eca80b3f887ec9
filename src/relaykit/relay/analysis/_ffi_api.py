"""``tvm.relay.analysis._ffi_api``: the analysis entry points TVM exposes through its FFI.

>>> solver = _test_type_solver()
>>> callable(solver("Solve"))
True
"""

from relaykit.transform.type_solver import TypeSolver

__all__ = ["_test_type_solver"]


def _test_type_solver() -> TypeSolver:
    """A fresh :class:`~relaykit.transform.type_solver.TypeSolver` (TVM's test entry point)."""
    return TypeSolver()
