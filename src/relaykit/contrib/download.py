"""``tvm.contrib.download``: test data from a local cache, fetched only when allowed.

``download_testdata(url, relpath, module)`` returns
``<cache>/<module>/<relpath>`` when that file exists. The cache is
``$RELAYKIT_TEST_DATA`` (default ``~/.tvm_test_data``, TVM's). A missing file is
downloaded only when the network is allowed (``RELAYKIT_OFFLINE`` unset); on a
machine without network the error says exactly which file to put where.

>>> import os, tempfile
>>> os.environ["RELAYKIT_TEST_DATA"] = cache = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(cache, "onnx"))
>>> open(os.path.join(cache, "onnx", "m.onnx"), "wb").close()
>>> path = download_testdata("https://example.com/m.onnx", "m.onnx", module="onnx")
>>> path == os.path.join(cache, "onnx", "m.onnx")
True
>>> del os.environ["RELAYKIT_TEST_DATA"]
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence

from relaykit.errors import MissingDependencyError

__all__ = ["download", "download_testdata", "cache_dir", "DataNotFoundError"]

ENV_CACHE = "RELAYKIT_TEST_DATA"
ENV_OFFLINE = "RELAYKIT_OFFLINE"


class DataNotFoundError(MissingDependencyError):
    """A data file is not in the local cache and could not be downloaded."""


def cache_dir() -> str:
    """The root of the test-data cache."""
    return os.environ.get(ENV_CACHE) or os.path.join(os.path.expanduser("~"), ".tvm_test_data")


def download(
    url: str, path: str, overwrite: bool = False, retries: int = 2, timeout: float = 30
) -> None:
    """Fetch ``url`` into ``path`` (atomically), unless it exists and ``overwrite`` is False."""
    if os.path.isfile(path) and not overwrite:
        return
    if os.environ.get(ENV_OFFLINE):
        raise DataNotFoundError(
            f"{path} is missing and downloads are off ({ENV_OFFLINE} is set): "
            f"fetch {url} on a machine with network and put it at {path}"
        )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    last: Exception | None = None
    for _ in range(max(1, retries)):
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(resp, out)
            os.replace(tmp, path)
            return
        except (urllib.error.URLError, OSError, ValueError) as err:
            last = err
    raise DataNotFoundError(
        f"could not download {url} ({last}); without network, fetch it elsewhere and put "
        f"it at {path}"
    )


def download_testdata(
    url: str, relpath: str, module: str | Sequence[str] | None = None, overwrite: bool = False
) -> str:
    """The cached path of a test file (TVM's ``download_testdata``), fetched if missing."""
    parts = [module] if isinstance(module, str) else list(module or [])
    path = os.path.join(cache_dir(), *parts, relpath)
    download(url, path, overwrite=overwrite)
    return path
