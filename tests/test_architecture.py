"""The architecture's rules, checked on every run (docs/architecture.md, issue 10).

- the import-linter contracts in pyproject.toml: layers point downwards only, no cycle
  between subpackages, nothing below the frontend imports onnx;
- static checks over the source: no ``_checked_type`` read and no ``object.__new__``
  outside ``relaykit.ir``; no private name imported from another subpackage; no
  function-local import of a relaykit module (bar the command line and the listed lazy
  loaders of optional features); no module ``__getattr__`` loader; every ``raise`` raises
  a class of ``relaykit.errors``;
- the tree's structure (issue 24): no import cycle between the files of one package
  (counting imports inside functions and under ``TYPE_CHECKING``; only the listed operator
  sugar of ``relaykit.ir`` may close one); no source file over 1,000 lines; no module
  named for when it was added (``*_more``, ``*_extra*``, ``_ops``); the host kernels in
  the host backend's package and the ONNX frontend a package of its own;
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

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "relaykit"

#: Function-local imports of relaykit modules that are not there to dodge a cycle: the
#: lazy loaders of optional features, and sugar methods that call back into the module
#: built on top of their own (each with its reason).
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("ir/expr.py", "ir.op"): (
        "Op subclasses Expr, and Expr's operator sugar (x + y, -x, astype) builds calls of Ops"
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
            "tir/__init__",
            "autotvm/__init__",
            "auto_scheduler",
            "meta_schedule",
            "contrib/torch",
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


# -- the tree's structure (issue 24) ----------------------------------------------------------

#: Same-package import edges that may close a cycle: operator sugar in ``relaykit.ir``, each
#: with its reason. Every import behind such an edge must be deferred into a function.
CYCLE_EDGES_ALLOWED: dict[tuple[str, str], str] = {
    ("ir/expr.py", "ir/op.py"): LOCAL_IMPORTS_ALLOWED[("ir/expr.py", "ir.op")],
}

#: The longest a source file may be, in lines.
MAX_LINES = 1000
NATIVE_SUFFIXES = (".c", ".cc", ".h", ".cpp", ".hpp")

Edge = tuple[str, str, int]  # importing file, imported file, line


def _file_of(module: str) -> str | None:
    """The file (relative to ``src/relaykit``) of a relaykit module, or None."""
    rel = module.replace(".", "/")
    if (SRC / rel / "__init__.py").is_file():
        return f"{rel}/__init__.py" if rel else "__init__.py"
    return f"{rel}.py" if rel and (SRC / f"{rel}.py").is_file() else None


def _imported_files(rel: str, tree: ast.Module) -> Iterator[tuple[str, int]]:
    """Every relaykit file ``rel`` imports, wherever the import is (module level, in a
    function, under ``TYPE_CHECKING``): ``from pkg import module`` names the module's file,
    ``from pkg import name`` the package's ``__init__.py``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("relaykit."):
                    target = _file_of(alias.name.removeprefix("relaykit."))
                    if target is not None:
                        yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(rel, node)
            if base is None:
                continue
            base = base.strip(".")
            for alias in node.names:
                sub = _file_of(f"{base}.{alias.name}".strip("."))
                target = sub if sub is not None and alias.name != "*" else _file_of(base)
                if target is not None:
                    yield target, node.lineno


