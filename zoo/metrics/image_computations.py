"""How each image metric is computed on a ``zoo.metrics.runs.ImageRun`` (the ``compute`` of its spec in
``zoo.metrics.specs``), and the datasets some of them exist for. Torch-free to import, so that the specs are: each
computation imports its machinery when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zoo.data.sources import named, named_sources

if TYPE_CHECKING:
    from zoo.metrics.runs import ImageRun

Results = dict[str, dict[str, Any]]

#: the classifiers that ``cas`` trains (each ``cas_<classifier>`` trains one)
CAS_CLASSIFIERS = ("lr", "mlp", "cnn")


def fidelity(run: ImageRun, names: tuple[str, ...]) -> Results:
    """torch-fidelity's metrics against the real images (of class ``label``), with the KID that comes beside an FID
    at small n; each protocol names the reference set."""
    from zoo.metrics.fidelity import fidelity_metrics

    real = run.test.of_class(run.label)
    measured = fidelity_metrics(run.samples, real.images, names, run.dataset, run.weights_path, device=run.device)
    for result in measured.values():
        result["protocol"]["reference_set"] = real.description
    return measured


def cas(run: ImageRun, names: tuple[str, ...]) -> Results:
    """Each classifier named (``cas``: the three of DP-LFlow's appendix) trained on the samples, tested on the real
    images."""
    from zoo.metrics.cas import classifier_accuracy_on_synthetic

    classifiers = tuple(
        dict.fromkeys(c for name in names for c in (CAS_CLASSIFIERS if name == "cas" else (name.removeprefix("cas_"),)))
    )
    return classifier_accuracy_on_synthetic(
        run.model,
        run.test,
        classifiers,
        run.num_samples,
        run.runs,
        run.epochs,
        run.seed,
        run.samples,
        device=run.device,
    )


def closeness(run: ImageRun, names: tuple[str, ...]) -> Results:
    """How close samples are to the held-out images, class by class, on the scale of each class's average picture
    (``zoo.metrics.closeness``: the verdict ``dpzoo train`` prints)."""
    from zoo.metrics.closeness import ESTIMATOR, closeness_to_held_out

    measured = closeness_to_held_out(run.model, run.test, seed=run.seed)
    protocol: dict[str, Any] = {
        "feature_extractor": "inception-v3-compat",
        "estimator": ESTIMATOR,
        "samples": measured.samples,
        "reference": measured.held_out,
        "reference_set": run.test.description,
    }
    if named(run.dataset) is None:
        protocol["not_covered"] = (
            "computed on the data owner's held-out images, which the stated (ε, δ) does not cover: the number is "
            "published at the owner's request"
        )
    return {"closeness": {"value": measured.value, "per_class": measured.per_class, "protocol": protocol}}


def set_accuracy(run: ImageRun, names: tuple[str, ...]) -> Results:
    """The paper's ConvNet trained on the released set, tested on the real images."""
    from zoo.metrics import set_accuracy as released_set

    return {"set_accuracy": released_set.set_accuracy(run.model, run.test, run.runs, run.seed, run.device)}


def ood_auroc(run: ImageRun, names: tuple[str, ...]) -> Results:
    """Each class's density against the other classes' images."""
    from zoo.metrics import density

    return {"ood_auroc": density.ood_auroc(run.model, run.test, run.label)}


def log_likelihood(run: ImageRun, names: tuple[str, ...]) -> Results:
    """Mean log-likelihood of the real images (of class ``label``) per modelled dimension."""
    from zoo.metrics import density

    return {"log_likelihood": density.heldout_log_likelihood(run.model, run.test, run.label)}


def privacy_score_lenet(run: ImageRun, names: tuple[str, ...]) -> Results:
    """P3DM's privacy score against every class of the test split, even with ``label``: the attribute is the class."""
    from zoo.metrics import privacy_score

    return {"privacy_score_lenet": privacy_score.privacy_score_lenet(run.samples, run.dataset, run.device)}


def audit(run: ImageRun, names: tuple[str, ...]) -> Results:
    """The membership attack on the member split the model's ledger names."""
    from zoo.metrics.audit import audit_member_split

    return {"audit": audit_member_split(run.model, run.dataset, run.label, run.audit_size, run.seed)}


def lenet_only(dataset: str) -> str | None:
    """Why a LeNet metric cannot run against ``dataset``: any but the named sets it was trained on (``lenet``)."""
    if dataset in lenet_sets():
        return None
    trained = " and ".join(named(name).title for name in lenet_sets())  # type: ignore[union-attr]
    return (
        f"dpzoo's LeNet was trained on {trained}: its features mean nothing for the images of {dataset}. Use fid or "
        "kid (torch-fidelity's Inception)"
    )


def lenet_sets() -> tuple[str, ...]:
    """The named sets dpzoo's LeNet was trained on: its features say nothing about other images."""
    return tuple(name for name, source in named_sources().items() if source.lenet)


def named_only(dataset: str) -> str | None:
    """Why the audit cannot run against ``dataset``: an image folder, whose member split no ledger rebuilds."""
    if named(dataset) is not None:
        return None
    return (
        "the audit rebuilds the member split of a named dataset from the model's ledger; for an image folder, run "
        "zoo.metrics.membership_audit on your own member and non-member images"
    )
