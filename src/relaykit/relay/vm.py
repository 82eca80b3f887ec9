"""``tvm.relay.vm``: compile for the Relay virtual machine (see :mod:`relaykit.backend.vm`)."""

from relaykit.backend.vm import VMCompiler, VMExecutor, compile
from relaykit.runtime.vm import Executable, VirtualMachine

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]
