"""``tvm.relay.parser``: Relay's text format parser (:mod:`relaykit.parser`).

>>> print(parse_expr("1f"))
1f
"""

from relaykit.parser import fromtext, parse, parse_expr

__all__ = ["fromtext", "parse", "parse_expr"]
