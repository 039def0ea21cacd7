"""Positive controls: each audited mechanism, run by its own code, with its noise scaled down 4× or its clipping
removed, gives an ε̂ above the ε it states; run as written, ε̂ stays below it."""

import pytest
import torch

from zoo.auditing.canaries import audit_dp_sgd, audit_one_shot_release, gaussian_release_at
from zoo.privacy import epsilon_spent
from zoo.privacy.mechanisms import dp_sgd

DELTA = 1e-5
#: a tiny DP-SGD plan: every record each step (q = 1), 4 steps
SIGMA, RATE, STEPS = 6.0, 1.0, 4


def test_the_one_shot_release_as_written_stays_below_its_epsilon_and_its_broken_versions_exceed_it():
    honest = gaussian_release_at(1.0, DELTA)
    assert audit_one_shot_release(honest, 10_000, DELTA).epsilon < 1.0

    def quarter_noise(statistic):
        released = honest(statistic)
        return statistic + (released - statistic) / 4

    assert audit_one_shot_release(quarter_noise, 10_000, DELTA).epsilon > 1.0
    assert audit_one_shot_release(honest, 10_000, DELTA, term_norm=10.0).epsilon > 1.0  # a term past its bound


def test_dp_sgd_as_written_stays_below_its_epsilon():
    bound, stated = audit_dp_sgd(2000, SIGMA, RATE, STEPS, DELTA)
    assert stated == pytest.approx(epsilon_spent([(SIGMA, RATE, STEPS)], DELTA, "prv"), rel=1e-3)
    assert bound.epsilon < stated


def test_dp_sgd_with_a_quarter_of_its_noise_exceeds_the_epsilon_of_its_noise():
    stated = epsilon_spent([(SIGMA, RATE, STEPS)], DELTA, "prv")
    bound, _ = audit_dp_sgd(2000, SIGMA / 4, RATE, STEPS, DELTA)
    assert bound.epsilon > stated


def test_dp_sgd_without_its_clipping_exceeds_its_epsilon(monkeypatch):
    engine_of = dp_sgd.create_engine

    def unclipped(*args, **kwargs):
        engine = engine_of(*args, **kwargs)
        norms = engine.squared_norms
        engine.squared_norms = lambda: torch.zeros_like(norms())  # every gradient passes as within C
        return engine

    monkeypatch.setattr(dp_sgd, "create_engine", unclipped)
    bound, stated = audit_dp_sgd(2000, SIGMA, RATE, STEPS, DELTA, record_norm=10.0)
    assert bound.epsilon > stated
