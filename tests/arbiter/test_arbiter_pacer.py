"""The token bucket on a virtual clock: hand-computed waits, a rate change, burst credit, no pacing."""

import pytest

from iosets.arbiter import Pacer


class VirtualTime:
    """A clock that only sleeping moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds


@pytest.fixture
def vt():
    return VirtualTime()


def test_requests_start_when_the_bytes_before_them_are_paid(vt):
    pacer = Pacer(100.0, clock=vt.clock, sleep=vt.sleep)
    assert [pacer.wait(n) for n in (50, 50, 100, 25)] == [0.0, 0.5, 0.5, 1.0]
    assert vt.now == 2.0  # 225 bytes started by t = 2: 200 paid, the last request's 25 being paid


def test_a_new_rate_reprices_the_unpaid_bytes(vt):
    pacer = Pacer(100.0, clock=vt.clock, sleep=vt.sleep)
    pacer.wait(100)  # paid at t = 1
    pacer.wait(100)  # sleeps to 1, paid at t = 2
    vt.now = 1.5  # 50 bytes unpaid when the rate doubles: paid at 1.75
    pacer.rate = 200.0
    assert pacer.wait(10) == pytest.approx(0.25)
    pacer.rate = 50.0  # 10 bytes unpaid at t = 1.75: paid at 1.95
    assert pacer.wait(10) == pytest.approx(0.2)


def test_idle_time_earns_at_most_the_burst(vt):
    pacer = Pacer(100.0, burst=50.0, clock=vt.clock, sleep=vt.sleep)
    vt.now = 10.0  # long idle: 50 bytes of credit, not 1000
    assert [pacer.wait(50), pacer.wait(50), pacer.wait(50)] == [0.0, 0.0, pytest.approx(0.5)]


def test_no_rate_paces_nothing_and_a_rate_restarts_from_now(vt):
    pacer = Pacer(None, clock=vt.clock, sleep=vt.sleep)
    assert pacer.wait(1e12) == 0.0
    vt.now = 5.0
    pacer.rate = 10.0
    assert [pacer.wait(10), pacer.wait(10)] == [0.0, 1.0]


@pytest.mark.parametrize("rate", [0.0, -1.0, float("inf"), float("nan")])
def test_a_bad_rate_is_refused(rate):
    with pytest.raises(ValueError, match="rate must be a finite number > 0"):
        Pacer(rate)
