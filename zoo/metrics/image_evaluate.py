"""Evaluation of image generators against a named set's test split or local data's held-out images
(registered with ``zoo.metrics.datasets``): the image metrics' specs (``zoo.metrics.specs``) are checked, then
computed on one ``ImageRun``."""

from __future__ import annotations

from typing import Any

from zoo.data.sources import named, named_sources
from zoo.methods import DPGenerativeModel
from zoo.metrics.classifiers import ACCURACY_UNIT
from zoo.metrics.computation import check_requested, compute
from zoo.metrics.datasets import Evaluator, register_evaluator
from zoo.metrics.image_computations import lenet_sets
from zoo.metrics.reference import ReferenceImages, is_local_images, reference_images
from zoo.metrics.runs import ImageRun
from zoo.release.metric_spec import metric_spec
from zoo.shapes import DataShapeError


def evaluate_images(
    model: DPGenerativeModel,
    dataset: str,
    metrics: tuple[str, ...],
    num_samples: int | None = None,
    seed: int = 0,
    progress: bool = True,
    figures: bool = False,
    runs: int = 5,
    epochs: int | None = None,
    feature_extractor_weights_path: str | None = None,
    label: int | None = None,
    audit_size: int = 2000,
    reference: str | None = None,
) -> dict[str, Any]:
    """torch-fidelity metrics, CAS and the P3DM privacy score on ``num_samples`` samples (default
    10,000) against the evaluation images (``zoo.metrics.reference``: a named dataset's test split, an
    image folder's ``test/``, the held-out folder ``reference``, or else the held-out part the model recorded
    for a folder without ``test/``), densities of those images, and the
    membership audit (a local diagnostic); see ``zoo.evaluate``. ``figures`` is part of the evaluator
    interface; images add none (samples.png shows them). Everything runs where the model is (``zoo.evaluate``
    puts it on its ``device``): sampling, the classifiers and the feature passes."""
    num_samples = num_samples or 10_000
    check_requested(metrics, dataset, model, label)
    shape = model.data_arguments().get("image_shape")
    recorded = (model.pretrained_config or {}).get("data")
    test = reference_images(dataset, shape, reference, recorded, model.privacy_ledger)
    _check_model_fits(model, shape, test, metrics)
    run = ImageRun(
        model=model,
        dataset=dataset,
        test=test,
        label=label,
        num_samples=num_samples,
        seed=seed,
        progress=progress,
        runs=runs,
        epochs=epochs,
        weights_path=feature_extractor_weights_path,
        audit_size=audit_size,
    )
    results = compute(metrics, "images", run)
    accuracies = [name for name, result in results.items() if result.get("unit") == ACCURACY_UNIT]
    return {
        "dataset": dataset,
        "reference": test.description,
        **({"not_publishable": test.protected} if test.protected else {}),
        "label": label,
        "num_samples": num_samples,
        "seed": seed,
        "results": results,
        # what the accuracies are read against, printed beside them (``record_evaluation`` keeps it off the card)
        **({"label_baseline": {**test.guessing_baseline(), "metrics": accuracies}} if accuracies else {}),
    }


def _check_model_fits(
    model: DPGenerativeModel, shape: tuple[int, ...] | None, test: ReferenceImages, metrics: tuple[str, ...]
) -> None:
    """The model's image ``shape`` and (for metrics that compare labels) class count against the real images'."""
    if shape is not None and tuple(shape) != tuple(test.images.shape[1:]):
        raise DataShapeError(
            f"{model.method} makes {'×'.join(map(str, shape))} images, but {test.description} holds "
            f"{'×'.join(map(str, test.images.shape[1:]))} images: evaluate it on data of its own shape"
        )
    labelled = [m for m in metrics if metric_spec(m).needs_labels]
    if labelled and model.num_classes is not None and model.num_classes != test.num_classes:
        raise DataShapeError(
            f"{', '.join(labelled)} compare labels, but {model.method} has {model.num_classes} classes and "
            f"{test.description} {test.num_classes}: evaluate it on data with its own classes"
        )


register_evaluator(
    Evaluator(
        datasets=tuple(named_sources()),
        data="images",
        task_type="image-generation",
        run=evaluate_images,
        options=("runs", "epochs", "feature_extractor_weights_path", "label", "audit_size", "reference"),
        # a set registered after this one (a test's) and any local data: a folder, a table, a saved dataset
        accepts=lambda dataset: named(dataset) is not None or is_local_images(dataset),
        default_metrics=lambda dataset: ("fid_lenet", "cas") if dataset in lenet_sets() else ("fid", "cas"),
    )
)
