"""The P3DM privacy score: nearest real neighbour in feature space, fraction with another attribute."""

import pytest
import torch
from torch import Tensor

from tests.metrics.test_cas import Replay
from zoo.cli import main
from zoo.data import load_images
from zoo.metrics import evaluate
from zoo.metrics.extractors import extractor_weights
from zoo.metrics.privacy_score import privacy_score
from zoo.release.evaluation_results import card_results

needs_extractor = pytest.mark.skipif(not extractor_weights("mnist").exists(), reason="LeNet weights not trained")


def position(x: Tensor) -> Tensor:
    """The toy feature: pixel 0 places an image on a line."""
    return x.flatten(1)[:, :1]


def tag(x: Tensor) -> Tensor:
    """The toy attribute: pixel 1, which the feature does not see."""
    return x.flatten(1)[:, 1].round().long()


def toy_images(positions: list[float], tags: list[int]) -> Tensor:
    return torch.tensor([positions, tags], dtype=torch.float).T.reshape(-1, 1, 1, 2)


def brightest_pixel(x: Tensor) -> Tensor:
    """A 16-label attribute of random 4×4 images: a wrong neighbour shows."""
    return x.flatten(1).argmax(1)


REFERENCE = toy_images([10.0 * k for k in range(12)], [k % 3 for k in range(12)])


def test_copies_of_reference_images_score_zero():
    torch.manual_seed(0)
    reference = torch.rand(300, 1, 4, 4)
    copies = reference[torch.randperm(300)[:100]]
    score = privacy_score(copies, reference, lambda x: x, brightest_pixel, batch_size=7)
    assert score == {"value": 0.0, "differing": 0, "pairs": 100}
    assert privacy_score(torch.rand(100, 1, 4, 4), reference, lambda x: x, brightest_pixel)["value"] > 0.5


@pytest.mark.parametrize("batch_size", [1, 5, 1000])
def test_samples_whose_nearest_neighbour_carries_another_attribute_score_one(batch_size):
    """Each sample lies 1 from reference k (9 from k + 1) but carries tag k + 1: the neighbour is
    found by the feature, not by the attribute, which would pair it with reference k + 1."""
    samples = toy_images([10.0 * k + 1 for k in range(12)], [(k + 1) % 3 for k in range(12)])
    score = privacy_score(samples, REFERENCE, position, tag, batch_size=batch_size)
    assert score == {"value": 1.0, "differing": 12, "pairs": 12}


def test_a_mixed_set_scores_the_fraction_with_another_attribute():
    differ = {2, 5, 6}
    tags = [(k + 1) % 3 if k in differ else k % 3 for k in range(8)]
    samples = toy_images([10.0 * k - 2 for k in range(8)], tags)
    assert privacy_score(samples, REFERENCE, position, tag, batch_size=3) == {
        "value": 3 / 8,
        "differing": 3,
        "pairs": 8,
    }


@pytest.mark.parametrize(
    "samples, reference, message",
    [
        (torch.zeros(0, 1, 1, 2), REFERENCE, "needs samples and reference images, got 0 and 12"),
        (REFERENCE, torch.zeros(0, 1, 1, 2), "needs samples and reference images, got 12 and 0"),
        (torch.zeros(3, 1, 2, 1), REFERENCE, r"samples \(1, 2, 1\) and reference images \(1, 1, 2\) differ"),
    ],
)
def test_bad_input_is_a_plain_error(samples, reference, message):
    with pytest.raises(ValueError, match=message):
        privacy_score(samples, reference, position, tag)


@pytest.mark.heavy
@needs_extractor
def test_evaluate_scores_against_the_test_split_with_the_shipped_lenet(data_dir):
    images, labels = load_images("mnist", train=True)
    report = evaluate(Replay(images[:2000], labels[:2000]), "mnist", metrics=("privacy_score_lenet",), num_samples=500)
    result = report["results"]["privacy_score_lenet"]
    assert 0 <= result["value"] < 0.1 and result["pairs"] == 500  # real digits sit among their own class
    (entry,) = card_results(report, "MNIST", "image-generation")
    assert "reference=mnist official test split (10000 images)" in entry["metric_config"]
    assert "lenet-mnist" in entry["metric_name"]


def test_evaluate_help_lists_the_privacy_score(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "privacy_score_lenet" in capsys.readouterr().out
