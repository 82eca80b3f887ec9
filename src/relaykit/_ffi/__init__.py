"""``tvm._ffi``: where TVM's scripts find ``TVMError`` (``tvm._ffi.base.TVMError``).

relaykit has no foreign-function layer; this package only holds the names TVM
code reaches through it.
"""

from relaykit._ffi import base

__all__ = ["base"]
