"""``tvm.instrument``: the pass instruments, at TVM's top-level name.

>>> import relaykit
>>> relaykit.instrument.PassInstrument is relaykit.ir.instrument.PassInstrument
True
"""

from __future__ import annotations

from relaykit.ir.instrument import (
    PassInstrument,
    PassPrintingInstrument,
    PassTimingInstrument,
    PrintAfterAll,
    PrintBeforeAll,
    pass_instrument,
)

__all__ = [
    "PassInstrument",
    "PassPrintingInstrument",
    "PassTimingInstrument",
    "PrintAfterAll",
    "PrintBeforeAll",
    "pass_instrument",
]
