"""Runtime tests run with the codegen, BYOC and global-function registries scoped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relaykit.backends import ccompiler, jsonref
from relaykit.byoc import scoped_registries
from relaykit.execution.codegen import codegen_registry


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    with scoped_registries(), codegen_registry.scoped():
        ccompiler.register()
        jsonref.register()
        yield
