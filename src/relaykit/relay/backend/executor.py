"""``tvm.relay.backend.executor``: which executor a build targets.

>>> Executor("graph").name
'graph'
"""

from __future__ import annotations

from typing import ClassVar

from ._options import KindWithOptions

__all__ = ["Executor"]


class Executor(KindWithOptions):
    """TVM's ``Executor``: ``graph`` (what ``relay.build`` makes here) or ``aot``."""

    what: ClassVar[str] = "executor"
    kinds: ClassVar = {
        "graph": {"link-params": (bool, False)},
        "aot": {
            "link-params": (bool, False),
            "unpacked-api": (bool, False),
            "interface-api": (str, "packed"),
            "workspace-byte-alignment": (int, 16),
            "constant-byte-alignment": (int, 16),
        },
    }
