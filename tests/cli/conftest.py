"""Fixtures of the command-line tests: every test runs inside ``scoped_registries()``, so
the rules a command registers (the demo target's) are gone when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relaykit.byoc import scoped_registries


@pytest.fixture(autouse=True)
def _scoped() -> Iterator[None]:
    with scoped_registries():
        yield
