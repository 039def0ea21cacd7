"""PAC privacy: the calibration against a mechanism whose covariance is known in closed form, its
confidence, records planted from outside, and that a PAC guarantee is never stated or composed as (ε, δ)."""

import math

import pytest
import torch

from zoo.privacy import DPBudget, PACBudget, PrivacyConfigError, PrivacyLedger
from zoo.privacy.pac import calibrate_isotropic_noise, gaussian_mutual_information
from zoo.privacy.summary import guarantee_summary, privacy_metadata
from zoo.release.index import model_cards_index
from zoo.stages import PACRelease, Release, check_plan

RATE = 0.5


def subset_sum(pool: torch.Tensor):
    """M(X) = Σ_{i ∈ X} vᵢ: with independent membership at rate q, Cov = q(1 − q)·Σ vᵢvᵢᵀ exactly."""
    return lambda keep: pool[keep].sum(dim=0)


def pool_of(records: int, dim: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(records, dim, generator=torch.Generator().manual_seed(seed)) / math.sqrt(dim)


def exact_covariance(pool: torch.Tensor) -> torch.Tensor:
    return RATE * (1 - RATE) * pool.double().T @ pool.double()


def squared_diameter(pool: torch.Tensor) -> float:
    """‖M(X) − M(X')‖² ≤ (Σ‖vᵢ‖)² for any two subsets."""
    return pool.norm(dim=1).sum().item() ** 2


def release(budget: PACBudget, mechanism, pool_size: int, diameter: float, dataset_id: str):
    """The budget's release on the named data, and the record it entered in its ledger."""
    budget.bind(PrivacyLedger(), dataset_id)
    noisy = budget.release(mechanism, pool_size, diameter)
    return noisy, budget.ledger.pac_releases[-1]


def test_calibration_reproduces_the_closed_form_of_a_known_covariance():
    pool = pool_of(40, 12)
    covariance = exact_covariance(pool)
    budget = PACBudget(mi_bound=2.0, confidence=0.9, mc_runs=6000, subset_rate=RATE, seed=0)
    noisy, entry = release(budget, subset_sum(pool), len(pool), squared_diameter(pool), "planted")
    trace = covariance.trace().item()
    # the Monte-Carlo estimate of tr Σ matches the closed form within a few standard errors
    assert entry.variance_estimate == pytest.approx(trace, rel=0.05)
    # σ² = T / (2v), T = the estimate plus the Hoeffding term, which vanishes as 1/√runs
    hoeffding = squared_diameter(pool) / 2 * math.sqrt(math.log(1 / 0.1) / (2 * 3000))
    assert entry.noise_std**2 == pytest.approx((entry.variance_estimate + hoeffding) / (2 * 2.0), rel=1e-9)
    closed_form = math.sqrt(trace / (2 * 2.0))
    assert closed_form <= entry.noise_std
    # the exact mutual information of the Gaussian channel at the calibrated σ is within the bound
    eigenvalues = torch.linalg.eigvalsh(covariance)
    assert gaussian_mutual_information(eigenvalues, entry.noise_std) <= 2.0
    assert (
        gaussian_mutual_information(eigenvalues, closed_form)
        <= 2.0
        < gaussian_mutual_information(eigenvalues, closed_form / 2)
    )
    assert noisy.shape == (12,) and entry.output_dim == 12 and entry.mc_runs == 6000


def test_the_confidence_holds_over_repeated_calibrations():
    pool = pool_of(30, 8, seed=1)
    trace = exact_covariance(pool).trace().item()
    generator = torch.Generator().manual_seed(2)
    bounds, estimates = [], []
    for _ in range(300):
        runs = torch.stack([subset_sum(pool)(torch.rand(30, generator=generator) < RATE) for _ in range(10)])
        calibration = calibrate_isotropic_noise(runs, 1.0, 0.8, squared_diameter(pool))
        bounds.append(calibration.variance_bound)
        estimates.append(calibration.variance_estimate)
    # the bound covers tr Σ at least as often as promised; the estimate alone would not
    assert sum(b >= trace for b in bounds) / 300 >= 0.8
    assert sum(e >= trace for e in estimates) / 300 < 0.8


def test_a_planted_record_raises_the_noise_to_cover_its_membership():
    pool = pool_of(50, 6, seed=3)
    planted = torch.cat([pool, torch.full((1, 6), 3.0)])
    mi_bound = 1.0
    calm = PACBudget(mi_bound, mc_runs=4000, subset_rate=RATE, seed=4)
    loud = PACBudget(mi_bound, mc_runs=4000, subset_rate=RATE, seed=4)
    _, without = release(calm, subset_sum(pool), len(pool), squared_diameter(planted), "without")
    _, with_planted = release(loud, subset_sum(planted), len(planted), squared_diameter(planted), "with")
    shift = planted[-1].square().sum().item()
    # whether the planted record is in X moves M(X) by v_p: the noise covers its share q(1 − q)‖v_p‖²
    assert with_planted.noise_std**2 >= without.noise_std**2 + 0.9 * RATE * (1 - RATE) * shift / (2 * mi_bound)
    assert gaussian_mutual_information(torch.tensor([RATE * (1 - RATE) * shift]), with_planted.noise_std) <= mi_bound


@pytest.mark.parametrize(
    "settings",
    [dict(mi_bound=0), dict(mi_bound=-1.0), dict(mi_bound=math.inf), dict(confidence=1.0), dict(mc_runs=1)],
)
def test_bad_pac_settings_are_refused(settings):
    with pytest.raises(PrivacyConfigError):
        PACBudget(**{"mi_bound": 1.0, **settings})


def test_runs_further_apart_than_the_diameter_are_refused():
    runs = torch.tensor([[0.0, 0.0], [3.0, 0.0]])
    with pytest.raises(PrivacyConfigError, match="further apart"):
        calibrate_isotropic_noise(runs, 1.0, 0.9, squared_diameter=4.0)


def test_a_plan_is_either_dp_or_pac():
    pac_stage = PACRelease("release", lambda data, budget: None)
    dp_stage = Release("statistic", lambda data, budget: None)
    with pytest.raises(PrivacyConfigError, match="PACBudget"):
        check_plan([pac_stage], DPBudget(noise_multiplier=1.0))
    with pytest.raises(PrivacyConfigError, match="PAC releases only"):
        check_plan([dp_stage, pac_stage], PACBudget(1.0))
    check_plan([pac_stage], PACBudget(1.0))


def pac_config(tmp_path):
    from lightning_modules import P3DM
    from zoo.release.hub import save_pretrained
    from zoo.release.layout import load_config
    from zoo.training import train

    recipe = P3DM.tiny_recipe()
    model = P3DM(**recipe.architecture)
    unseeded = {**recipe.privacy, "seed": None}  # a seeded release states no guarantee
    train(model, recipe.data(), recipe.budget(**unseeded), accelerator="cpu", logger=False)
    folder = save_pretrained(model.eval(), tmp_path / "checkpoints" / "p3dm-tiny")
    return model, load_config(folder)


def test_a_pac_guarantee_is_never_printed_or_composed_as_epsilon_delta(tmp_path, monkeypatch, capsys):
    from zoo.cli import main
    from zoo.release.loading import list_models

    model, config = pac_config(tmp_path)
    ledger = PrivacyLedger.from_dict(config["privacy_ledger"])
    assert ledger.pac_releases == model.privacy_ledger.pac_releases and not ledger.guarantees()
    with pytest.raises(KeyError):
        ledger.epsilon(ledger.pac_releases[0].dataset_id)
    privacy = privacy_metadata(config)
    assert "epsilon" not in privacy and "delta" not in privacy
    summary = guarantee_summary(privacy)
    assert summary == "PAC privacy: MI ≤ 1000 nats (confidence 0.95)"

    monkeypatch.setenv("DPZOO_CHECKPOINTS_DIR", str(tmp_path / "checkpoints"))
    (row,) = list_models()
    assert row["guarantee"] == summary and row["epsilon"] is None and row["delta"] is None
    assert row["pac"][0]["mi_bound_nats"] == 1000.0
    index = model_cards_index(tmp_path / "checkpoints")
    (line,) = [line for line in index.splitlines() if "p3dm-tiny" in line]
    assert summary in line and "ε" not in line and "δ" not in line
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert summary in listed and "ε" not in listed
    assert main(["sample", "p3dm-tiny", "--n", "3", "--out", str(tmp_path / "grid.png")]) == 0
    printed = capsys.readouterr().out
    assert "PAC privacy: I(X; release) ≤ 1000 nats" in printed and "ε" not in printed


def test_a_pac_release_cannot_be_fine_tuned_under_dp(tmp_path):
    import zoo  # zoo.finetune, the function (importing the module zoo.finetune would shadow it)

    model, _ = pac_config(tmp_path)
    with pytest.raises(PrivacyConfigError, match="PAC-noised output"):
        zoo.finetune(model, None, target_epsilon=1.0)


def test_a_ledger_mixing_the_notions_is_refused(tmp_path):
    from zoo.privacy import LedgerEntry

    model, config = pac_config(tmp_path)
    ledger = model.privacy_ledger
    ledger.append(LedgerEntry("dp-sgd", "B4", "toy-images", 120, 1.0, 1.0, 0.1, 1e-5, "rdp", steps=3))
    with pytest.raises(ValueError, match="do not compose"):
        _ = ledger.notion
