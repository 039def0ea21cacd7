"""The privacy budget of one plan, as an object the user holds.

One plan, one ledger, one budget: ``zoo.train(model, data, budget)`` binds the budget to the model's
ledger and the data it protects, every stage spends through it (a Release stage by
``budget.release``, a PrivateSteps stage through ``DPCallback(budget)``, the Lightning callback of
that stage), and afterwards ``budget.ledger`` is the plan's, ``budget.epsilon_spent`` the ε on the plan's
data and ``budget.ledger_worst_epsilon`` the largest ε of the whole ledger (earlier plans included).

- :class:`DPBudget`: (ε, δ)-DP, a target ε (σ calibrated for the whole plan) or a fixed σ;
- :class:`PACBudget`: PAC privacy (``zoo.privacy.pac``), a mutual-information bound, never an ε.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from torch import Tensor

from zoo.privacy.accounting import epsilon_spent
from zoo.privacy.errors import PrivacyBudgetExhausted, PrivacyConfigError
from zoo.privacy.ledger import LedgerEntry, PrivacyLedger
from zoo.privacy.mechanisms.gaussian_release import gaussian_release
from zoo.privacy.pac import PACEntry, check_pac_settings, pac_release
from zoo.privacy.parameters import (
    DEFAULT_DELTA,
    check_accountant,
    check_delta,
    check_epsilon,
    check_exactly_one,
    check_positive,
)
from zoo.privacy.randomness import private_generator


class Budget:
    """What a plan may spend, the ledger it spends into and the data it protects (``bind``). One budget per
    plan: once it has spent, it refuses another ledger, which would not hold what it spent."""

    def __init__(self) -> None:
        self.ledger = PrivacyLedger()
        self.protected: str | None = None
        self.partition_of: str | None = None
        self.records_identity: str | None = None
        #: the trainer's statement that the protected records share none with the ledger's public data, where
        #: this machine cannot show it (``PrivacyLedger.check_private_use``); entered in the plan's entries
        self.assume_disjoint = False
        #: what this plan entered in its ledger
        self.plan_entries: list[LedgerEntry | PACEntry] = []

    def bind(
        self,
        ledger: PrivacyLedger,
        protected: str | None,
        partition_of: str | None = None,
        records_identity: str | None = None,
    ) -> None:
        """Spend into ``ledger`` (the model's) on the data named ``protected`` (a share of ``partition_of``),
        whose records ``records_identity`` names (``zoo.privacy.records``), once ``check_records`` allows it."""
        protected = self.data_named(protected)
        if protected is not None:
            self.check_records(ledger, protected, records_identity)
        self.spend_into(ledger)
        self.protected, self.partition_of, self.records_identity = protected, partition_of, records_identity

    def data_named(self, data_id: str | None) -> str | None:
        """The dataset id this budget spends on: the data's own."""
        return data_id

    def check_records(self, ledger: PrivacyLedger, dataset_id: str, records_identity: str | None) -> None:
        """Before spending on ``dataset_id``: refuse records whose source ``ledger`` holds as public data."""
        ledger.check_private_use(dataset_id, records_identity, self.assume_disjoint)

    def spend_into(self, ledger: PrivacyLedger) -> None:
        """Continue in ``ledger``, unless this budget has spent into another: the new ledger would not hold
        that spending, and a second plan would seem to start from ε = 0."""
        if self.plan_entries and ledger is not self.ledger:
            spent_on = sorted({e.dataset_id for e in self.plan_entries})
            raise PrivacyConfigError(
                f"this budget has already spent on {', '.join(spent_on)} in another model's ledger, which this "
                "one would not hold: make a new DPBudget per plan"
            )
        self.ledger = ledger

    @property
    def seeded(self) -> list[str]:
        """The randomness this budget fixes by a seed, as a ledger entry records it (``LedgerEntry.seeded``)."""
        return []

    def track(self, entry: LedgerEntry | PACEntry) -> None:
        """Count ``entry``, already in the ledger, as this plan's spending (with the plan's ``assume_disjoint``)."""
        if isinstance(entry, LedgerEntry) and self.assume_disjoint:
            entry.assumed_disjoint = True
        if all(e is not entry for e in self.plan_entries):
            self.plan_entries.append(entry)

    def _protected_data(self) -> str:
        if self.protected is None:
            raise PrivacyConfigError("the data has no dataset_id: the ledger must name the data a release protects")
        return self.protected


class DPBudget(Budget):
    """(ε, δ)-differential privacy for a whole plan.

    Args:
        target_epsilon: ε to reach at the end of the plan; σ is calibrated by the accountant.
        noise_multiplier: σ, when given instead of ``target_epsilon``; ε is then only reported.
            For B3 it is the per-row σ of the sanitiser (GS-WGAN's σ).
        delta: δ of the (ε, δ) guarantee.
        max_grad_norm: clipping bound C on each example's gradient (B2/B4) or on each
            generated sample's upstream gradient (B3).
        accountant: ``"prv"`` (default, tightest), ``"rdp"`` or ``"gdp"`` (Opacus accountants), or ``"pld"``
            (dp-accounting's, pessimistic; where PRV gives out, at ε in the hundreds).
        per_example_mode: ``"auto"``, ``"ghost"``, ``"hooks"`` or ``"functorch"``
            (see ``zoo.privacy.per_example``).
        loss_reduction: how the training loss reduces over the batch, ``"mean"`` or ``"sum"``.
        planned_steps: private steps to calibrate σ for; default ``trainer.estimated_stepping_batches``.
        dataset_id: names the private data in the ledger; default: the datamodule's ``dataset_id``.
        noise_seed: seeds the noise generator (tests only). Unset, the noise comes from OS
            entropy, never from the global RNG that ``seed_everything`` makes repeatable: two runs
            seeded alike (one per class, say) would otherwise share noise that cancels in differences.
            A seeded run is recorded as such in the ledger and saved as not differentially private.
        assume_disjoint: the trainer's statement that the private records share none with the public data
            the model's ledger holds (a downloaded base's), where this machine's record index cannot show it;
            without it such a plan is refused before any work. The ledger entries and the card state it.
    """

    def __init__(
        self,
        target_epsilon: float | None = None,
        noise_multiplier: float | None = None,
        delta: float = DEFAULT_DELTA,
        max_grad_norm: float = 1.0,
        accountant: str = "prv",
        per_example_mode: str = "auto",
        loss_reduction: str = "mean",
        planned_steps: int | None = None,
        dataset_id: str | None = None,
        noise_seed: int | None = None,
        assume_disjoint: bool = False,
    ) -> None:
        super().__init__()
        check_exactly_one(target_epsilon, noise_multiplier)
        self.assume_disjoint = bool(assume_disjoint)
        self.target_epsilon = None if target_epsilon is None else check_epsilon(target_epsilon)
        self.noise_multiplier = (
            None if noise_multiplier is None else check_positive(noise_multiplier, "noise_multiplier")
        )
        self.delta = check_delta(delta)
        self.max_grad_norm = check_positive(max_grad_norm, "max_grad_norm")
        self.accountant = check_accountant(accountant)
        if accountant == "gdp":
            warnings.warn(
                "the GDP accountant is a CLT approximation that Opacus marks as possibly "
                "underestimating ε; prefer 'prv' or 'rdp' for a released guarantee.",
                UserWarning,
                stacklevel=2,
            )
        if loss_reduction not in ("mean", "sum"):
            raise PrivacyConfigError(f"loss_reduction must be 'mean' or 'sum', got {loss_reduction!r}")
        if planned_steps is not None and (not isinstance(planned_steps, int) or planned_steps < 1):
            raise PrivacyConfigError(f"planned_steps must be a positive integer, got {planned_steps!r}")
        self.per_example_mode = per_example_mode
        self.loss_reduction = loss_reduction
        self.planned_steps = planned_steps
        self.dataset_id = dataset_id
        self.noise_seed = noise_seed
        self.noise_generator = private_generator(noise_seed)

    @property
    def seeded(self) -> list[str]:
        """``noise_seed=…`` when the noise is seeded: the ledger records it, and the release states no guarantee."""
        return [] if self.noise_seed is None else [f"noise_seed={self.noise_seed}"]

    def check_records(self, ledger: PrivacyLedger, dataset_id: str, records_identity: str | None) -> None:
        """As ``Budget.check_records``; and a budget that names its data (``dataset_id``) may not rename
        records the ledger holds under another name."""
        if self.dataset_id is not None:
            ledger.check_same_name(dataset_id, records_identity)
        super().check_records(ledger, dataset_id, records_identity)

    def data_named(self, data_id: str | None) -> str | None:
        """The dataset id this budget spends on: its own ``dataset_id`` when given, else the data's. ``bind``
        and the private stages both ask here, so every stage of the plan composes on one dataset id."""
        return self.dataset_id or data_id

    @property
    def epsilon_spent(self) -> float:
        """ε on this plan's data: every ledger entry on the dataset ids the plan spent on, composed as
        ``target_epsilon`` counts them (earlier entries on those ids too); 0 before it spends. Other data in
        the ledger, and other splits of the same records, count in ``ledger_worst_epsilon``."""
        names = {e.dataset_id for e in self.plan_entries}
        worst = PrivacyLedger([e for e in self.ledger.entries if e.dataset_id in names]).worst_guarantee()
        return 0.0 if worst is None else worst["epsilon"]

    @property
    def ledger_worst_epsilon(self) -> float:
        """The largest ε the whole ledger guarantees for any data, earlier plans' included: the card's ε
        (0 for an empty ledger)."""
        worst = self.ledger.worst_guarantee()
        return 0.0 if worst is None else worst["epsilon"]

    def release(
        self,
        statistic: Tensor,
        l2_sensitivity: float,
        dataset_size: int,
        noise_multiplier: float | None = None,
        note: str = "",
    ) -> Tensor:
        """B1 for a Release stage: ``statistic`` + N(0, (σ·Δ₂)²) on the bound data, entered in the ledger; σ fixed,
        or, when None, the σ that brings the data to the target ε after what the ledger holds. A fixed σ that
        would overshoot the target is refused before the statistic is noised."""
        protected = self._protected_data()
        target = None if noise_multiplier is not None else self.target_epsilon
        if noise_multiplier is None and target is None:
            raise PrivacyConfigError(
                "this release calibrates σ from the budget: give DPBudget a target_epsilon, not a noise_multiplier."
            )
        if noise_multiplier is not None and self.target_epsilon is not None:
            left, prior = self.ledger.calibration_target(
                self.target_epsilon, protected, self.records_identity, self.partition_of
            )
            if epsilon_spent([*prior, (noise_multiplier, 1.0, 1)], self.delta, self.accountant) > left:
                raise PrivacyBudgetExhausted(
                    f"{note or 'a release'} at σ = {noise_multiplier:g} would take {protected} past "
                    f"ε = {self.target_epsilon}; raise its σ or the target."
                )
        noisy, entry = gaussian_release(
            statistic,
            l2_sensitivity,
            delta=self.delta,
            dataset_id=protected,
            dataset_size=dataset_size,
            target_epsilon=target,
            noise_multiplier=noise_multiplier,
            accountant=self.accountant,
            ledger=self.ledger,
            generator=self.noise_generator,
            partition_of=self.partition_of,
            records_identity=self.records_identity,
            seeded=self.seeded,
            note=note,
        )
        self.track(entry)
        return noisy


class PACBudget(Budget):
    """PAC privacy for a plan of PAC releases: ``mi_bound`` nats with probability ``confidence``, from
    ``mc_runs`` Monte-Carlo runs on subsets of the pool kept at ``subset_rate`` (``zoo.privacy.pac``)."""

    def __init__(
        self,
        mi_bound: float,
        confidence: float = 0.95,
        mc_runs: int = 16,
        subset_rate: float = 0.5,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        check_pac_settings(mi_bound, confidence, mc_runs)
        if not 0 < subset_rate < 1:
            raise PrivacyConfigError(f"subset_rate must lie strictly between 0 and 1, got {subset_rate!r}")
        self.mi_bound, self.confidence, self.mc_runs, self.subset_rate = mi_bound, confidence, mc_runs, subset_rate
        self.seed = seed  # tests only: subsets and noise from OS entropy otherwise

    @property
    def seeded(self) -> list[str]:
        """``seed=…`` when subsets and noise are seeded: the ledger records it, and the release states no guarantee."""
        return [] if self.seed is None else [f"seed={self.seed}"]

    def release(
        self, mechanism: Callable[[Tensor], Tensor], pool_size: int, squared_diameter: float, note: str = ""
    ) -> Tensor:
        """M(X) + B for a fresh subset X of the pool, B calibrated on ``mc_runs`` other subsets, entered in the
        ledger. ``mechanism`` maps a boolean mask over the pool to a flat output, deterministic given the mask."""
        noisy, entry = pac_release(
            mechanism,
            pool_size,
            squared_diameter,
            self._protected_data(),
            mi_bound=self.mi_bound,
            confidence=self.confidence,
            mc_runs=self.mc_runs,
            subset_rate=self.subset_rate,
            generator=private_generator(self.seed),
            seeded=self.seeded,
            note=note,
        )
        self.ledger.pac_releases.append(entry)
        self.track(entry)
        return noisy


def plan_seeds(budget: Budget | None, data: object) -> list[str]:
    """The randomness a plan fixes by a seed, as a ledger entry records it: the budget's noise (``Budget.seeded``)
    and the data's Poisson sampling (a datamodule's ``sampling_seed``)."""
    sampling_seed = getattr(data, "sampling_seed", None)
    return [*(budget.seeded if budget else []), *([] if sampling_seed is None else [f"sampling_seed={sampling_seed}"])]
