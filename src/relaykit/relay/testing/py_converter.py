"""``tvm.relay.testing.py_converter``: Relay programs as Python source
(:mod:`relaykit.testing.py_converter`).

>>> from relaykit import relay
>>> run_as_python(relay.Tuple([])).fields
[]
"""

from relaykit.testing.py_converter import (
    OUTPUT_VAR_NAME,
    PROLOGUE,
    PythonConverter,
    run_as_python,
    to_python,
)

__all__ = ["OUTPUT_VAR_NAME", "PROLOGUE", "PythonConverter", "run_as_python", "to_python"]
