"""The one-run audit's estimator (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").

Each of m canaries is included in the training data by an independent fair coin, drawn before training. After
training each canary gets a score, higher for "more likely included". The auditor guesses "in" for the k₊
highest scores and "out" for the k₋ lowest, abstaining on the rest: r = k₊ + k₋ guesses, v of them correct.

Theorem (their main result for (ε, δ), which their Algorithm 2 evaluates). If the training is (ε, δ)-DP under
add/remove of one record, then for every v, P[at least v correct] ≤ β + α·δ·2m, where q = e^ε / (1 + e^ε),
β = P[Binomial(r, q) ≥ v] and α = max_{1≤i≤v} (P[Binomial(r, q) ≥ v − i] − β) / i. So an observed v rejects
every ε whose bound is below the significance level, and the largest rejected ε is a lower bound on the true ε
at confidence 1 − significance: ε̂. It is a lower bound whatever the scores are; good scores make it tight.

The guess counts are fixed before the scores are seen (``GUESS_FRACTIONS``), and the best of them is reported
at a Bonferroni-corrected level, so the search over k does not inflate ε̂.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

#: the guess counts tried, as fractions of m (half "in" among the highest scores, half "out" among the lowest)
GUESS_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The largest probability of at least ``correct`` right guesses among ``guesses`` under (ε, δ)-DP."""
    q = 1 / (1 + math.exp(-epsilon))
    beta = float(stats.binom.sf(correct - 1, guesses, q))
    if delta == 0 or correct == 0:
        return min(beta, 1.0)
    shifts = np.arange(1, correct + 1)
    alpha = float(np.max((stats.binom.sf(correct - shifts - 1, guesses, q) - beta) / shifts))
    return min(beta + alpha * delta * 2 * canaries, 1.0)


def epsilon_rejected(canaries: int, guesses: int, correct: int, delta: float, significance: float) -> float:
    """The largest ε that ``correct`` of ``guesses`` right rejects at ``significance`` (0 when none is)."""
    if p_value(canaries, guesses, correct, 0.0, delta) > significance:
        return 0.0
    high = 1.0
    while p_value(canaries, guesses, correct, high, delta) <= significance:
        high *= 2
        if high > 1e4:
            return math.inf
    return optimize.brentq(
        lambda eps: significance - p_value(canaries, guesses, correct, eps, delta), 0.0, high, xtol=1e-6
    )


@dataclass(frozen=True)
class OneRunBound:
    """An audit's lower bound on ε, with what it was computed from."""

    epsilon: float
    delta: float
    confidence: float
    canaries: int
    guesses: int
    correct: int

    def sentence(self) -> str:
        level = f"at δ = {self.delta:g} with confidence {self.confidence:g}"
        if self.guesses == 0:  # no guess count rejected any ε > 0
            return f"no ε > 0 rejected {level} ({self.canaries:,} canaries)"
        return (
            f"ε ≥ {self.epsilon:.2f} {level} "
            f"({self.correct:,} of {self.guesses:,} guesses right over {self.canaries:,} canaries)"
        )


def guesses_and_correct(scores: np.ndarray, included: np.ndarray, guesses: int) -> int:
    """Right guesses when the ``guesses // 2`` highest scores are called in and as many lowest out (an odd
    count calls one more in)."""
    order = np.argsort(scores, kind="stable")
    inside = guesses - guesses // 2
    called_in, called_out = order[len(order) - inside :], order[: guesses // 2]
    return int(included[called_in].sum() + (~included[called_out]).sum())


def one_run_lower_bound(
    scores: np.ndarray, included: np.ndarray, delta: float, confidence: float = 0.95
) -> OneRunBound:
    """ε̂ from the canaries' ``scores`` and their coins (``included``), the best over ``GUESS_FRACTIONS`` at
    the Bonferroni-corrected level (1 − confidence) / len(GUESS_FRACTIONS)."""
    scores, included = np.asarray(scores, dtype=float), np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1 or len(scores) < 2:
        raise ValueError("scores and included must be 1-D of the same length, at least 2")
    if not 0 < confidence < 1 or not 0 <= delta < 1:
        raise ValueError(f"confidence must be in (0, 1) and delta in [0, 1), got {confidence} and {delta}")
    m = len(scores)
    significance = (1 - confidence) / len(GUESS_FRACTIONS)
    best = OneRunBound(0.0, delta, confidence, m, 0, 0)
    for fraction in GUESS_FRACTIONS:
        guesses = max(2, round(fraction * m))
        correct = guesses_and_correct(scores, included, guesses)
        epsilon = epsilon_rejected(m, guesses, correct, delta, significance)
        if epsilon > best.epsilon:
            best = OneRunBound(epsilon, delta, confidence, m, guesses, correct)
    return best
