"""``tvm.micro``: Model Library Format export of ahead-of-time builds.

>>> import relaykit as tvm
>>> from relaykit import relay
>>> from relaykit.relay.backend import Executor, Runtime
>>> x = relay.var("x", shape=(2,))
>>> mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
>>> lib = relay.build(mod, target="c", executor=Executor("aot", {"interface-api": "c"}),
...                   runtime=Runtime("crt"))
>>> tvm.micro.export_model_library_format(lib, "model.tar")  # doctest: +SKIP
"""

from __future__ import annotations

from relaykit.execution.aot import export_model_library_format

__all__ = ["export_model_library_format"]
