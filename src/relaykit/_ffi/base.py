"""``tvm._ffi.base``: ``TVMError`` is :class:`~relaykit.errors.RelayKitError`, the base of
every error relaykit raises, so ``pytest.raises(tvm._ffi.base.TVMError)`` catches them.

>>> py_str(b"relay")
'relay'
"""

from relaykit.errors import RelayKitError

__all__ = ["TVMError", "py_str"]

TVMError = RelayKitError


def py_str(x: bytes | str) -> str:
    """``x`` as text (UTF-8 bytes are decoded)."""
    return x.decode("utf-8") if isinstance(x, bytes) else x
