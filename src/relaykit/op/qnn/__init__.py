"""Quantized operators (TVM's ``relay.qnn.op``), one file per family, as the static ones
are: ``qnn.concatenate`` in :mod:`.transform`.

>>> from relaykit import relay
>>> relay.qnn.op.concatenate is concatenate
True
"""

from .transform import concatenate

__all__ = ["concatenate"]
