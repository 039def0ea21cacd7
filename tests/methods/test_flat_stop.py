"""The flat-objective stop of a mean-embedding fit (issue 65): it decays the rate and stops once a window's
decrease is a small share of the decrease so far, keeps its state through a checkpoint, and ends a tiny fit before
its planned steps."""

import math

import pytest

from lightning_modules import DPMEPF
from lightning_modules.parts.mean_embedding import FlatStop
from tests.methods.test_dp_mepf import QUIET, TINY
from zoo.errors import UserError
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.training import train


def feed(stop: FlatStop, distances: list[float]) -> int | None:
    """The step at which ``stop`` says to stop, or None."""
    for step, distance in enumerate(distances):
        if stop.observe(step, distance):
            return step
    return None


def test_a_falling_objective_runs_on_and_a_flat_one_decays_then_stops():
    falling = [1 + 10 * math.exp(-step / 2000) for step in range(1000)]
    assert feed(FlatStop(50, 0.2), falling) is None
    flattening = [1 + 10 * math.exp(-step / 50) for step in range(3000)]
    stop = FlatStop(50, 0.2)
    stopped = feed(stop, flattening)
    start, end = stop.tail
    assert stopped == end - 1 and end - start == pytest.approx(start * 0.25, abs=1)
    assert stop.rate(start - 1) == 1.0 and stop.rate(start) == 1.0 and 0 < stop.rate(end - 1) < 0.1


def test_without_a_final_decay_it_stops_at_the_window_that_reads_flat():
    stop = FlatStop(50, None)
    stopped = feed(stop, [1 + 10 * math.exp(-step / 50) for step in range(3000)])
    assert stop.tail == (stopped + 1, stopped + 1)


def test_its_state_survives_a_checkpoint():
    distances = [1 + 10 * math.exp(-step / 50) for step in range(3000)]
    whole, first, resumed = FlatStop(50, 0.2), FlatStop(50, 0.2), FlatStop(50, 0.2)
    stopped = feed(whole, distances)
    feed(first, distances[:170])
    resumed.restore(first.state())
    assert next(step for step in range(170, 3000) if resumed.observe(step, distances[step])) == stopped


def test_a_tiny_fit_stops_once_its_objective_is_flat_and_a_bad_window_is_refused():
    model = DPMEPF(**{**TINY, "stop_when_flat": 5, "final_decay": 0.2, "learning_rate": 0.01})
    train(model, toy_images(), DPBudget(target_epsilon=1.0), max_steps=2000, **QUIET)
    assert model.flat_stop.tail is not None and model.trainer.global_step < 2000
    with pytest.raises(UserError, match="window of steps"):
        DPMEPF(**{**TINY, "stop_when_flat": 0})
