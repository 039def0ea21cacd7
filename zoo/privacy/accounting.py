"""(ε, δ) accounting through maintained accountants (Opacus' RDP, PRV and GDP; Google's dp-accounting
PLD); nothing is hand-derived here.

A *history* is a list of ``(noise_multiplier, sample_rate, steps)`` triples, the format
Opacus accountants keep: it is what the ledger stores and what resuming restores.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence

import dp_accounting
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant
from opacus.accountants.accountant import IAccountant
from opacus.accountants.analysis.gdp import compute_mu_poisson, eps_from_mu
from opacus.accountants.utils import get_noise_multiplier

from zoo.privacy.errors import PrivacyConfigError
from zoo.privacy.parameters import check_accountant

History = list[tuple[float, float, int]]

_ACCOUNTANT_CLASSES = {"rdp": RDPAccountant, "prv": PRVAccountant, "gdp": GaussianAccountant}
_NOTIONS = {
    "rdp": "(ε, δ)-DP via Rényi DP (Mironov 2017; subsampled Gaussian, Mironov et al. 2019)",
    "prv": "(ε, δ)-DP via privacy random variables (Gopi et al. 2021)",
    "gdp": "(ε, δ)-DP via Gaussian DP, CLT approximation (Dong et al. 2019; may underestimate ε)",
    "pld": "(ε, δ)-DP via privacy loss distributions (Koskela et al. 2020; Google's dp-accounting, pessimistic)",
}
#: the package that computes each accountant's ε, by its distribution name (as ``importlib.metadata`` and a ledger
#: entry's ``library_versions`` spell it): a card names it beside the accountant (``accountant_library``), so that a
#: reader can rerun the same accounting
ACCOUNTANT_LIBRARIES: dict[str, str] = {"rdp": "opacus", "prv": "opacus", "gdp": "opacus", "pld": "dp-accounting"}
#: the PLD's value grid: its pessimistic estimate is an upper bound at any grid, within about this of the exact ε
PLD_DISCRETISATION = 1e-3


def make_accountant(name: str, history: Iterable[Sequence[float]] = ()) -> IAccountant:
    with warnings.catch_warnings():
        # Opacus' GDP accountant warns on every construction; DPCallback warns once instead.
        warnings.filterwarnings("ignore", message="GDP accounting is experimental")
        accountant = _ACCOUNTANT_CLASSES[check_accountant(name)]()
    accountant.history = [(float(s), float(q), int(t)) for s, q, t in history]
    return accountant


def describe_accountant(name: str) -> str:
    return _NOTIONS[check_accountant(name)]


def accountant_library(name: str) -> str:
    """The distribution name of the package that computes the accountant ``name`` (``ACCOUNTANT_LIBRARIES``)."""
    return ACCOUNTANT_LIBRARIES[check_accountant(name)]


def epsilon_spent(history: Iterable[Sequence[float]], delta: float, accountant: str) -> float:
    """ε at ``delta`` after composing every mechanism in ``history`` (0 for an empty history)."""
    history = [h for h in history if int(h[2]) > 0]
    if not history:
        return 0.0
    with warnings.catch_warnings():
        # RDP warns when the optimal order is the largest alpha; the bound is still valid.
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        try:
            if check_accountant(accountant) == "gdp":
                epsilon = _gdp_epsilon(history, delta)
            elif accountant == "pld":
                epsilon = _pld_epsilon(history, delta)
            else:
                epsilon = float(make_accountant(accountant, history).get_epsilon(delta=delta))
        except (ValueError, OverflowError, FloatingPointError, MemoryError):
            # the accountants' numerics give out only where the noise is far too small for
            # any meaningful guarantee; ∞ is the honest answer and stops any budgeted run
            return math.inf
    return epsilon if math.isfinite(epsilon) else math.inf


def _gdp_epsilon(history: list[Sequence[float]], delta: float) -> float:
    """Opacus' GDP accountant reads only the last (σ, q, steps) of its history, so a history of
    several mechanisms would silently lose the earlier ones. Each mechanism is μ-GDP by Opacus'
    CLT formula (Poisson subsampling); μ-GDP mechanisms compose to sqrt(Σ μ²)-GDP (Dong et
    al. 2019, Cor. 2.1). For one mechanism this is exactly Opacus' ``get_epsilon``."""
    mu = math.sqrt(
        sum(
            compute_mu_poisson(steps=int(steps), noise_multiplier=float(sigma), sample_rate=float(rate)) ** 2
            for sigma, rate, steps in history
        )
    )
    return float(eps_from_mu(mu=mu, delta=delta))


