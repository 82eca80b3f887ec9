"""ThreadPolicy park hooks: the host workers park another pool's spinning threads."""

from relaykit.runtime.threads import ThreadPolicy


class _Blas:
    available = True

    def set(self, n):
        pass


def test_park_hooks_run_when_host_workers_start_only():
    policy = ThreadPolicy(blas=_Blas())
    policy.set_num_threads(2)
    calls = []

    def hook():
        calls.append("a")

    policy.add_park_hook(hook)
    policy.add_park_hook(hook)  # the same hook twice counts once
    policy.add_park_hook(lambda: calls.append("b"))
    done = []
    policy.run_parallel([lambda: done.append(1)] * 4, threads=1)  # no workers: no parking
    assert calls == [] and len(done) == 4
    policy.run_parallel([lambda: done.append(2)] * 4, threads=2)
    assert len(done) == 8
    assert sorted(calls) == ["a", "b"]
