"""Shrinking the released class means toward their common mean (lightning_modules.parts.shrinkage): a class clear of
the noise keeps its deviation and a class buried in it is fitted to the common mean; on average the shrunk columns are
nearer the true sums than the released ones; in DP-MEPF and DP-MERF it is post-processing of the one release (the same
ledger entry, the release's noise drawn alike, a second accountant recomputing its ε), with or without a shared part;
`dpzoo train` puts it in the recipe unless `--no-shrink`, which a method without such a release refuses."""

import dp_accounting
import pytest
import torch
from dp_accounting import pld

from lightning_modules import DPMEPF, DPMERF
from lightning_modules.parts.shrinkage import shrink_to_common_mean
from tests.folders import write_image_folder
from tests.methods.test_dp_mepf import QUIET, TINY
from tests.methods.test_dp_merf import TINY as MERF_TINY
from zoo.errors import UserError
from zoo.folder_training import plan_folder
from zoo.front_checks import check_train
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.train_request import TrainRequest
from zoo.training import train


def noisy_columns(separation: float, noise_sd: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Five classes' true sums on 200 coordinates (a shared part, then ``separation`` apart) and a noisy release."""
    draw = torch.Generator().manual_seed(seed)
    common = torch.rand(200, 1, generator=draw)
    true = common + separation * torch.randn(200, 5, generator=draw)
    return true, true + noise_sd * torch.randn(200, 5, generator=draw)


def test_a_class_clear_of_the_noise_keeps_its_deviation_and_one_buried_in_it_goes_to_the_common_mean():
    true, released = noisy_columns(separation=1.0, noise_sd=1e-3)
    shrunk, kept = shrink_to_common_mean(released, 1e-3)
    assert kept.min() > 0.99 and torch.allclose(shrunk, released, atol=1e-3)
    _, buried = noisy_columns(separation=0.0, noise_sd=1.0)
    shrunk, kept = shrink_to_common_mean(buried, 1.0)
    assert kept.max() < 0.2
    common = buried.mean(dim=1, keepdim=True)
    assert torch.allclose(shrunk - common, kept * (buried - common), atol=1e-6)  # toward the common mean as released


def test_on_average_the_shrunk_columns_are_nearer_the_true_sums_than_the_release():
    """James-Stein: lower expected squared error whatever the true sums, seen here at a signal-to-noise near 1."""
    errors = []
    for seed in range(20):
        true, released = noisy_columns(separation=0.1, noise_sd=0.1, seed=seed)
        shrunk, _ = shrink_to_common_mean(released, 0.1)
        errors.append(((shrunk - true).square().sum() / (released - true).square().sum()).item())
    assert sum(errors) / len(errors) < 0.7


def test_one_class_has_nothing_to_shrink_toward():
    columns = torch.randn(10, 1)
    shrunk, kept = shrink_to_common_mean(columns, 1.0)
    assert torch.equal(shrunk, columns) and kept.tolist() == [1.0]


@pytest.mark.parametrize(
    "method, settings",
    [(DPMEPF, TINY), (DPMEPF, {**TINY, "shared_weight": 0.6}), (DPMERF, MERF_TINY)],
    ids=["dp-mepf", "dp-mepf-shared-part", "dp-merf"],
)
def test_the_shrinkage_is_post_processing_of_the_one_release(method, settings):
    """With the release's noise drawn alike (a seeded budget, tests only), the model fitted with the shrinkage holds
    the shrunk release of the model fitted without it, under the same one ledger entry; its ε recomputes."""
    released = {}
    for shrink in (False, True):
        model = method(**settings, shrink_to_common=shrink)
        budget = DPBudget(target_epsilon=1.0, accountant="prv", noise_seed=3)
        train(model, toy_images(), budget, max_steps=1, **QUIET)
        (entry,) = model.privacy_ledger.entries
        released[shrink] = (model, entry)
    (plain, plain_entry), (shrunk, entry) = released[False], released[True]
    assert entry.noise_multiplier == plain_entry.noise_multiplier and entry.note == plain_entry.note
    assert 0 <= shrunk.release_kept.min() and shrunk.release_kept.max() <= 1
    common = plain.released_embedding.mean(dim=1, keepdim=True)
    expected = common + shrunk.release_kept * (plain.released_embedding - common)
    assert torch.allclose(shrunk.released_embedding, expected, atol=1e-6)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(entry.noise_multiplier))
    assert accountant.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("method", ["dp-mepf", "dp-merf"])
def test_dpzoo_train_shrinks_unless_told_not_to(tmp_path, method):
    folder = write_image_folder(tmp_path / "photos", per_class=12, size=(32, 32))
    request = TrainRequest(str(folder), method, 10.0)
    assert plan_folder(request).recipe(request)["model"]["init_args"]["shrink_to_common"] is True
    kept = TrainRequest(str(folder), method, 10.0, no_shrink=True)
    assert "shrink_to_common" not in plan_folder(kept).recipe(kept)["model"]["init_args"]
    assert "--no-shrink" in kept.card_command()


def test_a_method_without_a_mean_embedding_release_refuses_no_shrink(tmp_path):
    folder = write_image_folder(tmp_path / "photos", per_class=2)
    with pytest.raises(UserError, match="--no-shrink applies to dp-mepf, dp-merf, not to dp2-vae"):
        check_train(str(folder), "dp2-vae", 1.0, no_shrink=True)


def test_the_card_says_the_release_was_shrunk():
    model = DPMERF(**MERF_TINY, shrink_to_common=True)
    train(model, toy_images(), DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)
    config = {"architecture": dict(model.hparams), "privacy_ledger": {"entries": [{}]}}
    assert any("shrunk toward the mean of all classes" in note for note in DPMERF.card_notes(config))
    config["architecture"]["shrink_to_common"] = False
    assert not any("shrunk" in note for note in DPMERF.card_notes(config))
