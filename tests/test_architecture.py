"""The architecture's rules, checked on every run (docs/architecture.md, issue 10).

- the import-linter contracts in pyproject.toml: layers point downwards only, no cycle
  between subpackages, nothing below the frontend imports onnx;
- static checks over the source: no ``_checked_type`` read and no ``object.__new__``
  outside ``relaykit.ir``; no private name imported from another subpackage; no
  function-local import of a relaykit module (bar the command line and the listed lazy
  loaders of optional features); no module ``__getattr__`` loader; every ``raise`` raises
  a class of ``relaykit.errors``;
- ruff (the project's rules) and mypy report no error on ``src/relaykit``.

Each check lists every violation it finds, with its file and line.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "relaykit"

#: Function-local imports of relaykit modules that are not there to dodge a cycle: the
#: lazy loaders of optional features, and sugar methods that call back into the module
#: built on top of their own (each with its reason).
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("ir/expr.py", "ir.op"): (
        "Op subclasses Expr, and Expr's operator sugar (x + y, -x, astype) builds calls of Ops"
    ),
    ("dataflow_pattern/pattern.py", "dataflow_pattern.explain"): (
        "DFPattern.explain() is sugar for the explainer, which is built on DFPattern"
    ),
    ("dataflow_pattern/pattern.py", "dataflow_pattern.matcher"): (
        "DFPattern.match() is sugar for the matcher, which dispatches on DFPattern's subclasses"
    ),
    ("dataflow_pattern/pattern.py", "dataflow_pattern.partition"): (
        "DFPattern.partition() is sugar for partition(), which is built on the matcher"
    ),
    ("dataflow_pattern/pattern.py", "dataflow_pattern.printer"): (
        "DFPattern.__str__ is the pattern printer, which walks DFPattern's subclasses"
    ),
    ("runtime/module.py", "runtime.artifact"): (
        "Module.export_library() (TVM's method) is the artifact writer, built on Module"
    ),
}

#: Module-level ``__getattr__`` loaders that stay: genuinely lazy optional features.
GETATTR_ALLOWED: dict[str, str] = {
    **{
        f"{name}.py": (
            "a TVM module relaykit has no equivalent of: it imports, and every name raises "
            "UnsupportedFeatureError saying what to use instead"
        )
        for name in (
            "te",
            "tir",
            "autotvm",
            "auto_scheduler",
            "rpc",
            "script/__init__",
            "script/tir",
        )
    },
    "op/contrib/__init__.py": (
        "relay.op.contrib.<backend> (TVM's per-backend module) is made on first use from the "
        "backend record's exports: backends are optional and heavy"
    ),
    "__init__.py": "relaykit.testing: loading an artifact imports no workload",
    "relay/__init__.py": (
        "relay.testing and relay.frontend: loading an artifact imports no workload and no "
        "model importer (tests/contrib/test_export.py)"
    ),
}

BARE_ERRORS = frozenset(
    {"ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError", "AssertionError"}
    | {"Exception", "BaseException", "AttributeError", "LookupError", "ArithmeticError"}
)


@cache
def _sources() -> tuple[tuple[str, ast.Module], ...]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        out.append((rel, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return tuple(out)


def _subpackage(rel: str) -> str:
    """``ir`` for ``ir/expr.py``; the module name for a top-level module."""
    return rel.split("/", 1)[0].removesuffix(".py")


def _module_of(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(rel: str, node: ast.ImportFrom) -> str | None:
    """The absolute module (without ``relaykit.``) an ``ImportFrom`` names, or None if it
    is not a relaykit module."""
    if node.level == 0:
        mod = node.module or ""
        if mod == "relaykit" or mod.startswith("relaykit."):
            return mod.removeprefix("relaykit").removeprefix(".")
        return None
    base = _module_of(rel).split(".") if rel.endswith("__init__.py") else rel.split("/")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


Violation = tuple[str, int, str]


def _report(name: str, found: list[Violation]) -> str:
    return f"{name}:\n" + "\n".join(f"  src/relaykit/{f}:{ln}: {msg}" for f, ln, msg in found)


def _assert_none(name: str, found: list[Violation]) -> None:
    """Fail, listing every violation, when there is one."""
    assert not found, _report(name, found)


# -- the rules ------------------------------------------------------------------------------


def _checked_type_reads() -> Iterator[Violation]:
    for rel, tree in _sources():
        if rel.startswith("ir/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "_checked_type":
                yield rel, node.lineno, "reads _checked_type (use checked_type_or_none)"
            elif isinstance(node, ast.Constant) and node.value == "_checked_type":
                yield rel, node.lineno, 'names "_checked_type" (use checked_type_or_none)'


def _object_new_calls() -> Iterator[Violation]:
    for rel, tree in _sources():
        if rel.startswith("ir/"):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "__new__"
                and isinstance(node.value, ast.Name)
                and node.value.id == "object"
            ):
                yield rel, node.lineno, "object.__new__ (use the IR's fast constructors)"


def _private_imports() -> Iterator[Violation]:
    for rel, tree in _sources():
        own = _subpackage(rel)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(rel, node)
            if target is None or target.split(".")[0] == own:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield rel, node.lineno, f"imports private {alias.name} from relaykit.{target}"


def _function_local_imports() -> Iterator[Violation]:
    for rel, tree in _sources():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                targets: list[str] = []
                if isinstance(node, ast.ImportFrom):
                    target = _resolve(rel, node)
                    targets = [target] if target is not None else []
                elif isinstance(node, ast.Import):
                    targets = [
                        a.name.removeprefix("relaykit").removeprefix(".")
                        for a in node.names
                        if a.name == "relaykit" or a.name.startswith("relaykit.")
                    ]
                for target in targets:
                    if (rel, target) not in LOCAL_IMPORTS_ALLOWED:
                        yield rel, node.lineno, f"function-local import of relaykit.{target}"


def _module_getattr() -> Iterator[Violation]:
    for rel, tree in _sources():
        for node in tree.body:
            if (
                isinstance(node, ast.FunctionDef)
                and node.name == "__getattr__"
                and rel not in GETATTR_ALLOWED
            ):
                yield rel, node.lineno, "module __getattr__ loader (import the module instead)"


def _bare_raises() -> Iterator[Violation]:
    for rel, tree in _sources():
        # __getattr__ must raise AttributeError itself: that is the protocol, not an error
        protocol = {
            id(node)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef) and fn.name == "__getattr__"
            for node in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if not isinstance(exc, ast.Name) or exc.id not in BARE_ERRORS:
                continue
            if not (id(node) in protocol and exc.id == "AttributeError"):
                yield rel, node.lineno, f"raises bare {exc.id} (raise a relaykit.errors class)"


def _root_imports() -> Iterator[Violation]:
    """Layers import the modules they need, never the package root (which loads them all)."""
    for rel, tree in _sources():
        if "/" not in rel or rel.startswith("relay/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "relaykit" for a in node.names):
                yield rel, node.lineno, "import relaykit (import the layer's module instead)"
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "relaykit":
                for alias in node.names:
                    if not (SRC / alias.name).is_dir() and not (SRC / f"{alias.name}.py").exists():
                        yield rel, node.lineno, f"from relaykit import {alias.name} (the root)"


def test_no_checked_type_read_outside_ir():
    _assert_none("_checked_type read outside relaykit.ir", list(_checked_type_reads()))


def test_no_object_new_outside_ir():
    _assert_none("object.__new__ outside relaykit.ir", list(_object_new_calls()))


def test_no_private_import_across_subpackages():
    _assert_none("private name imported from another subpackage", list(_private_imports()))


def test_no_function_local_import():
    _assert_none("function-local import of a relaykit module", list(_function_local_imports()))


def test_no_module_getattr_loader():
    _assert_none("module __getattr__ loader", list(_module_getattr()))


def test_every_raise_is_a_relaykit_error():
    _assert_none("bare builtin exception raised", list(_bare_raises()))


def test_no_import_of_the_package_root():
    _assert_none("import of the relaykit root from a layer", list(_root_imports()))


def test_allow_lists_name_real_imports():
    """An allow-list entry whose import is gone must go too."""
    seen = set()
    for rel, tree in _sources():
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and (t := _resolve(rel, node)):
                        seen.add((rel, t))
    assert set(LOCAL_IMPORTS_ALLOWED) <= seen, set(LOCAL_IMPORTS_ALLOWED) - seen
    assert all(reason.strip() for reason in LOCAL_IMPORTS_ALLOWED.values())


def test_the_checks_catch_what_they_look_for(tmp_path):
    """Each rule finds a planted violation (the checks can fail)."""
    src = """
