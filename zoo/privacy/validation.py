"""Checks of privacy parameters and private modules, run before any data is touched."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from opacus.validators import ModuleValidator
from torch import nn

from zoo.privacy.errors import PrivacyConfigError

ACCOUNTANTS = ("rdp", "prv", "gdp", "pld")


def check_epsilon(epsilon: float, name: str = "target_epsilon") -> float:
    if not _is_real(epsilon) or not math.isfinite(epsilon) or epsilon <= 0:
        raise PrivacyConfigError(f"{name} must be a finite number > 0, got {epsilon!r}.")
    return float(epsilon)


def check_delta(delta: float) -> float:
    if not _is_real(delta) or not 0 < delta < 1:
        raise PrivacyConfigError(
            f"delta must lie strictly between 0 and 1, got {delta!r}; "
            "use delta < 1/N for a dataset of N examples (1e-5 is common)."
        )
    return float(delta)


def warn_if_delta_too_large(delta: float, dataset_size: int) -> None:
    """δ ≥ 1/N permits releasing one example outright: legal, but almost never what is wanted."""
    if dataset_size > 0 and delta >= 1.0 / dataset_size:
        warnings.warn(
            f"delta={delta:g} is >= 1/N = {1.0 / dataset_size:.3g} for N={dataset_size} examples; "
            "a mechanism that publishes one random example is (0, delta)-DP at this delta. "
            "Choose delta well below 1/N.",
            UserWarning,
            stacklevel=3,
        )


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


def check_private_modules(modules: Sequence[nn.Module], owner: str) -> None:
    """Reject private modules whose per-example gradients are undefined or empty.

    Layers such as BatchNorm mix examples within a batch, so no per-example gradient
    (and hence no per-example clipping) exists for them.
    """
    if not modules:
        raise PrivacyConfigError(
            f"{owner}.private_modules() returned no module; declare what is trained on private data."
        )
    for module in modules:
        if not any(p.requires_grad for p in module.parameters()):
            raise PrivacyConfigError(
                f"private module {type(module).__name__} of {owner} has no trainable parameters; "
                "there is nothing to train privately (check requires_grad or the declaration)."
            )
        errors = ModuleValidator.validate(module, strict=False)
        if errors:
            reasons = "; ".join(str(e) for e in errors)
            raise PrivacyConfigError(
                f"private module {type(module).__name__} of {owner} cannot be trained with per-example "
                f"gradients: {reasons}. Replace BatchNorm by GroupNorm/LayerNorm (or no normalisation); "
                "opacus.validators.ModuleValidator.fix(module) does this automatically."
            )


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
