"""relaykit: the Relay IR and its Bring-Your-Own-Codegen flow, in Python."""

__version__ = "0.1.0"