def _pld_epsilon(history: list[Sequence[float]], delta: float) -> float:
    """Each (σ, q, steps) as ``steps`` Poisson-subsampled Gaussians (the plain Gaussian at q = 1) in
    dp-accounting's PLD accountant, add/remove neighbours. Its pessimistic discretisation keeps ε an upper
    bound; unlike Opacus' PRV it stays finite where the noise is small and ε runs into the hundreds."""
    accountant = PLDAccountant(value_discretization_interval=PLD_DISCRETISATION)
    for sigma, rate, steps in history:
        gaussian = dp_accounting.GaussianDpEvent(float(sigma))
        event = gaussian if float(rate) >= 1 else dp_accounting.PoissonSampledDpEvent(float(rate), gaussian)
        accountant.compose(event, int(steps))
    epsilon = float(accountant.get_epsilon(delta))
    return epsilon if math.isfinite(epsilon) else _pld_epsilon_by_delta(accountant, delta)


def _pld_epsilon_by_delta(accountant: PLDAccountant, delta: float) -> float:
    """The smallest ε on a grid of 1e-6·ε whose δ(ε) is at most ``delta``, by bisection on the composed PLD's
    δ(ε), rounded up. dp-accounting's own ε search divides by a vanishing mass where ε runs past ~700 and returns
    ∞ at some step counts (GS-WGAN's sanitiser at 2,380–2,412 steps, finite again at 2,500); δ(ε) is monotone
    and stays finite there, and the bound is the same pessimistic PLD's."""
    low, high = 0.0, 1.0
    while accountant.get_delta(high) > delta:
        low, high = high, 2 * high
        if high > 1e7:
            return math.inf
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (low, middle) if accountant.get_delta(middle) <= delta else (middle, high)
    return high


def calibrate_noise_multiplier(
    target_epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    accountant: str,
    prior_history: Iterable[Sequence[float]] = (),
) -> float:
    """Smallest σ (to Opacus' search tolerance) whose ε after ``steps`` steps, composed with
    ``prior_history`` (earlier mechanisms on the same data, or on data composed with it), is ≤ the target."""
    prior = [h for h in prior_history if int(h[2]) > 0]
    if not prior and accountant != "pld":  # Opacus calibrates its own accountants
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
            warnings.filterwarnings("ignore", category=RuntimeWarning)  # PRV's log(1 - q) at q = 1
            try:
                return float(
                    get_noise_multiplier(
                        target_epsilon=target_epsilon,
                        target_delta=delta,
                        sample_rate=sample_rate,
                        steps=steps,
                        accountant=check_accountant(accountant),
                    )
                )
            except ValueError as error:  # Opacus' "The privacy budget is too low."
                raise PrivacyConfigError(
                    f"no noise multiplier reaches ε = {target_epsilon:.4g} in {steps} steps ({error}); ask for a "
                    "larger ε or fewer steps"
                ) from None
    if epsilon_spent(prior, delta, accountant) >= target_epsilon:
        raise PrivacyConfigError(
            f"earlier mechanisms on this data, or on data the ledger composes with it (uses that may share records: "
            f"the card states their composition), already spend ε ≥ {target_epsilon}; nothing is left to train "
            "with. Ask for a larger ε: it is the ε the card will state"
        )

    def within(sigma: float) -> bool:
        return epsilon_spent([*prior, (sigma, sample_rate, steps)], delta, accountant) <= target_epsilon

    low, high = 0.0, 1.0
    while not within(high):
        low, high = high, 2 * high
        if high > 1e6:
            raise PrivacyConfigError(f"no noise multiplier below 1e6 reaches ε = {target_epsilon}")
    while high - low > 0.005 * high:
        mid = (low + high) / 2
        low, high = (low, mid) if within(mid) else (mid, high)
    return high


def max_steps_within(
    target_epsilon: float,
    delta: float,
    noise_multiplier: float,
    sample_rate: float,
    accountant: str,
    prior_history: Iterable[Sequence[float]] = (),
    upper: int = 1_000_000,
) -> int:
    """Largest number of further steps whose composed ε stays ≤ ``target_epsilon``.

    Binary search over the accountant itself, so the stop rule agrees exactly with what
    the ledger will report.
    """
    prior = list(prior_history)

    def within(steps: int) -> bool:
        if steps == 0:
            return epsilon_spent(prior, delta, accountant) <= target_epsilon
        history = prior + [(noise_multiplier, sample_rate, steps)]
        return epsilon_spent(history, delta, accountant) <= target_epsilon

    if not within(0):
        return 0
    low, high = 0, 1
    while high < upper and within(high):
        low, high = high, high * 2
    if high >= upper and within(upper):
        return upper
    while high - low > 1:
        mid = (low + high) // 2
        if within(mid):
            low = mid
        else:
            high = mid
    return low
