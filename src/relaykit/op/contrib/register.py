"""``tvm.relay.op.contrib.register``: where TVM scripts find backends' pattern tables.

>>> from relaykit.op.contrib.register import get_pattern_table
>>> [name for name, *_ in get_pattern_table("dnnl")][:1]
['dnnl.conv2d_bias_sum_relu']
"""

from __future__ import annotations

from . import get_pattern_table, register_pattern_table

__all__ = ["get_pattern_table", "register_pattern_table"]
