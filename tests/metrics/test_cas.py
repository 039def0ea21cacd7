"""The CAS harness: classifiers of DP-LFlow appendix E.4 on real data and on a replaying generator."""

import pytest
import torch
from torch import Tensor, nn

from zoo.data import load_images
from zoo.methods import DPGenerativeModel
from zoo.metrics import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import build_network, flip_and_crop, train_and_test


class Replay(DPGenerativeModel):
    """Not private: replays real training images of the requested class (a harness check)."""

    method, privacy_barrier, released_modules, num_classes = "replay", "B4", (), 10

    def __init__(self, images: Tensor, labels: Tensor):
        super().__init__()
        self.images, self.labels = images, labels

    def generate(self, n: int, labels: Tensor | None, generator: torch.Generator) -> Tensor:
        out = torch.empty(n, *self.images.shape[1:])
        for label in labels.unique():
            pool = self.images[self.labels == label]
            rows = labels == label
            out[rows] = pool[torch.randint(len(pool), (int(rows.sum()),), generator=generator)]
        return out


def test_cnn_matches_the_papers_architecture():
    cnn = build_network("cnn", (1, 28, 28), 10)
    assert [type(m).__name__ for m in cnn] == [
        "Conv2d",
        "Dropout",
        "ReLU",
        "Conv2d",
        "Dropout",
        "ReLU",
        "Flatten",
        "Linear",
    ]
    assert cnn(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    resnet = build_network("resnet", (1, 28, 28), 10)
    assert resnet(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    mlp = build_network("mlp", (1, 28, 28), 10)
    assert [m.out_features for m in mlp if isinstance(m, nn.Linear)] == [100, 10]


@pytest.mark.heavy
def test_cas_of_a_replaying_generator_is_high(data_dir):
    images, labels = load_images("mnist", train=True)
    results = classifier_accuracy_on_synthetic(
        Replay(images[:5000], labels[:5000]), "mnist", classifiers=("mlp", "lr"), num_samples=2000, runs=2, epochs=3
    )
    assert results["cas_mlp"]["value"] > 80 and results["cas_lr"]["value"] > 80
    assert (
        len(results["cas_mlp"]["runs"]) == 2 and results["cas_mlp"]["protocol"]["test"] == "mnist official test split"
    )


def test_cas_refuses_unconditional_models():
    from tests.zoo.test_hub import tiny_private_flow

    with pytest.raises(ValueError, match="CAS needs labelled samples"):
        classifier_accuracy_on_synthetic(tiny_private_flow(), "mnist")


@pytest.mark.slow
def test_cas_cnn_reaches_97_percent_on_real_mnist(data_dir):
    train, test = load_images("mnist", train=True), load_images("mnist", train=False)
    accuracy = train_and_test("cnn", train, test, num_classes=10, seed=0, epochs=10)
    print(f"CAS CNN trained on real MNIST: {accuracy:.2f}%")
    assert accuracy >= 97


def test_the_protocol_counts_the_distinct_images_a_model_repeats(data_dir):
    """A released set of 20 images served 200 times is 20 distinct training images, and says so."""
    images, labels = load_images("mnist", train=True)
    few = Replay(images[:20], labels[:20])
    results = classifier_accuracy_on_synthetic(few, "mnist", classifiers=("lr",), num_samples=200, runs=1)
    assert results["cas_lr"]["protocol"]["train"].startswith("200 synthetic samples (20 distinct images)")


def test_flip_and_crop_mirrors_half_the_images_and_shifts_them_within_the_padding():
    torch.manual_seed(0)
    images = torch.rand(64, 3, 8, 8) + 1.0  # no pixel is 0, the padding's value
    unshifted = flip_and_crop(images, pad=0)
    mirrored = [torch.equal(a, i.flip(-1)) for a, i in zip(unshifted, images, strict=True)]
    kept = [torch.equal(a, i) for a, i in zip(unshifted, images, strict=True)]
    assert all(m or k for m, k in zip(mirrored, kept, strict=True)) and 16 < sum(mirrored) < 48
    shifted = flip_and_crop(images, pad=2)
    assert shifted.shape == images.shape
    for a, i in zip(shifted, images, strict=True):  # a shifted copy of the image or of its mirror
        content = a[a > 0]
        assert content.numel() >= 3 * 6 * 6 and (torch.isin(content, i) | torch.isin(content, i.flip(-1))).all()
    assert sum((a == 0).any().item() for a in shifted) > 32  # most crops take in some padding


def test_each_classifier_trains_by_its_own_settings_and_resnet_augments_only_colour(monkeypatch):
    """Without epochs, MLP/CNN train 10 epochs (DP-LFlow E.4) and the ResNet 20 with flip and crop on colour
    images (chosen on CIFAR-10 validation images); digits are never flipped."""
    from zoo.metrics import cas
    from zoo.metrics.reference import ReferenceImages

    calls = {}

    def record(name, train, test, num_classes, seed, epochs, augment, device):
        calls[(name, train[0].shape[1])] = (epochs, augment)
        return 50.0

    monkeypatch.setattr(cas, "train_and_test", record)
    for channels in (1, 3):
        images, labels = torch.rand(20, channels, 8, 8), torch.arange(20) % 10
        test = ReferenceImages(images, labels, "cifar10 official test split")
        results = classifier_accuracy_on_synthetic(
            Replay(images, labels), test, ("lr", "cnn", "resnet"), num_samples=20, runs=1
        )
    assert calls == {
        ("lr", 1): (None, False),
        ("cnn", 1): (10, False),
        ("resnet", 1): (20, False),
        ("lr", 3): (None, False),
        ("cnn", 3): (10, False),
        ("resnet", 3): (20, True),
    }
    resnet = results["cas_resnet"]
    assert (
        resnet["protocol"]["augmentation"].startswith("flip") and "augmentation" not in results["cas_cnn"]["protocol"]
    )
    assert (
        resnet["real_data_accuracy"] == 62.49 and "cas_resnet_settings.py" in resnet["protocol"]["real_data_reference"]
    )
    assert "real_data_accuracy" not in results["cas_cnn"]
    given = classifier_accuracy_on_synthetic(
        Replay(images, labels), test, ("resnet",), num_samples=20, runs=1, epochs=3
    )
    assert calls[("resnet", 3)] == (3, True) and given["cas_resnet"]["protocol"]["settings"] == "3 epochs, given"
    assert "real_data_accuracy" not in given["cas_resnet"]  # measured with 20 epochs: not the same protocol


def test_train_and_test_refuses_an_unknown_classifier():
    with pytest.raises(ValueError, match="unknown classifier 'vit'"):
        train_and_test(
            "vit", (torch.zeros(2, 1, 8, 8), torch.zeros(2)), (torch.zeros(2, 1, 8, 8), torch.zeros(2)), 2, 0
        )
    with pytest.raises(ValueError, match="epochs must be a positive integer, got 0"):
        train_and_test(
            "cnn", (torch.zeros(2, 1, 8, 8), torch.zeros(2)), (torch.zeros(2, 1, 8, 8), torch.zeros(2)), 2, 0, epochs=0
        )
