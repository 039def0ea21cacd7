"""Checks of private modules and of δ against a dataset, run before any data is touched (the parameters' own checks,
which need no torch: ``zoo.privacy.parameters``)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from opacus.validators import ModuleValidator
from torch import nn

from zoo.privacy.errors import PrivacyConfigError


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
