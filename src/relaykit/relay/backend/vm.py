"""``tvm.relay.backend.vm``: the VM compiler and executor (see :mod:`relaykit.execution.vm`)."""

from relaykit.execution.vm import VMCompiler, VMExecutor, compile
from relaykit.runtime.vm import Executable, VirtualMachine

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]
