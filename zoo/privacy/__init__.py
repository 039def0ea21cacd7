"""Privacy machinery: the DP callback, the mechanisms (one module each), per-example clipping, Poisson
sampling, accounting, the ledger."""

from zoo.privacy.accounting import calibrate_noise_multiplier, epsilon_spent, max_steps_within
from zoo.privacy.barriers import PrivacyBarrier
from zoo.privacy.callback import DPCallback, PrivacyLedgerMixin
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms import GradientSanitizer, PrivateHelpers, gaussian_release
from zoo.privacy.sampling import PoissonBatches, poisson_loader

__all__ = [
    "DPCallback",
    "GradientSanitizer",
    "LedgerEntry",
    "PoissonBatches",
    "PrivacyBarrier",
    "PrivacyBudgetExhausted",
    "PrivacyConfigError",
    "PrivacyLedger",
    "PrivacyLedgerMixin",
    "PrivateHelpers",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "gaussian_release",
    "max_steps_within",
    "poisson_loader",
]
