"""A model's ledger audited with canaries: each DP mechanism the ledger records, run by its own code at the plan
(σ, C, q, steps, δ) its entry records, with canaries in place of the data. Entries with the same plan (a
per-class model's parts) are audited once. ε̂ is compared with the ε that plan states on its own; the model's ε
composes its plans, so a plan's ε̂ above its own ε refutes the model's guarantee, and nothing here confirms it.
A plan's own ε is computed by the accountant its entry names."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from zoo.auditing.one_run import OneRunBound
from zoo.errors import UserError

#: what a lower bound can and cannot show, printed beside every audit
WHAT_A_LOWER_BOUND_SHOWS = (
    "ε̂ is a lower bound on the true ε at the stated confidence: above the stated ε it refutes the guarantee; "
    "below it, it shows the canaries found no flaw, not that the guarantee holds."
)

#: the ledger's mechanisms (``TrainingMechanism.name`` and the one-shot release) a canary audit exists for
AUDITED_MECHANISMS = ("gaussian", "subsampled_gaussian", "subsampled_kernel_embedding", "sanitized_output_gradient")


@dataclass(frozen=True)
class Plan:
    """One mechanism's plan as a ledger entry records it."""

    mechanism: str
    barrier: str
    noise_multiplier: float
    clip_norm: float
    sample_rate: float
    steps: int
    delta: float
    accountant: str
    #: B3: the rows B one step sanitises and the per-row noise multiplier (the entry's σ is the step's z)
    rows_per_step: int | None = None
    row_noise_multiplier: float | None = None

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Plan:
        parameters = entry.get("parameters") or {}
        return cls(
            mechanism=entry["mechanism"],
            barrier=entry["barrier"],
            noise_multiplier=float(entry["noise_multiplier"]),
            clip_norm=float(entry["clip_norm"]),
            sample_rate=float(entry["sample_rate"]),
            steps=int(entry["steps"]),
            delta=float(entry["delta"]),
            accountant=entry["accountant"],
            rows_per_step=parameters.get("rows_per_step"),
            row_noise_multiplier=parameters.get("row_noise_multiplier"),
        )

    def describe(self) -> str:
        from zoo.data.conversion import counted

        sigma = f"σ {self.noise_multiplier:.4g}"
        if self.rows_per_step is not None:
            sigma = f"per-row σ {self.row_noise_multiplier:.4g} over B = {self.rows_per_step} rows (z {sigma[2:]})"
        rest = f"C {self.clip_norm:g}, q {self.sample_rate:g}, {counted(self.steps, 'step')}"
        return f"{self.barrier} {self.mechanism}: {sigma}, {rest}"

    def canaries(self, asked: int) -> int:
        """B3 audits one canary per part, K = 1/q of them (the plan's rate); every other plan takes ``asked``."""
        return round(1 / self.sample_rate) if self.mechanism == "sanitized_output_gradient" else asked


@dataclass(frozen=True)
class PlanAudit:
    plan: Plan
    #: the ledger entries that ran this plan
    entries: int
    #: the ε the plan states on its own, from the canary run's ledger
    stated_epsilon: float
    bound: OneRunBound
    seconds: float


def _audit_plan(plan: Plan, canaries: int, confidence: float) -> tuple[OneRunBound, float]:
    if plan.mechanism == "gaussian":
        from zoo.auditing.canaries import audit_one_shot_release, gaussian_release_at
        from zoo.privacy import epsilon_spent

        release = gaussian_release_at(None, plan.delta, plan.clip_norm, noise_multiplier=plan.noise_multiplier)
        bound = audit_one_shot_release(release, canaries, plan.delta, plan.clip_norm, confidence)
        return bound, epsilon_spent([(plan.noise_multiplier, 1.0, 1)], plan.delta, plan.accountant)
    options = {"clip_norm": plan.clip_norm, "confidence": confidence, "accountant": plan.accountant}
    if plan.mechanism == "subsampled_gaussian":
        from zoo.auditing.dp_sgd_canaries import audit_dp_sgd

        return audit_dp_sgd(canaries, *_training_plan(plan), barrier=plan.barrier, **options)
    if plan.mechanism == "subsampled_kernel_embedding":
        from zoo.auditing.embedding_canaries import audit_subsampled_release

        return audit_subsampled_release(canaries, *_training_plan(plan), **options)
    from zoo.auditing.sanitizer_canaries import audit_sanitized_output

    assert plan.rows_per_step is not None and plan.row_noise_multiplier is not None
    rows_plan = (plan.row_noise_multiplier, plan.rows_per_step, plan.steps, plan.delta)
    return audit_sanitized_output(canaries, *rows_plan, **options)


def _training_plan(plan: Plan) -> tuple[float, float, int, float]:
    return plan.noise_multiplier, plan.sample_rate, plan.steps, plan.delta


def ledger_plans(config: dict[str, Any]) -> dict[Plan, int]:
    """Each distinct plan of a model's ledger with the number of entries that ran it; refuses a ledger with a
    mechanism no canary audit exists for, before any audit runs."""
    ledger = config.get("privacy_ledger") or {}
    entries = ledger.get("entries") or []
    if not entries:
        kind = "it is PAC-private, with no (ε, δ) to audit" if ledger.get("pac_releases") else "it records none"
        raise UserError(f"this model's ledger holds no DP mechanism to audit: {kind}")
    unaudited = sorted({e["mechanism"] for e in entries} - set(AUDITED_MECHANISMS))
    if unaudited:
        raise UserError(
            f"no canary audit exists for {', '.join(unaudited)}: the audits cover {', '.join(AUDITED_MECHANISMS)}"
        )
    plans: dict[Plan, int] = {}
    for entry in entries:
        plan = Plan.of(entry)
        plans[plan] = plans.get(plan, 0) + 1
    return plans


def audit_ledger(
    config: dict[str, Any],
    canaries: int,
    confidence: float = 0.95,
    on_start: Callable[[Plan, int], None] | None = None,
) -> Iterator[PlanAudit]:
    """Each plan of ``config``'s ledger audited with ``canaries`` canaries (B3: one per part), as it finishes;
    ``on_start(plan, canaries)`` is called before each."""
    if canaries < 2:
        raise UserError(f"an audit needs at least 2 canaries, got {canaries}")
    if not 0 < confidence < 1:
        raise UserError(f"the confidence must be between 0 and 1, got {confidence}")
    for plan, entries in ledger_plans(config).items():
        count = plan.canaries(canaries)
        if on_start is not None:
            on_start(plan, count)
        started = time.perf_counter()
        bound, stated = _audit_plan(plan, count, confidence)
        yield PlanAudit(plan, entries, stated, bound, time.perf_counter() - started)


def model_of_method(method: str, epsilon: float, models: list[dict[str, Any]]) -> str:
    """The listed (ε, δ)-DP model of ``method`` (its id starts with the method's name, as ``dpzoo train --method``
    spells it) whose ε is nearest ``epsilon``; ties go to the first listed."""
    candidates = [m for m in models if m["model_id"].startswith(f"{method}-") and m.get("epsilon") is not None]
    if not candidates:
        raise UserError(f"no (ε, δ)-DP model of {method!r} is listed: `dpzoo list` shows the models and their ε")
    return min(candidates, key=lambda m: abs(float(m["epsilon"]) - epsilon))["model_id"]
