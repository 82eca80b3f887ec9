"""relaykit's version, in a module that imports nothing (the artifact writer records it)."""

__version__ = "0.1.0"
