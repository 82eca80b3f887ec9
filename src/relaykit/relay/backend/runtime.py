"""``tvm.relay.backend.runtime``: which runtime a build targets.

>>> Runtime("crt", {"system-lib": True})["system-lib"]
True
"""

from __future__ import annotations

from typing import ClassVar

from ._options import KindWithOptions

__all__ = ["Runtime"]


class Runtime(KindWithOptions):
    """TVM's ``Runtime``: ``cpp`` (relaykit's) or ``crt``."""

    what: ClassVar[str] = "runtime"
    kinds: ClassVar = {"cpp": {"system-lib": (bool, False)}, "crt": {"system-lib": (bool, False)}}
