"""Measurements as tasks on a Ray cluster: the driver decides, the nodes measure.

Each job (:class:`.workers.Job`) is one Ray task asking for ``threads`` CPUs; a task
whose node or worker dies is retried elsewhere (Ray's ``max_retries``), so a lost node
costs only its tasks. A task that still cannot finish is reported lost (not measured,
not logged), never as the backend's failure. Ray is the ``ray`` extra
(``pip install relaykit[ray]``), imported only here.

>>> pool = RayWorkers("127.0.0.1:6379", threads=1)  # doctest: +SKIP
>>> pool.map(jobs)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from relaykit.errors import MissingDependencyError, PlacementError

from .workers import Job, run_job

__all__ = ["RayWorkers", "require_ray"]

_INSTALL = "pip install relaykit[ray]  (installs ray==2.60.0)"


def require_ray() -> Any:
    """The ``ray`` module, or a typed error naming the extra."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError(
            f"measuring on a Ray cluster (--ray-address) needs the ray package: {_INSTALL}"
        ) from None
    return ray


class RayWorkers:
    """Jobs as Ray tasks on the cluster at ``address`` (``"auto"``: the one this machine
    belongs to), each retried ``max_retries`` times when its node or worker dies."""

    def __init__(self, address: str, threads: int, *, max_retries: int = 3) -> None:
        ray = require_ray()
        self.ray = ray
        self.address = address
        self.threads = threads
        self._owns = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise PlacementError(
                    f"cannot join the Ray cluster at {address!r}: {err}; start one with "
                    "'ray start --head' and pass its address (host:port)"
                ) from err
            self._owns = True
        self._task = ray.remote(num_cpus=threads, max_retries=max_retries)(run_job)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if cpus < threads:
            self.close()
            raise PlacementError(
                f"the Ray cluster at {address!r} has {cpus} CPUs, fewer than the {threads} "
                "threads one measurement uses; pass --threads (at most the CPUs of a node)"
            )
        self.workers = max(1, cpus // threads)

    def map(self, jobs: Sequence[Job]) -> list[dict[str, Any]]:
        refs = [self._task.remote(asdict(j)) for j in jobs]
        out: list[dict[str, Any]] = []
        for ref in refs:
            try:
                out.append(self.ray.get(ref))
            except self.ray.exceptions.RayError as err:  # retries spent: lost, not failed
                out.append({"latency": None, "error": None, "lost": f"{type(err).__name__}"})
        return out

    def close(self) -> None:
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
        self._owns = False
