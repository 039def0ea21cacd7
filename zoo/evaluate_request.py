"""What ``dpzoo evaluate`` is asked (``EvaluateRequest``): its options declared once (``zoo.request_options``), read
by the command line's parser, by the command that runs it, and by the card, which records the command that repeats
an evaluation (``zoo.metrics.records``). Torch-free."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zoo.request_options import card_command, folder_name, option

#: the sampling and classifier seed when none is given
DEFAULT_SEED = 0
#: where the model samples when no device is given
DEFAULT_DEVICE = "cpu"


@dataclass(frozen=True)
class EvaluateRequest:
    """``dpzoo evaluate MODEL`` and its options, as Python values (the flags' names with ``_`` for ``-``). The help of
    ``--metrics`` names the registered metrics: the parser fills ``{metric_names}`` in (``add_arguments``)."""

    model: str = option("model id, folder, or hf-hub:org/name", positional=True, spell=folder_name)
    dataset: str | None = option(
        "real data to compare with: a named dataset, or local data as dpzoo train takes it (a folder, a table, a saved "
        "datasets dataset: evaluated on its test part, or the held-out part its model recorded); default:"
        " the named dataset the model was trained on, as its config.json records "
        "it (a model trained on your own folder needs the folder given)",
        None,
        spell=folder_name,
    )
    reference: str | None = option(
        "the real images to compare with: 'test' (default: a named dataset's test split, a folder's test/ part or the "
        "held-out part its model recorded), a folder of held-out images (root/<class>/*), or 'train' (named "
        "datasets: the field's FID protocol against the whole training split; a local diagnostic that --write-card "
        "refuses, since the zoo's models protect those images)",
        None,
        spell=folder_name,
    )
    metrics: str | None = option(
        "comma-separated (default: fid_lenet,cas for mnist/fashion_mnist, fid,cas for an image folder). By model: "
        "{metric_names}",
        None,
    )
    label: int | None = option("images: compare with one class (one-class models)", None, parse=int)
    num_samples: int | None = option(
        "synthetic samples (default: 10000 images; tables: training rows)", None, parse=int
    )
    split: int | None = option("tables: the 90/10 split the model was trained on", None, parse=int)
    runs: int | None = option("images: CAS training runs (default: 5)", None, parse=int)
    epochs: int | None = option(
        "images: CAS epochs for MLP/CNN/ResNet (default: 10 for MLP and CNN, 20 for ResNet)", None, parse=int
    )
    seed: int = option("seed for sampling and classifiers", DEFAULT_SEED, parse=int)
    feature_extractor_weights: str | None = option("local Inception weights for fid/kid/isc", None)
    device: str = option(
        "cpu (default), cuda, cuda:N, mps, or auto (cuda when there is one): where the model samples, and the CAS "
        "classifiers and the FID/KID feature passes (float32, TF32 off) run",
        DEFAULT_DEVICE,
    )
    json: str | None = option("also write the results as JSON here", None, on_card=False)
    overwrite: bool = option("replace the --json file if it exists", False, on_card=False)
    write_card: bool = option(
        "record the results in the model's config and card, beside the card's metrics measured under the same "
        "protocol (dataset, reference, samples, seed, label)",
        False,
    )
    replace_evaluation: bool = option(
        "with --write-card: replace the card's evaluation, also one under another protocol", False
    )

    def evaluation_options(self) -> dict[str, Any]:
        """The options ``zoo.evaluate`` takes, as it names them, those given only (the device as given)."""
        given = {
            "metrics": tuple(self.metrics.split(",")) if self.metrics else None,
            "num_samples": self.num_samples,
            "seed": self.seed,
            "device": self.device,
            "runs": self.runs,
            "epochs": self.epochs,
            "feature_extractor_weights_path": self.feature_extractor_weights,
            "label": self.label,
            "split": self.split,
            "reference": self.reference,
        }
        return {name: value for name, value in given.items() if value is not None}

    def card_command(self) -> str:
        """The command that repeats this evaluation, as a card records it: folders by their names, options at their
        defaults left out."""
        return card_command(("dpzoo", "evaluate"), self)
