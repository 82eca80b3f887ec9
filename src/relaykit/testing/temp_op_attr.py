"""``relay.testing.temp_op_attr``: set an operator attribute for the length of a block.

>>> from relaykit.ir.op import get_op
>>> with TempOpAttr("nn.relu", "target.demo", lambda expr: True):
...     get_op("nn.relu").get_attr("target.demo") is not None
True
>>> get_op("nn.relu").get_attr("target.demo") is None
True
"""

from __future__ import annotations

from typing import Any

from relaykit.ir.op import default_registry

__all__ = ["TempOpAttr"]


class TempOpAttr:
    """Within the ``with`` block, ``op_name``'s ``attr_key`` is ``attr_value``; on exit
    the previous value (and its level), or its absence, is put back."""

    def __init__(self, op_name: str, attr_key: str, attr_value: Any) -> None:
        default_registry.get(op_name)  # an unknown operator fails here, with close names
        self.op_name = op_name
        self.attr_key = attr_key
        self.attr_value = attr_value
        self._saved: tuple[Any, int] | None = None

    def __enter__(self) -> TempOpAttr:
        self._saved = default_registry.attr_entry(self.op_name, self.attr_key)
        default_registry.reset_attr(self.op_name, self.attr_key)
        default_registry.set_attr(self.op_name, self.attr_key, self.attr_value)
        return self

    def __exit__(self, *exc: Any) -> None:
        default_registry.restore_attr(self.op_name, self.attr_key, self._saved)
