"""Serial runs of a bound region while other processes hold the cores: the switching
rule on given call times and monitor judgements, default-on and the off switch, and
serial results against a float64 NumPy reference."""

from __future__ import annotations

import time

import numpy as np
import pytest

from relaykit.backends.dnnl.compile.winograd import with_winograd
from relaykit.backends.dnnl.run.contention import FIRST_PROBE, LAST_PROBE, Adaptive
from relaykit.backends.dnnl.run.program import Node, Program
from relaykit.backends.dnnl.run.region import DnnlRegion
from relaykit.runtime.contention import ContentionMonitor


def _feed(a: Adaptive, calls: list[tuple[float, bool]]) -> list[bool]:
    """Feed ``a`` these (wall seconds, monitor busy) calls; which of the two modes each
    one ran in (True: the serial one)."""
    modes: list[bool] = []
    for wall, busy in calls:
        modes.append(a.serial and a._countdown > 0)
        a.observe(wall, busy)
    return modes


QUIET = (1e-3, False)  # the monitor found no wait for a core
BUSY = (30e-3, True)  # a worker descheduled: the call waited; the monitor reads busy
SERIAL = (3e-3, False)


def test_quiet_calls_stay_parallel():
    a = Adaptive(threads=2)
    # slow calls on a quiet machine, a single busy reading, and calls too short to
    # judge change nothing
    modes = _feed(a, [QUIET, (5e-3, False), QUIET, BUSY, QUIET, (3e-5, True), (3e-5, True)] * 3)
    assert not a.serial and not any(modes)


def test_two_low_use_calls_switch_to_serial():
    a = Adaptive(threads=2)
    modes = _feed(a, [QUIET, BUSY, BUSY, SERIAL, SERIAL, SERIAL])
    assert modes == [False, False, False, True, True, True]
    assert a.serial


def test_a_serial_trial_that_loses_goes_back_and_waits():
    a = Adaptive(threads=2)
    slow_serial = (50e-3, False)
    modes = _feed(a, [BUSY, BUSY, slow_serial, slow_serial])
    assert modes == [False, False, True, True] and not a.serial
    # cooling down: low-use calls do not start another trial at once
    assert not any(_feed(a, [BUSY] * FIRST_PROBE))
    assert _feed(a, [BUSY, BUSY, SERIAL]) == [False, False, True]


def test_probe_returns_to_parallel_when_it_beats_serial():
    a = Adaptive(threads=2)
    _feed(a, [BUSY, BUSY])
    modes = _feed(a, [SERIAL] * FIRST_PROBE + [QUIET])  # serial calls, then the probe
    assert modes == [True] * FIRST_PROBE + [False]
    assert not a.serial


def test_failed_probes_back_off():
    a = Adaptive(threads=2)
    _feed(a, [BUSY, BUSY])
    gaps = []
    for _ in range(6):
        modes = _feed(a, [SERIAL] * (LAST_PROBE + 1))
        gaps.append(modes.index(False))  # the probe (it loses: BUSY is slower)
        a._countdown = 0
        _feed(a, [BUSY])
        assert a.serial
    assert gaps[0] == FIRST_PROBE
    assert a._interval == LAST_PROBE


@pytest.fixture
def _dnnl(dnnl):
    """Skipped (with the reason) where oneDNN is missing, as every dnnl test; the dnnl
    test helpers."""
    return dnnl


def _two_convs() -> tuple[Program, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    p = Program()
    x = p.add_input((1, 32, 20, 20))
    ws = [(rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32) for _ in range(2)]
    t = x
    for w in ws:
        y = p.new_tensor((1, 32, 20, 20))
        p.nodes.append(Node("conv", [t], y, {"weight": p.add_constant(w), "bias": -1,
                                              "strides": [1, 1], "dilation": [1, 1],
                                              "pad": [1, 1, 1, 1], "groups": 1},
                            [{"op": "relu"}]))  # fmt: skip
        t = y
    p.outputs = [t]
    p.layout = "blocked"
    return p, ws


@pytest.mark.parametrize("winograd", [False, True])
def test_serial_calls_compute_the_same(_dnnl, winograd):
    p, ws = _two_convs()
    if winograd:
        p = with_winograd(p, {n.out for n in p.nodes})
    region = DnnlRegion.from_program(p, num_threads=2)
    x = np.random.default_rng(1).standard_normal((1, 32, 20, 20)).astype(np.float32)
    out = np.empty((1, 32, 20, 20), np.float32)
    bound = region.bind([x], [out], adaptive=True)
    assert not bound.serial
    bound._adapt.serial, bound._adapt._countdown = True, 10  # as after two slow calls
    bound()
    assert bound.serial
    assert region.serial_twin().num_threads == 1
    want = x.astype(np.float64)
    for w in ws:
        want = np.maximum(_dnnl.conv_ref(want, w), 0.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    parallel = region(x)
    np.testing.assert_allclose(parallel, out, rtol=1e-6, atol=1e-6)


def test_tuner_bindings_do_not_adapt(_dnnl):
    p, _ = _two_convs()
    region = DnnlRegion.from_program(p, num_threads=2)
    x = np.zeros((1, 32, 20, 20), np.float32)
    assert region.bind([x], [np.empty_like(x)], adaptive=False)._adapt is None


def test_executor_bindings_adapt_unless_turned_off(_dnnl, monkeypatch):
    p, _ = _two_convs()
    region = DnnlRegion.from_program(p, num_threads=2)
    x = np.zeros((1, 32, 20, 20), np.float32)
    monkeypatch.delenv("RELAYKIT_DNNL_ADAPTIVE", raising=False)
    assert region.bind([x], [np.empty_like(x)])._adapt is not None
    monkeypatch.setenv("RELAYKIT_DNNL_ADAPTIVE", "1")
    assert region.bind([x], [np.empty_like(x)])._adapt is not None
    monkeypatch.setenv("RELAYKIT_DNNL_ADAPTIVE", "0")
    assert region.bind([x], [np.empty_like(x)])._adapt is None


class _Monitor(ContentionMonitor):
    """A monitor that reads ``busy`` as told (no clock)."""

    def __init__(self, busy: bool) -> None:
        super().__init__(clock=lambda: None)
        self.busy = busy

    def tick(self) -> bool:
        return self.busy


def test_run_counts_calls_and_switches_on_a_busy_reading():
    monitor = _Monitor(busy=True)
    a = Adaptive(threads=2, monitor=monitor)
    modes: list[bool] = []
    for _ in range(5):  # calls of 0.3 ms and more: long enough to judge
        a.run(lambda: (time.sleep(3e-4), modes.append(False)), lambda: modes.append(True))
    # two busy parallel calls, then the serial trial
    assert modes[:3] == [False, False, True]
    assert monitor.stats.region_calls == 5 and monitor.stats.serial_calls == modes.count(True)


def test_run_on_a_quiet_machine_never_tries_serial():
    monitor = _Monitor(busy=False)
    a = Adaptive(threads=2, monitor=monitor)
    modes: list[bool] = []
    for _ in range(50):
        a.run(lambda: sum(range(2000)) and modes.append(False), lambda: modes.append(True))
    assert modes == [False] * 50 and monitor.stats.serial_calls == 0
