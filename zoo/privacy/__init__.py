"""Privacy machinery: the plan's budget (DPBudget, PACBudget), the DP callback of a private stage, the
mechanisms (one module each), per-example clipping, Poisson sampling, accounting, the ledger."""

from zoo.privacy.accounting import calibrate_noise_multiplier, epsilon_spent, max_steps_within
from zoo.privacy.barriers import PrivacyBarrier
from zoo.privacy.budget import Budget, DPBudget, PACBudget
from zoo.privacy.callback import DPCallback
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms import GradientSanitizer, PrivateHelpers, gaussian_release
from zoo.privacy.sampling import PoissonBatches, poisson_loader

__all__ = [
    "Budget",
    "DPBudget",
    "DPCallback",
    "GradientSanitizer",
    "LedgerEntry",
    "PACBudget",
    "PoissonBatches",
    "PrivacyBarrier",
    "PrivacyBudgetExhausted",
    "PrivacyConfigError",
    "PrivacyLedger",
    "PrivateHelpers",
    "calibrate_noise_multiplier",
    "epsilon_spent",
    "gaussian_release",
    "max_steps_within",
    "poisson_loader",
]
