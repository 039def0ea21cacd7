"""A generator that draws one image per class whatever its code is called collapsed in the verdict; one whose
samples vary is not. Measured on the generator's output alone."""

import torch

from zoo.metrics.sample_spread import COLLAPSED_BELOW, sample_spread


class ToyGenerator:
    """Draws images of one grey level per class, plus ``variation`` times fresh noise."""

    def __init__(self, num_classes: int | None, variation: dict[int, float]) -> None:
        self.num_classes, self.variation = num_classes, variation
        self.hparams = {"image_shape": (3, 8, 8)}

    def sample(self, n, labels=None, progress=None):
        label = 0 if labels is None else labels[0]
        base = torch.full((n, 3, 8, 8), 0.1 + 0.2 * label)
        return (base + self.variation[label] * torch.rand(n, 3, 8, 8)).clamp(0, 1)


def test_a_class_drawing_one_image_for_every_code_is_called_collapsed():
    spread = sample_spread(ToyGenerator(3, {0: 0.0, 1: 0.8, 2: 0.2}), ["cats", "dogs", "owls"])
    assert spread.per_class["cats"] == 0 and spread.per_class["dogs"] > 0.1
    assert spread.collapsed == ["cats", "owls"]  # owls jitter (spread 0.06) below the colour bar
    sentence = spread.sentence()
    assert sentence.startswith("collapsed: every code draws nearly the same image in 2 of 3 classes (cats 0.000")
    assert "--init-from" in sentence
    assert "--init-from" not in spread.sentence(from_base=True)  # a fit from a base is told what else would help


def test_samples_that_vary_are_not_called_collapsed_and_an_unconditional_model_is_one_class():
    spread = sample_spread(ToyGenerator(None, {0: 0.8}), ["a", "b"])
    assert list(spread.per_class) == ["all"] and spread.per_class["all"] > COLLAPSED_BELOW[3]
    assert spread.collapsed == [] and spread.sentence().startswith("samples vary within each class (spread 0.2")
