"""``tvm.relay.base``: printing helpers and source locations.

>>> from relaykit import relay
>>> astext(relay.const(1.0)).splitlines()[-1]
'1f'
"""

from relaykit.ir.expr import Span
from relaykit.text.printer import astext
from relaykit.text.spans import SourceName

pretty_print = astext

__all__ = ["Span", "SourceName", "astext", "pretty_print"]
