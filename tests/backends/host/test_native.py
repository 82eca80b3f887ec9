"""The native host kernel library: compiled once, cached, optional."""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor

import pytest

from relaykit.backends.host import native as host_native
from relaykit.errors import CompileError
from relaykit.runtime import native_build


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A private cache and no library loaded yet (restored afterwards)."""
    monkeypatch.setenv("RELAYKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(host_native, "_state", {})
    return tmp_path


def test_compiles_into_the_private_cache_once(fresh):
    lib = host_native.library()
    assert lib is not None
    lib.rk_abi.restype = ctypes.c_char_p
    assert lib.rk_abi().startswith(b"relaykit-host-")
    built = list(fresh.glob("host/*/librkhost.so"))
    assert len(built) == 1
    shipped = (host_native.SOURCE_DIR / "base.c").read_text()
    assert [p.read_text() for p in built[0].parent.glob("src-*/base.c")] == [shipped]
    assert host_native.library() is lib  # loaded once per process


def test_switched_off_by_environment_and_context(fresh, monkeypatch):
    monkeypatch.setenv(host_native.ENV_VAR, "0")
    assert host_native.library() is None
    monkeypatch.delenv(host_native.ENV_VAR)
    with host_native.disabled():
        assert not host_native.is_enabled()
        assert host_native.library() is None
    assert host_native.is_enabled()
    assert not list(fresh.glob("host/*"))  # nothing was compiled while off


def test_missing_compiler_warns_once_and_falls_back(fresh, monkeypatch):
    monkeypatch.delenv("RELAYKIT_CC", raising=False)
    monkeypatch.setenv("CC", str(fresh / "no-such-cc"))
    with pytest.warns(RuntimeWarning, match="native host kernels are unavailable"):
        assert host_native.library() is None
    assert host_native.library() is None  # remembered: no second attempt, no second warning


def test_concurrent_compiles_of_one_library_agree(tmp_path):
    cc = native_build.find_compiler("a test")
    target = tmp_path / "lib.so"
    source = {"f.c": "int f(void) { return 42; }\n" * 1 + "/*" + "x" * 200_000 + "*/\n"}
    with ThreadPoolExecutor(4) as pool:
        jobs = [pool.submit(native_build.compile_shared, source, target, cc,
                            ("-shared", "-fPIC")) for _ in range(4)]  # fmt: skip
        for job in jobs:
            job.result()
    assert ctypes.CDLL(str(target)).f() == 42


def test_cache_key_covers_sources_flags_and_parts():
    base = native_build.cache_key({"a.c": "x"}, ("-O2",), "cc")
    assert base != native_build.cache_key({"a.c": "y"}, ("-O2",), "cc")
    assert base != native_build.cache_key({"a.c": "x"}, ("-O3",), "cc")
    assert base != native_build.cache_key({"a.c": "x"}, ("-O2",), "clang")
    assert base == native_build.cache_key({"a.c": "x"}, ("-O2",), "cc")


def test_compile_error_is_typed_and_keeps_the_source(tmp_path):
    target = tmp_path / "lib.so"
    cc = native_build.find_compiler("a test")
    with pytest.raises(CompileError, match="broken.c"):
        native_build.compile_shared({"broken.c": "int f( {"}, target, cc, ("-shared", "-fPIC"))
    assert not target.exists()
    assert len(list(tmp_path.glob("src-*/broken.c"))) == 1
