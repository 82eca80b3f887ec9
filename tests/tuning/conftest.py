"""Measured placement tests run with the BYOC and codegen registries scoped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relaykit.byoc import scoped_registries
from relaykit.execution.codegen import scoped_codegens


@pytest.fixture(autouse=True)
def _isolated_registries() -> Iterator[None]:
    with scoped_registries(), scoped_codegens():
        yield
