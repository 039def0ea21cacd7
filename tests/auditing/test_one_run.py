"""The one-run estimator (Steinke, Nasr & Jagielski 2023): its p-value against a second way of computing it (the
paper's Algorithm 2 loop over the binomial pmf), against jax-privacy's where it is installed, and its bound in the
cases with a closed form."""

import math

import numpy as np
import pytest
from scipy import stats

from zoo.auditing.one_run import GUESS_FRACTIONS, epsilon_rejected, one_run_lower_bound, p_value


def p_value_by_the_papers_loop(m, r, v, eps, delta):
    """Algorithm 2 as the paper writes it: a running sum of Binomial(r, q) pmf values."""
    q = math.exp(eps) / (1 + math.exp(eps))
    beta = stats.binom.sf(v - 1, r, q)
    alpha, total = 0.0, 0.0
    for i in range(1, v + 1):
        total += stats.binom.pmf(v - i, r, q)
        alpha = max(alpha, total / i)
    return min(beta + alpha * delta * 2 * m, 1.0)


@pytest.mark.parametrize(
    "m, r, v, eps, delta", [(1000, 100, 90, 1.0, 1e-5), (10_000, 500, 480, 3.0, 1e-5), (50, 20, 15, 0.5, 0.01)]
)
def test_the_p_value_is_the_papers_algorithm_2(m, r, v, eps, delta):
    assert p_value(m, r, v, eps, delta) == pytest.approx(p_value_by_the_papers_loop(m, r, v, eps, delta), rel=1e-9)


def test_the_p_value_matches_jax_privacy_where_installed():
    auditing = pytest.importorskip("jax_privacy.auditing")
    for case in [(1000, 100, 90, 1.0, 1e-5), (10_000, 500, 480, 3.0, 1e-5)]:
        assert p_value(*case) == pytest.approx(auditing._one_run_p_value(*case), rel=1e-9)


def test_all_guesses_right_under_pure_dp_rejects_up_to_the_binomials_closed_form():
    """With δ = 0 and v = r, p(ε) = q^r, so ε̂ = logit(significance^(1/r))."""
    r, significance = 50, 0.05
    expected = math.log(significance ** (1 / r) / (1 - significance ** (1 / r)))
    assert epsilon_rejected(1000, r, r, 0.0, significance) == pytest.approx(expected, abs=1e-5)


def test_scores_that_ignore_the_coins_bound_nothing_and_perfect_scores_bound_much():
    coins = np.random.default_rng(0).random(5000) < 0.5
    noise = one_run_lower_bound(np.random.default_rng(1).standard_normal(5000), coins, 1e-5)
    assert noise.epsilon < 0.3
    perfect = one_run_lower_bound(coins.astype(float), coins, 1e-5)
    assert perfect.epsilon > 4 and perfect.correct == perfect.guesses
    assert perfect.guesses in {max(2, round(f * 5000)) for f in GUESS_FRACTIONS}
    assert "with confidence 0.95" in perfect.sentence()
    nothing = one_run_lower_bound(np.zeros(5000), coins, 1e-5)  # every score tied: no guess count rejects ε > 0
    assert nothing.epsilon == 0 and nothing.sentence().startswith("no ε > 0 rejected at δ = 1e-05")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="same length"):
        one_run_lower_bound(np.zeros(3), np.zeros(4, dtype=bool), 1e-5)
    with pytest.raises(ValueError, match="confidence"):
        one_run_lower_bound(np.zeros(3), np.zeros(3, dtype=bool), 1e-5, confidence=1.0)
