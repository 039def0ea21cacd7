"""DP-MEPF's part shared by all classes (lightning_modules.parts.shared_part): a planted record moves the release by at
most its sensitivity 1, split between its class column and the shared column in the ratio of their weights; decoded,
the release holds the class-conditional sums and their total; a second accountant recomputes its ε; the generator is
fitted to both parts; a weight outside [0, 1) is refused before any work; the shape rule forecasts the class parts at
their own noise, and `dpzoo train --shared-part` puts the part in the recipe and says what it does."""

import copy

import dp_accounting
import pytest
import torch
from dp_accounting import pld

from lightning_modules import DPMEPF
from tests.folders import write_image_folder
from tests.methods.test_dp_mepf import EXTREMES, QUIET, TINY, fitted_distance
from tests.toys import RecordingBudget, released_statistic
from zoo.errors import UserError
from zoo.folder_training import _summary, plan_folder
from zoo.forecast import mean_embedding_forecast, release_sigma
from zoo.front_checks import check_shared_part
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.release_shapes import SHAPES, choose_shape, class_sigma, class_weight
from zoo.train_request import TrainRequest
from zoo.training import train

SHARED = 0.6


def toy_release(model: DPMEPF, planted: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    images, labels = toy_images().train_set.tensors
    if planted is not None:
        images, labels = torch.cat([images, planted]), torch.cat([labels, torch.tensor([1])])
    return released_statistic(model, images, labels)


@pytest.mark.parametrize("planted", sorted(EXTREMES))
def test_a_planted_record_moves_the_release_by_at_most_one_split_between_its_class_and_the_shared_part(planted):
    model = DPMEPF(**TINY, shared_weight=SHARED)
    without, sensitivity = toy_release(model)
    with_planted, _ = toy_release(model, EXTREMES[planted])
    assert sensitivity == 1.0 and without.shape == (model.features.features, model.num_classes + 1)
    moved = with_planted - without
    assert 0 < moved.norm() <= sensitivity * (1 + 1e-12)
    untouched = [0, 2]  # the planted record is of class 1
    assert moved[:, untouched].abs().max() == 0
    assert moved[:, 1].norm() / moved[:, -1].norm() == pytest.approx(class_weight(SHARED) / SHARED, rel=1e-9)


def test_decoded_the_release_holds_the_class_sums_and_their_total():
    """Without noise (a recording budget), the class columns decode to the class-conditional release and the shared
    column to the sum of its columns: nothing of the release is lost or rescaled by the split."""
    data = toy_images()
    plain, shared = DPMEPF(**TINY), DPMEPF(**TINY, shared_weight=SHARED)
    for model in (plain, shared):
        model._release_embedding(data, RecordingBudget())
    assert torch.allclose(shared.released_embedding, plain.released_embedding, atol=1e-6)
    assert torch.allclose(shared.released_shared, plain.released_embedding.sum(dim=1, keepdim=True), atol=1e-6)


def test_the_release_spends_the_target_and_a_second_accountant_agrees():
    model = DPMEPF(**TINY, shared_weight=SHARED)
    train(model, toy_images(), DPBudget(target_epsilon=1.0, accountant="prv"), max_steps=2, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.clip_norm == 1.0 and entry.steps == 1 and "shared by all classes" in entry.note
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(entry.noise_multiplier))
    assert accountant.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.02)


OFFICIAL = dict(
    generator="upsampling",
    generator_width=4,
    balanced_labels=True,
    final_decay=0.5,
    learning_rate=0.02,
    residual_average_lr=0.1,
)  # test_dp_mepf's fit with GFMN's residual average


@pytest.mark.parametrize("options", [{"learning_rate": 0.05}, OFFICIAL], ids=["direct", "residual-average"])
def test_the_generator_is_fitted_to_the_class_parts_and_the_shared_part(options):
    torch.manual_seed(0)
    model = DPMEPF(**{**TINY, **options}, shared_weight=SHARED)
    untrained = copy.deepcopy(model.generator)
    train(model, toy_images(), DPBudget(target_epsilon=50.0, noise_seed=0), max_steps=100, **QUIET)
    target, _ = model.matched(model.released_embedding)
    assert target.shape == (model.features.features, model.num_classes + 1)
    assert torch.equal(target[:, -1:], SHARED * model.released_shared)
    if model.residual_average is not None:
        assert model.residual_average.shape == target.shape and model.residual_average.abs().sum() > 0
    assert fitted_distance(model, model.generator) < 0.7 * fitted_distance(model, untrained)


@pytest.mark.parametrize("weight", [1.0, -0.1, 1.5])
def test_a_shared_weight_outside_zero_to_one_is_refused(weight):
    with pytest.raises(UserError, match="shared_weight"):
        DPMEPF(**TINY, shared_weight=weight)


def test_the_card_names_the_shared_part():
    arch = {**dict(DPMEPF(**TINY, shared_weight=SHARED).hparams), "network": "efficientnet_lite0"}
    (note,) = DPMEPF.card_notes({"architecture": arch, "privacy_ledger": {"entries": [{}]}})
    assert "beside their mean over all classes" in note and "0.8 and 0.6" in note


def test_the_rule_forecasts_the_class_parts_at_their_own_noise_and_names_the_shared_mean():
    sigma = release_sigma(10.0, 1e-5)
    alone = choose_shape("dp-mepf", 3, sigma, [100] * 5)
    beside = choose_shape("dp-mepf", 3, sigma, [100] * 5, shared=SHARED)
    assert class_sigma(sigma, SHARED) == pytest.approx(sigma / 0.8)
    assert SHAPES[("dp-mepf", 3)].index(beside.shape) >= SHAPES[("dp-mepf", 3)].index(alone.shape)
    assert "the class parts carry 1.25× the noise" in beside.reason and "the mean of all 500 images" in beside.reason


def test_dpzoo_train_puts_the_shared_part_in_the_recipe_and_says_what_it_does(tmp_path):
    folder = write_image_folder(tmp_path / "photos", per_class=12, size=(32, 32))
    request = TrainRequest(str(folder), "dp-mepf", 10.0, shared_part=0.5)
    plan = plan_folder(request)
    assert plan.recipe(request)["model"]["init_args"]["shared_weight"] == 0.5
    assert "a part shared by all classes of weight 0.5 (--shared-part)" in _summary(plan, None)
    assert "--shared-part 0.5" in request.card_command()
    assert "shared_weight" not in plan_folder(TrainRequest(str(folder), "dp-mepf", 10.0)).recipe(request)["model"]


@pytest.mark.parametrize(
    ("method", "weight", "words"),
    [("dp-mepf", 1.0, "above 0 and below 1"), ("dp-mepf", 0.0, "got 0"), ("dp-merf", 0.5, "not to dp-merf")],
)
def test_dpzoo_train_refuses_a_shared_part_it_cannot_release_before_any_work(method, weight, words):
    with pytest.raises(UserError, match=words):
        check_shared_part(method, weight)


def test_the_forecast_reads_the_class_parts_at_their_own_noise():
    alone = mean_embedding_forecast("dp-mepf", 3, 10.0, 1e-5, [100] * 5, 522)
    beside = mean_embedding_forecast("dp-mepf", 3, 10.0, 1e-5, [100] * 5, 522, settings={"shared_weight": SHARED})
    assert beside.signal_to_noise == pytest.approx(class_weight(SHARED) * alone.signal_to_noise)
    assert "beside the shared part" in beside.lines[0]
