"""Privacy machinery: the plan's budget (DPBudget, PACBudget), the DP callback of a private stage, the
mechanisms (one module each), per-example clipping, Poisson sampling, accounting, the ledger.

The names below are imported on first use (``zoo.lazy``), so that a torch-free module of the package (the parameters'
checks, ``zoo.privacy.parameters``; the record index) serves the command line's front checks without torch."""

from zoo.lazy import lazy_exports

_EXPORTS = {
    "calibrate_noise_multiplier": "zoo.privacy.accounting",
    "epsilon_spent": "zoo.privacy.accounting",
    "max_steps_within": "zoo.privacy.accounting",
    "PrivacyBarrier": "zoo.privacy.barriers",
    "Budget": "zoo.privacy.budget",
    "DPBudget": "zoo.privacy.budget",
    "PACBudget": "zoo.privacy.budget",
    "DPCallback": "zoo.privacy.callback",
    "PrivacyBudgetExhausted": "zoo.privacy.errors",
    "PrivacyConfigError": "zoo.privacy.errors",
    "LedgerEntry": "zoo.privacy.ledger",
    "PrivacyLedger": "zoo.privacy.ledger",
    "GradientSanitizer": "zoo.privacy.mechanisms",
    "PrivateHelpers": "zoo.privacy.mechanisms",
    "gaussian_release": "zoo.privacy.mechanisms",
    "PoissonBatches": "zoo.privacy.sampling",
    "poisson_loader": "zoo.privacy.sampling",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
