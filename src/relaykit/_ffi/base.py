"""``tvm._ffi.base``: ``TVMError`` is :class:`~relaykit.errors.RelayKitError`, the base of
every error relaykit raises, so ``pytest.raises(tvm._ffi.base.TVMError)`` catches them."""

from relaykit.errors import RelayKitError

__all__ = ["TVMError"]

TVMError = RelayKitError
