"""``tvm.relay.debug``: in TVM, the hook that drops the interpreter into a Python
debugger; it has no public names and relaykit has no such hook (use ``breakpoint()``
in a Python function called from your script)."""

__all__: list[str] = []
