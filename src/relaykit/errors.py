"""The one exception hierarchy of relaykit.

Every user-facing failure is a subclass of :class:`RelayKitError`, so a caller
can catch everything relaykit raises with one ``except`` clause, or a single
kind precisely.

>>> from relaykit.errors import RelayKitError, RelayTypeError
>>> issubclass(RelayTypeError, RelayKitError)
True
"""

from __future__ import annotations

__all__ = [
    "RelayKitError",
    "IRError",
    "ArgumentError",
    "ImmutableError",
    "IRIndexError",
    "StructuralMismatchError",
    "RelayTypeError",
    "TypeNotInferredError",
    "OpNotFoundError",
    "RegistryKeyError",
    "BackendNotFoundError",
    "BackendError",
    "BackendLoadError",
    "AttrError",
    "ParseError",
    "ExecutionError",
    "MissingDependencyError",
    "BuildError",
    "CodegenError",
    "CompilerNotFoundError",
    "CompileError",
    "BackendExecutionError",
    "FunctionNotFoundError",
    "ArtifactError",
    "ArtifactCorruptError",
    "ArtifactVersionError",
    "FrontendError",
    "UnsupportedOpError",
    "DynamicShapeError",
    "DiagnosticError",
    "UnsupportedFeatureError",
    "UsageError",
    "NativeCodeRefusedError",
    "ArtifactSignatureError",
]


class RelayKitError(Exception):
    """Base class of every error relaykit raises on bad input."""


class IRError(RelayKitError, ValueError):
    """An IR node was built or used incorrectly (wrong field type, bad arity...)."""


class ImmutableError(RelayKitError, AttributeError):
    """An attribute of an immutable object (an IR node, attributes, a type) was assigned;
    the message says how to make a changed copy."""


class IRIndexError(IRError, IndexError):
    """An index into an IR tuple is out of range."""


class ArgumentError(RelayKitError, TypeError):
    """A constructor or API function got an argument of the wrong kind (a symbolic shape
    where integers are needed, ...)."""


class TargetError(ArgumentError, ValueError):
    """A target names an attribute its kind does not have (TVM raises ValueError there;
    older target options such as ``-runtime`` or ``-executor`` moved to ``Runtime`` and
    ``Executor``)."""


__all__ += ["TargetError"]


class StructuralMismatchError(RelayKitError, AssertionError):
    """Raised by ``assert_structural_equal``; the message names the first mismatching path."""


class DiagnosticError(RelayKitError):
    """A diagnostic about the program (TVM's ``tvm.error.DiagnosticError``): the base of
    parse and type errors, which point at the offending source or node."""


class RelayTypeError(DiagnosticError, TypeError):
    """Type inference failed: the message names the operator, the argument types
    and shows the IR around the offending node."""


class TypeNotInferredError(RelayKitError, AttributeError):
    """``checked_type`` was read before type inference ran."""


class OpNotFoundError(RelayKitError, KeyError):
    """An operator name is not registered; the message suggests close names."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0]) if self.args else ""


class RegistryKeyError(RelayKitError, KeyError):
    """A registry has no entry of that name; the message lists what it has and close
    matches."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0]) if self.args else ""


class BackendNotFoundError(RegistryKeyError):
    """No backend of that name is built in or installed; the message lists the known
    backends and how to install or register one."""


class BackendError(RelayKitError):
    """A backend record is malformed or cannot be registered."""


class BackendLoadError(BackendError, ImportError):
    """A built-in backend or an installed ``relaykit.backends`` entry point failed to load;
    the message names the entry point and the package that declares it."""


class AttrError(RelayKitError, ValueError):
    """An operator attribute is unknown, missing or of the wrong kind."""


class ParseError(DiagnosticError, SyntaxError):
    """Relay text could not be parsed; the message shows ``source:line:col`` and a caret."""


class ExecutionError(RelayKitError, RuntimeError):
    """Evaluating the IR failed; the message names the node being evaluated."""


class MissingDependencyError(RelayKitError, ImportError):
    """An optional feature needs a package that is not installed; the message says
    which extra to install."""


# -- build, codegen, runtime and artifacts ------------------------------------------------------


class BuildError(RelayKitError):
    """``relay.build`` could not turn the module into a runnable one (unsupported target,
    a construct the graph executor cannot run, a backend that returned no module...)."""


class CodegenError(BuildError):
    """A backend's codegen was missing, failed, or cannot generate code for an operator;
    the message names the backend and the function."""


class CompilerNotFoundError(CodegenError, MissingDependencyError):
    """A C-source backend needs a C compiler and none was found; the message names the
    backend and what to install."""


class CompileError(CodegenError):
    """The C compiler rejected generated code; the message holds the compiler's output and
    the path of the generated source, which is kept for inspection."""


class BackendExecutionError(ExecutionError):
    """A backend's function failed while running; the message names the function, the
    backend and the operators of its region."""


class FunctionNotFoundError(RelayKitError, AttributeError):
    """A runtime module has no function of the requested name; the message lists those
    it has."""


class ArtifactError(RelayKitError, ValueError):
    """An exported module file cannot be loaded (see the subclasses)."""


class ArtifactCorruptError(ArtifactError):
    """The file is truncated, corrupted, or not a relaykit module file."""


