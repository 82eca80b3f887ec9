"""``tvm._ffi``: where TVM's scripts find ``TVMError`` (``tvm._ffi.base.TVMError``) and
the global-function registry (``tvm._ffi.get_global_func``, ``register_func``).

relaykit has no foreign-function layer; this package only holds the names TVM
code reaches through it.

>>> callable(get_global_func("relay.ext.ccompiler"))
True
"""

from relaykit._ffi import base
from relaykit.runtime.registry import get_global_func, list_global_func_names, register_func

__all__ = ["base", "get_global_func", "list_global_func_names", "register_func"]
