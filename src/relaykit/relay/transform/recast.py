"""``tvm.relay.transform.recast``: run chosen operators in another dtype by casts around
them (see :mod:`relaykit.transform.recast`). TVM's ``RecastMutator`` (its
implementation class) is not provided: it raises
:class:`~relaykit.errors.UnsupportedFeatureError` when used.

>>> from relaykit import relay
>>> relay.transform.recast is recast
True
"""

from relaykit.relay._facade import NOT_YET, module_getattr, unsupported
from relaykit.transform.recast import recast

_NOT_PROVIDED = ["RecastMutator"]

__all__ = ["recast", *_NOT_PROVIDED]
globals().update(unsupported(__name__, _NOT_PROVIDED, NOT_YET))
__getattr__ = module_getattr(__name__, NOT_YET)