def _package_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _package_edges() -> list[Edge]:
    """Import edges between two different files of one package."""
    edges = {
        (rel, target, line)
        for rel, tree in _sources()
        for target, line in _imported_files(rel, tree)
        if target != rel and _package_of(target) == _package_of(rel)
    }
    return sorted(edges, key=lambda e: (e[0], e[2], e[1]))


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for src, dst, _ in edges:
        graph.setdefault(src, set()).add(dst)
        graph.setdefault(dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _import_cycles() -> Iterator[Violation]:
    edges = [e for e in _package_edges() if e[:2] not in CYCLE_EDGES_ALLOWED]
    for files in _cycles(edges):
        inside = [f"{s}:{ln} -> {d}" for s, d, ln in edges if s in files and d in files]
        yield files[0], 0, f"import cycle between {', '.join(files)}: " + "; ".join(inside)


def _long_files(suffixes: tuple[str, ...]) -> list[Violation]:
    found = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix in suffixes and path.is_file():
            with path.open("rb") as fh:
                lines = sum(1 for _ in fh)
            if lines > MAX_LINES:
                rel = path.relative_to(SRC).as_posix()
                found.append((rel, lines, f"{lines} lines (at most {MAX_LINES})"))
    return found


def _files(pattern: str) -> list[str]:
    return sorted(p.relative_to(SRC).as_posix() for p in SRC.rglob(pattern) if p.is_file())


def _catch_all_names() -> list[Violation]:
    names = {*_files("*_more.py"), *_files("*_extra*.py"), *_files("_ops.py")}
    return [(rel, 0, "a module named for when it was added, not for what it holds")
            for rel in sorted(names)]  # fmt: skip


def _stray_host_modules() -> list[Violation]:
    return [
        (rel, 0, "a host_* module outside the host backend's package (backends/host/)")
        for rel in _files("host_*.py")
        if not rel.startswith("backends/host/")
    ]


def _flat_onnx_converters() -> list[Violation]:
    found = [
        (rel, 0, "an ONNX converter outside frontend/onnx/") for rel in _files("frontend/_cvt_*.py")
    ]
    if not (SRC / "frontend" / "onnx" / "__init__.py").is_file():
        found.append(("frontend/onnx", 0, "the ONNX frontend is not a package"))
    return found


def test_no_import_cycle_within_a_package():
    """No two files of one package import each other, directly or round a circle, counting
    imports inside functions and under ``TYPE_CHECKING`` (bar :data:`CYCLE_EDGES_ALLOWED`)."""
    _assert_none("import cycles between files of one package", list(_import_cycles()))


def test_cycle_allow_list_is_ir_operator_sugar():
    """Each allowed edge is in ``relaykit.ir``, exists, has its reason, and is deferred into
    functions (sugar calls up at run time; the module never needs it to load)."""
    edges = {(s, d) for s, d, _ in _package_edges()}
    for (src, dst), reason in CYCLE_EDGES_ALLOWED.items():
        assert src.startswith("ir/") and dst.startswith("ir/"), (src, dst)
        assert (src, dst) in edges, f"{src} no longer imports {dst}: drop the entry"
        assert reason.strip(), (src, dst)
        tree = dict(_sources())[src]
        module_level = [
            node.lineno
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target, _ in _imported_files(src, ast.Module(body=[node], type_ignores=[]))
            if target == dst
        ]
        assert not module_level, f"{src}:{module_level} imports {dst} at module level"


def _top_packages() -> list[str]:
    return [*sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()), ""]


@pytest.mark.parametrize(
    "package",
    [pytest.param(name, id=name or "top-level") for name in _top_packages()],
)
def test_no_long_python_module(package: str):
    found = [
        v
        for v in _long_files((".py",))
        if (v[0].split("/", 1)[0] if "/" in v[0] else "") == package
    ]
    _assert_none(f"Python modules over {MAX_LINES} lines", found)


def test_no_long_native_source():
    _assert_none(f"C/C++ sources over {MAX_LINES} lines", _long_files(NATIVE_SUFFIXES))


def test_no_catch_all_module_names():
    _assert_none("modules named *_more, *_extra* or _ops", _catch_all_names())


def test_host_modules_live_in_the_host_backend():
    _assert_none("host_* modules outside backends/host/", _stray_host_modules())


def test_onnx_frontend_is_a_package():
    _assert_none("the ONNX frontend's layout", _flat_onnx_converters())


def test_the_structure_checks_catch_what_they_look_for():
    """The cycle finder reports a planted circle with its files and lines, and resolves
    relative, ``from pkg import module``, deferred and ``TYPE_CHECKING`` imports."""
    planted = {
        "ir/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "ir/b.py": "def f():\n    from relaykit.ir import c\n",
        "ir/c.py": "import relaykit.ir.a\n",
        "ir/d.py": "from . import a\n",
    }
    trees = tuple((rel, ast.parse(src)) for rel, src in planted.items())
    original = (_sources, _file_of)
    try:
        globals()["_sources"] = lambda: trees
        globals()["_file_of"] = lambda m: (
            f"{m.replace('.', '/')}.py" if f"{m.replace('.', '/')}.py" in planted else None
        )
        assert sorted(_package_edges()) == [
            ("ir/a.py", "ir/b.py", 3),
            ("ir/b.py", "ir/c.py", 2),
            ("ir/c.py", "ir/a.py", 1),
            ("ir/d.py", "ir/a.py", 1),
        ]
        (found,) = _import_cycles()
        assert found[2].startswith("import cycle between ir/a.py, ir/b.py, ir/c.py: ")
        assert "ir/b.py:2 -> ir/c.py" in found[2]
    finally:
        globals()["_sources"], globals()["_file_of"] = original
    assert _cycles([("x", "y", 1), ("y", "z", 1)]) == []


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
