"""Evaluation of image generators against MNIST, Fashion-MNIST or an image folder's held-out images
(registered with ``zoo.metrics.datasets``)."""

from __future__ import annotations

from typing import Any

from zoo.data.images import IMAGE_DATASETS
from zoo.errors import UserError
from zoo.methods import DPGenerativeModel
from zoo.metrics.audit import membership_audit
from zoo.metrics.cas import classifier_accuracy_on_synthetic
from zoo.metrics.classifiers import CLASSIFIERS
from zoo.metrics.datasets import Evaluator, register_evaluator
from zoo.metrics.density import check_density, heldout_log_likelihood, ood_auroc
from zoo.metrics.fidelity import FIDELITY_METRICS, fidelity_metrics
from zoo.metrics.privacy_score import privacy_score_lenet
from zoo.metrics.reference import ReferenceImages, is_image_folder, reference_images
from zoo.metrics.set_accuracy import set_accuracy
from zoo.shapes import DataShapeError

CAS_METRICS = ("cas", *(f"cas_{c}" for c in CLASSIFIERS))
DENSITY_METRICS = {"ood_auroc": ood_auroc, "log_likelihood": heldout_log_likelihood}
IMAGE_METRICS = (*FIDELITY_METRICS, *CAS_METRICS, "set_accuracy", *DENSITY_METRICS, "privacy_score_lenet", "audit")
#: dpzoo's LeNet was trained on MNIST and Fashion-MNIST: its features say nothing about other images
LENET_METRICS = ("fid_lenet", "kid_lenet", "isc_lenet", "privacy_score_lenet")
LENET_DATASETS = ("mnist", "fashion_mnist")
#: metrics that compare labels of samples and real images
LABELLED_METRICS = (*CAS_METRICS, "set_accuracy", "ood_auroc")


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
    device = model.device
    _check_metrics_apply(dataset, metrics)
    classifiers = tuple(dict.fromkeys(c for m in metrics if m.startswith("cas") for c in _classifiers(m)))
    if classifiers and model.num_classes is None:
        raise UserError(f"CAS needs labelled samples, but {model.method} is unconditional; drop the cas metrics")
    if classifiers and label is not None:
        raise UserError("CAS needs every class: drop label or the cas metrics")
    for name in metrics:
        if name in DENSITY_METRICS:
            check_density(name, model, label)
    shape = model.data_arguments().get("image_shape")
    recorded = (model.pretrained_config or {}).get("data")
    test = reference_images(dataset, shape, reference, recorded, model.privacy_ledger)
    _check_model_fits(model, shape, test, metrics)
    results: dict[str, Any] = {
        name: DENSITY_METRICS[name](model, test, label) for name in metrics if name in DENSITY_METRICS
    }
    if "set_accuracy" in metrics:
        if label is not None:
            raise UserError("set_accuracy needs every class: drop label or set_accuracy")
        results["set_accuracy"] = set_accuracy(model, test, runs, seed, device)
    if "audit" in metrics:
        results["audit"] = _audit(model, dataset, label, audit_size, seed)
    fidelity = tuple(m for m in metrics if m in FIDELITY_METRICS)
    privacy = "privacy_score_lenet" in metrics
    if fidelity or classifiers or privacy:
        samples = model.sample(num_samples, seed=seed, progress=progress)
    if privacy:  # every class of the test split, even with label: the attribute is the class
        results["privacy_score_lenet"] = privacy_score_lenet(samples, dataset, device)
    if fidelity:
        real = test.of_class(label)
        measured = fidelity_metrics(
            samples, real.images, fidelity, dataset, feature_extractor_weights_path, device=device
        )
        for result in measured.values():  # with the KID that comes beside FID at small n
            result["protocol"]["reference_set"] = real.description
        results.update(measured)
    if classifiers:
        results.update(
            classifier_accuracy_on_synthetic(
                model, test, classifiers, num_samples, runs, epochs, seed, samples=samples, device=device
            )
        )
    return {
        "dataset": dataset,
        "reference": test.description,
        **({"not_publishable": test.protected} if test.protected else {}),
        "label": label,
        "num_samples": num_samples,
        "seed": seed,
        "results": results,
    }


def _check_metrics_apply(dataset: str, metrics: tuple[str, ...]) -> None:
    """Before any work: metrics whose extractor or protocol exists only for the named datasets."""
    lenet = [m for m in metrics if m in LENET_METRICS]
    if lenet and dataset not in LENET_DATASETS:
        raise UserError(
            f"{', '.join(lenet)} use dpzoo's LeNet, trained on MNIST and Fashion-MNIST digits and clothes: its "
            f"features mean nothing for the images of {dataset}. Use fid or kid (torch-fidelity's Inception)"
        )
    if "audit" in metrics and dataset not in IMAGE_DATASETS:
        raise UserError(
            "the audit rebuilds the member split of a named dataset from the model's ledger; for an image folder, "
            "run zoo.metrics.membership_audit on your own member and non-member images"
        )


def _check_model_fits(
    model: DPGenerativeModel, shape: tuple[int, ...] | None, test: ReferenceImages, metrics: tuple[str, ...]
) -> None:
    """The model's image ``shape`` and (for metrics that compare labels) class count against the real images'."""
    if shape is not None and tuple(shape) != tuple(test.images.shape[1:]):
        raise DataShapeError(
            f"{model.method} makes {'×'.join(map(str, shape))} images, but {test.description} holds "
            f"{'×'.join(map(str, test.images.shape[1:]))} images: evaluate it on data of its own shape"
        )
    labelled = [m for m in metrics if m in LABELLED_METRICS]
    if labelled and model.num_classes is not None and model.num_classes != test.num_classes:
        raise DataShapeError(
            f"{', '.join(labelled)} compare labels, but {model.method} has {model.num_classes} classes and "
            f"{test.description} {test.num_classes}: evaluate it on data with its own classes"
        )


def _audit(model: DPGenerativeModel, dataset: str, label: int | None, size: int, seed: int) -> dict[str, Any]:
    """Rebuild the split the model was trained on from its ledger's dataset id, and attack it."""
    from zoo.data import ImageDataModule

    data = ImageDataModule(dataset, label=label)
    entries = model.privacy_ledger
    trained_on = {name for e in (entries.entries if entries else []) for name in (e.dataset_id, e.partition_of)}
    if data.dataset_id not in trained_on:
        raise UserError(
            f"the audit rebuilds the member split {data.dataset_id}, but the model's ledger names "
            f"{sorted(n for n in trained_on if n)}"
        )
    data.setup()
    members = tuple(t[:size] for t in data.train_set.tensors)
    non_members = tuple(t[:size] for t in data.validation_set.tensors)
    report = membership_audit(model, members, non_members, num_samples=size, seed=seed)
    nearest = report["nearest_neighbour"]
    return {"value": nearest["auroc"], "tpr_at_1pct_fpr": nearest["tpr_at_1pct_fpr"], **report}


def _classifiers(metric: str) -> tuple[str, ...]:
    return ("lr", "mlp", "cnn") if metric == "cas" else (metric.removeprefix("cas_"),)


register_evaluator(
    Evaluator(
        datasets=tuple(IMAGE_DATASETS),
        metrics=IMAGE_METRICS,
        task_type="image-generation",
        run=evaluate_images,
        options=("runs", "epochs", "feature_extractor_weights_path", "label", "audit_size", "reference"),
        accepts=is_image_folder,
        default_metrics=lambda dataset: ("fid_lenet", "cas") if dataset in LENET_DATASETS else ("fid", "cas"),
    )
)
