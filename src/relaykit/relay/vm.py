"""``tvm.relay.vm``: compile for the Relay virtual machine (see :mod:`relaykit.execution.vm`)."""

from relaykit.execution.vm import VMCompiler, VMExecutor, compile
from relaykit.runtime.vm import Executable, VirtualMachine

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]
