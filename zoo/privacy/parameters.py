"""Checks of privacy parameters (ε, δ, σ, rates, the accountant's name) and δ's default, declared once: the
budget, the mechanisms and the command line's front checks (``zoo.front_checks``, before torch is imported) all
run these. Standard library only."""

from __future__ import annotations

import math

from zoo.privacy.errors import PrivacyConfigError

#: δ wherever none is given: a recipe's budget, ``dpzoo train --delta``, fine-tuning
DEFAULT_DELTA = 1e-5
ACCOUNTANTS = ("rdp", "prv", "gdp", "pld")


def check_epsilon(epsilon: float, name: str = "target_epsilon") -> float:
    if not _is_real(epsilon) or not math.isfinite(epsilon) or epsilon <= 0:
        raise PrivacyConfigError(f"{name} must be a finite number > 0, got {epsilon!r}.")
    return float(epsilon)


def check_delta(delta: float, name: str = "delta") -> float:
    if not _is_real(delta) or not 0 < delta < 1:
        raise PrivacyConfigError(
            f"{name} must lie in (0, 1), got {delta!r}; use δ < 1/N for a dataset of N examples "
            f"({DEFAULT_DELTA:g} is common)."
        )
    return float(delta)


def check_positive(value: float, name: str) -> float:
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise PrivacyConfigError(f"{name} must be a finite number > 0, got {value!r}.")
    return float(value)


def check_sample_rate(rate: float) -> float:
    if not _is_real(rate) or not 0 < rate <= 1:
        raise PrivacyConfigError(f"sample_rate must lie in (0, 1], got {rate!r}.")
    return float(rate)


def check_accountant(name: str) -> str:
    if name not in ACCOUNTANTS:
        raise PrivacyConfigError(f"accountant must be one of {ACCOUNTANTS}, got {name!r}.")
    return name


def check_exactly_one(target_epsilon: float | None, noise_multiplier: float | None) -> None:
    if (target_epsilon is None) == (noise_multiplier is None):
        raise PrivacyConfigError(
            "Give exactly one of target_epsilon (σ is then calibrated by the accountant) "
            "or noise_multiplier (ε is then reported as spent), "
            f"got target_epsilon={target_epsilon!r}, noise_multiplier={noise_multiplier!r}."
        )


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
