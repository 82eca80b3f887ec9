"""Every operator is defined in the folder its namespace names (issue 24).

``define_op`` records the module that defined each operator (the op attribute
``"defined_in"``). The rule, for operators relaykit defines (in ``relaykit.op``):

- ``nn.X``, ``image.X``, ``vision.X``, ``qnn.X`` and ``dyn.X`` are defined in the package
  of their namespace (``relaykit.op.nn``...); ``dyn.<ns>.X`` in ``relaykit.op.dyn.<ns>``,
  the file named as its static twin's;
- any other ``ns.X`` (``annotation``, ``memory``, ``ml``...) in a module named for ``ns``;
- a plain name in a module of ``relaykit.op`` that is no namespace's folder.

Operators defined outside ``relaykit.op`` are not relaykit's built-in operators: those a
script registers through TVM's API (``relay.op.op.register``, no ``defined_in``) or that a
test defines; they are exempt. relaykit itself defines operators only in ``relaykit.op``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator

import relaykit.relay  # noqa: F401 - every built-in operator registered (qnn.* with relay.qnn)
from relaykit.ir.op import OpRegistry, default_registry
from relaykit.op.define import define_op

#: Namespaces whose operators live in a package of that name under relaykit.op.
FOLDERS = ("nn", "image", "vision", "qnn", "dyn")


def _builtin(module: str | None) -> bool:
    return module is not None and (module == "relaykit.op" or module.startswith("relaykit.op."))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def misplaced(ops: Iterable[tuple[str, str | None]]) -> Iterator[str]:
    """``name (module)`` of each built-in op ``(name, defined_in)`` that breaks the rule."""
    ops = list(ops)
    namespaces = {n.split(".")[0] for n, _ in ops if "." in n} | set(FOLDERS)
    for name, module in ops:
        if module is None or not _builtin(module):
            continue
        parts = name.split(".")
        if len(parts) == 1:  # a plain name: relaykit.op or one of its non-namespace modules
            top = module.removeprefix("relaykit.op").lstrip(".").split(".")[0]
            ok = top not in namespaces
        elif parts[0] == "dyn" and len(parts) > 2:  # dyn.image.resize2d: dyn/image.py
            ok = _within(module, f"relaykit.op.dyn.{parts[1]}")
        else:
            ok = _within(module, f"relaykit.op.{parts[0]}")
        if not ok:
            yield f"{name} ({module})"


def _registered() -> list[tuple[str, str | None]]:
    return [(n, default_registry.get_attr(n, "defined_in")) for n in default_registry.names()]


def test_every_builtin_operator_is_defined_in_its_namespace_folder():
    assert list(misplaced(_registered())) == []


def test_relaykit_defines_operators_only_in_relaykit_op():
    outside = [
        f"{n} ({m})"
        for n, m in _registered()
        if m and m.startswith("relaykit.") and not _builtin(m)
    ]
    assert outside == []
    # each built-in op records where it stands (none left without a module)
    checked = [n for n, m in _registered() if _builtin(m)]
    assert {"add", "nn.conv2d", "image.resize2d", "vision.roi_align", "dyn.reshape"} <= set(checked)
    assert "qnn.concatenate" in checked and "annotation.compiler_begin" in checked


def test_importing_relaykit_registers_no_operator_without_its_module():
    # in a fresh interpreter: other tests register operators through TVM's API
    code = (
        "import relaykit.relay\n"
        "from relaykit.ir.op import default_registry as r\n"
        "print([n for n in r.names() if r.get_attr(n, 'defined_in') is None])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_rule_flags_what_it_should():
    ops = [
        ("image.resize2d", "relaykit.op.image.resize"),  # fine
        ("image.crop", "relaykit.op.transform"),  # image op outside op/image
        ("vision.nms", "relaykit.op.vision_nms"),  # a sibling module, not the package
        ("dyn.image.resize2d", "relaykit.op.dyn.vision"),  # not in its static twin's file
        ("dyn.reshape", "relaykit.op.dyn.transform"),  # fine
        ("strided_set", "relaykit.op.nn.misc"),  # a plain op in a namespace's folder
        ("annotation.stop", "relaykit.op.annotation"),  # fine
        ("memory.alloc", "relaykit.op.annotation"),  # another namespace's module
        ("my.op", "tests.op.test_x"),  # defined outside relaykit.op: exempt
        ("other", None),  # registered through TVM's API: exempt
    ]
    assert list(misplaced(ops)) == [
        "image.crop (relaykit.op.transform)",
        "vision.nms (relaykit.op.vision_nms)",
        "dyn.image.resize2d (relaykit.op.dyn.vision)",
        "strided_set (relaykit.op.nn.misc)",
        "memory.alloc (relaykit.op.annotation)",
    ]


def test_define_op_records_the_calling_module():
    reg = OpRegistry()
    define_op("my.op", num_inputs=1, type_rel=lambda t, a: t[0], compute=None, registry=reg)
    assert reg.get_attr("my.op", "defined_in") == __name__
    define_op(
        "my.other", num_inputs=1, type_rel=lambda t, a: t[0], compute=None, registry=reg,
        module="somewhere.else",
    )  # fmt: skip
    assert reg.get_attr("my.other", "defined_in") == "somewhere.else"


def test_dyn_helper_records_its_caller_not_itself():
    assert default_registry.get_attr("dyn.reshape", "defined_in") == "relaykit.op.dyn.transform"
    assert default_registry.get_attr("dyn.nn.pad", "defined_in") == "relaykit.op.dyn.nn"