class ArtifactVersionError(ArtifactError):
    """The file was written in a format version this relaykit cannot read."""


class FrontendError(RelayKitError, ValueError):
    """A model file could not be imported; the message names the node (and its op type)
    where the problem is, and what to do about it."""


class UnsupportedOpError(FrontendError):
    """A model uses operators relaykit cannot import. Every unsupported op type is
    listed at once, with its count and the name of its first node; ``ops`` maps
    ``op_type -> (count, first_node_name)``."""

    def __init__(self, message: str, ops: dict[str, tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        self.ops = dict(ops or {})


class DynamicShapeError(FrontendError):
    """A shape (or another value that must be known at compile time) is only known
    at run time; relaykit's IR has static shapes only."""


class UnsupportedFeatureError(RelayKitError, AttributeError):
    """A TVM feature relaykit does not have (TE, TIR, AutoTVM, RPC, GPU codegen...) was
    used; the message says what relaykit offers instead. It is an ``AttributeError`` so
    that ``hasattr`` on the TVM-compatible module answers False."""

    @classmethod
    def for_name(cls, module: str, name: str, instead: str) -> AttributeError:
        """The error a TVM-compatible module's ``__getattr__`` raises for ``name``
        (a plain ``AttributeError`` for dunder names, as Python's protocols expect)."""
        if name.startswith("__"):
            return AttributeError(name)
        return cls(f"relaykit has no {module} ({module}.{name} was used): {instead}")


# -- executors (issue 15) ---------------------------------------------------------------------
__all__ += ["ExecutorUsageError", "PipelineConfigError"]


class PipelineConfigError(ExecutionError):
    """A pipeline executor's configuration is wrong: an interface name or output index
    its module does not have, a connection of the wrong kind (an input feeding something,
    a module feeding itself or the pipeline's inputs), or one that closes a cycle. The
    message names the connection."""


class ExecutorUsageError(ExecutionError):
    """The graph executor's API was misused: an unknown input name or index, a value that
    is not an array of the input's shape and dtype, an output index out of range, ``run()``
    before every input was set, or ``get_output`` before ``run()`` in that thread. The
    message says what to do."""


# -- the command line ---------------------------------------------------------------------------


class UsageError(RelayKitError, ValueError):
    """A command-line argument is wrong: an unknown model name, a file that is missing, not
    a regular file or too large, a malformed shape. ``relaykit`` exits with status 2."""


# -- artifact trust (issue 15) ---------------------------------------------------------------------


class NativeCodeRefusedError(ArtifactError):
    """``load_module(..., allow_native=False)`` met a module whose code would have to come
    from the file (a compiled library, or source to compile) and relaykit cannot rebuild
    it from its own sources; the message names the module and how to allow it."""


class ArtifactSignatureError(ArtifactError):
    """``load_module(..., trusted_keys=...)`` refused a file: it is unsigned, signed by
    no trusted key, or its signature does not verify."""


# -- dynamic shapes (issue 12) -------------------------------------------------------------------
__all__ += ["SymbolicDimError"]


class SymbolicDimError(RelayKitError, TypeError):
    """A value was needed from a tensor dimension that is symbolic (``te.var("n")``) or
    unknown (``relay.Any()``, printed ``?``): an ``int(dim)``, a comparison that cannot
    be decided, or a static-shape-only backend. The message says to give a static shape
    or use the VM (``relay.vm.compile``)."""


# -- quantization (issue 25) ------------------------------------------------------------------
__all__ += ["FakeQuantizationError"]


class FakeQuantizationError(IRError):
    """FakeQuantizationToInteger(hard_fail=True) met a fake-quantized region it cannot
    rewrite: ``op_name`` is the operator without a rule (or whose rule failed)."""

    def __init__(self, message: str, op_name: str = "") -> None:
        super().__init__(message)
        self.op_name = op_name


__all__ += ["NotFullyIntegralError"]


class NotFullyIntegralError(RelayKitError, AssertionError):
    """``relay.quantize`` with ``partition_conversions="fully_integral"`` left operators in
    float in the quantized core (or non-conversion operators around it); the message names
    them. An ``AssertionError``, as TVM raised for this check."""


# -- measured placement and its tuning log (issue 29) ---------------------------------------------
__all__ += ["TuningLogError", "TuningLogWarning", "PlacementError"]


class TuningLogError(RelayKitError, ValueError):
    """A tuning log line is not a valid record (read with ``strict=True``); the message
    names the file and line, what is wrong, and that the line can be deleted."""


class TuningLogWarning(UserWarning):
    """A tuning log line was ignored (corrupt, or from another format); it names the
    file and line."""


class PlacementError(RelayKitError, ValueError):
    """Measured placement cannot run as asked: an unknown target, a backend that is
    not available, or no placement that every unit's targets can run."""


# -- device planning --------------------------------------------------------------------------
__all__ += ["DevicePlanningError"]


class DevicePlanningError(IRError):
    """``relay.transform.PlanDevices`` met device constraints that contradict each
    other (an ``on_device`` or ``device_copy`` that disagrees with another about where
    a value lives). ``expr`` is the expression whose devices disagree, when known."""

    def __init__(self, message: str, expr: object = None) -> None:
        super().__init__(message)
        self.expr = expr
