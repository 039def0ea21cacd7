"""ε is logged every ``log_every_n_steps`` steps while its computations take a small share of the training
time (after a first second), and always at the end: an exact PRV evaluation costs 0.1-0.2 s, more than a fast
GPU's steps between two logs. The timer reads a fake clock here, so the rule is pinned whatever the machine's
speed or load."""

import pytest
import torch
from torch.utils.data import TensorDataset

from tests.toys import ToyData, ZeroGradient, tiny_trainer
from zoo.privacy import DPCallback, PrivacyLedger
from zoo.privacy.epsilon_log import EpsilonLogTimer


class FakeClock:
    """A clock that moves ``tick`` seconds at every reading, and by ``advance`` when the test says."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def train_logging_epsilon(clock: FakeClock, steps: int, every: int) -> tuple[list[int], DPCallback, float]:
    """The steps at which ε was logged, the callback, and the last value logged."""
    logged_at = []

    class LogSpy(ZeroGradient):
        def log(self, name, value, *args, **kwargs):
            if name == "epsilon":
                logged_at.append((self.trainer.global_step, value))
            super().log(name, value, *args, **kwargs)

    callback = DPCallback(
        noise_multiplier=1.0, accountant="rdp", dataset_id="toy", epsilon_log=EpsilonLogTimer(clock=clock)
    )
    trainer = tiny_trainer([callback], steps, log_every_n_steps=every)
    trainer.fit(LogSpy(), ToyData(TensorDataset(torch.randn(400, 300), torch.zeros(400)), 0.05))  # 20 steps an epoch
    assert trainer.callback_metrics["epsilon"] == pytest.approx(callback.epsilon)
    return [step for step, _ in logged_at], callback, logged_at[-1][1]


@pytest.mark.parametrize(
    "tick, logged_steps",
    [
        (0.0, [3, 6, 7]),  # ε costs no time: every 3 steps and at the end
        (10.0, [3, 7]),  # each ε "takes" 10 s, over its 5% share by step 6: the end is still logged
    ],
)
def test_epsilon_is_logged_every_n_steps_within_its_time_share_and_at_the_end(tick, logged_steps):
    steps, callback, last = train_logging_epsilon(FakeClock(tick), 7, every=3)
    assert steps == logged_steps
    assert last == pytest.approx(callback.epsilon)


def test_a_slow_epsilon_is_logged_in_the_first_second_then_only_at_the_end(monkeypatch):
    clock = FakeClock()
    exact = PrivacyLedger.epsilon

    def slow(self, *args, **kwargs):
        clock.advance(0.3)  # steps take no time on this clock, each ε 0.3 s
        return exact(self, *args, **kwargs)

    monkeypatch.setattr(PrivacyLedger, "epsilon", slow)
    steps, _, _ = train_logging_epsilon(clock, 12, every=1)
    assert steps == [1, 2, 3, 4, 12]  # until ε took 1 s (0.3 × 4), then not within 5% of the time: only at the end


def test_the_share_grows_with_the_stages_time():
    clock = FakeClock()
    timer = EpsilonLogTimer(share=0.05, grace_s=1.0, clock=clock)
    timer.start()
    timer.timed(lambda: clock.advance(2.0) or 0.0)  # 2 s of ε: over the 1 s grace
    assert not timer.allows_another()
    clock.advance(38.0)  # 40 s into the stage: 5% is 2 s
    assert not timer.allows_another()
    clock.advance(1.0)
    assert timer.allows_another()
