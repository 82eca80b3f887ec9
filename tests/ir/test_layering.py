"""Static checks of the IR layer: what it imports, and who touches node internals."""

import ast
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "relaykit"
IR = SRC / "ir"
# what ir may import from relaykit (errors / registry / runtime basics are below it)
ALLOWED = (
    "relaykit.errors",
    "relaykit.registry",
    "relaykit.dtypes",
    "relaykit.runtime.ndarray",
    "relaykit.ir",
)


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):  # function-local imports included
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_ir_imports_nothing_above_it():
    bad = [
        f"{p.name}: {m}"
        for p in sorted(IR.glob("*.py"))
        for m in _imports(p)
        if m.startswith("relaykit") and not m.startswith(ALLOWED)
    ]
    assert bad == []


def _outside_ir(pattern):
    rx = re.compile(pattern)
    return [
        f"{p.relative_to(SRC)}:{i}"
        for p in sorted(SRC.rglob("*.py"))
        if IR not in p.parents
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if rx.search(line)
    ]


def test_no_node_internals_outside_ir():
    assert _outside_ir(r"\._checked_type\b|\._set_checked_type\(") == []
    assert _outside_ir(r"object\.__new__") == []