import relaykit
from relaykit.ir.expr import _private
def f(x):
    from relaykit.op import nn
    y = object.__new__(type(x))
    t = x._checked_type
    raise ValueError("bare")
def __getattr__(name):
    raise AttributeError(name)
"""
    tree = ast.parse(src)
    original = _sources
    try:
        globals()["_sources"] = lambda: (("transform/planted.py", tree),)
        assert [v[1] for v in _checked_type_reads()] == [7]
        assert [v[1] for v in _object_new_calls()] == [6]
        assert [v[1] for v in _private_imports()] == [3]
        assert [v[1] for v in _function_local_imports()] == [5]
        assert [v[1] for v in _module_getattr()] == [9]
        assert [v[1] for v in _bare_raises()] == [8]  # not the AttributeError of __getattr__
        assert [v[1] for v in _root_imports()] == [2]
    finally:
        globals()["_sources"] = original


# -- import-linter --------------------------------------------------------------------------

_BROKEN_IMPORT = re.compile(r"^\s*-\s+(relaykit[\w.]*)\s+->\s+(relaykit[\w.]*|\w[\w.]*)", re.M)


@cache
def _lint_imports() -> tuple[int, str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; "
            "sys.argv[0] = 'lint-imports'; c()",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _module_path(module: str) -> str:
    rel = module.removeprefix("relaykit.").replace(".", "/")
    return f"{rel}/__init__.py" if (SRC / rel).is_dir() else f"{rel}.py"


def test_import_contracts():
    """Every import that breaks a contract fails the test."""
    code, out = _lint_imports()
    assert "Contracts:" in out, out
    found = [(_module_path(imp), 0, f"{imp} -> {dst}") for imp, dst in _BROKEN_IMPORT.findall(out)]
    _assert_none("import-linter contracts", found)
    assert code == 0, out


# -- ruff -----------------------------------------------------------------------------------

_RUFF_ERROR = re.compile(r"^(?:\./)?src/relaykit/(\S+?\.py):(\d+):\d+: (.*)$", re.M)


def test_ruff_clean():
    """ruff reports nothing on src/relaykit with the project's rules (pyproject.toml)."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "concise", "src/relaykit"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    found = [(rel, int(line), msg) for rel, line, msg in _RUFF_ERROR.findall(out)]
    _assert_none("ruff", found)
    assert proc.returncode == 0, out


# -- mypy -----------------------------------------------------------------------------------

_MYPY_ERROR = re.compile(r"^src/relaykit/(\S+?\.py):(\d+): error: (.*)$", re.M)


def test_mypy_clean():
    """mypy reports no error on src/relaykit (runs from the tree root, with its cache)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "src/relaykit"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    found = [(rel, int(line), msg) for rel, line, msg in _MYPY_ERROR.findall(out)]
    _assert_none("mypy", found)
    assert proc.returncode == 0, out
