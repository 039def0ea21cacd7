"""Real-data references for CAS: what a classifier trained on real, never-protected images of the size of a
card's synthetic set reaches under the same protocol, so a card's CAS reads against a ceiling."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RealDataReference:
    """One measured accuracy (%): ``train`` are real images that no shipped model protects."""

    accuracy: float
    epochs: int
    augment: bool
    train: str
    runs: int
    command: str

    def description(self) -> str:
        """How the accuracy was measured, for a protocol (the accuracy itself is ``real_data_accuracy``)."""
        runs = "1 run" if self.runs == 1 else f"mean of {self.runs} runs"
        return f"trained on {self.train}, {runs}: {self.command}"


#: by (classifier, test images' description); measured once, in one thread, in 26.8 minutes
REAL_DATA_REFERENCES = {
    ("resnet", "cifar10 official test split"): RealDataReference(
        accuracy=62.49,
        epochs=20,
        augment=True,
        train="the 10,000 CIFAR-10 validation images every CIFAR-10 recipe holds out (no shipped model protects them)",
        runs=1,
        command="python experiments/cas_resnet/cas_resnet_settings.py --epochs 20 --augment --reference",
    ),
}


def real_data_reference(classifier: str, test: str, epochs: int | None, augment: bool) -> RealDataReference | None:
    """The reference measured for ``classifier`` tested on ``test`` with the same ``epochs`` and ``augment``."""
    reference = REAL_DATA_REFERENCES.get((classifier, test))
    if reference is None or (reference.epochs, reference.augment) != (epochs, augment):
        return None
    return reference
