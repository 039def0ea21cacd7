"""``save_pretrained``, ``push_to_hub`` and ``push_folder`` publish an evaluation they are given only when
``--write-card`` would (``zoo.release.publication``): no number against the protected records, no local
diagnostic, no metric without a spec; refused before any file is written or any Hub call. The evaluations the
shipped checkpoints hold pass, so a loaded model saves again with its own."""

import copy
import json

import pytest
from huggingface_hub import constants

import zoo
from tests.zoo.test_hub import tiny_private_flow
from zoo.errors import UserError
from zoo.metrics.publication import UnpublishableMetricError
from zoo.release.hub import from_pretrained, push_folder, push_to_hub, save_pretrained
from zoo.release.layout import load_config
from zoo.release.registry import checkpoints_dir

SHIPPED = "dp-merf-mnist-eps1"
ROW = {"task_type": "image-generation", "dataset_type": "mnist", "dataset_name": "mnist", "metric_config": "made up"}
AUDIT = {"value": 0.52, "protocol": {"score": "nearest-neighbour distance"}}


def shipped_evaluation() -> dict:
    """A card's evaluation as ``dpzoo evaluate --write-card`` recorded it."""
    return copy.deepcopy(load_config(checkpoints_dir() / SHIPPED)["evaluation"])


def against_the_training_split(evaluation: dict) -> None:
    evaluation["details"]["not_publishable"] = "these are the training images the model protects"


def with_a_metric_without_a_spec(evaluation: dict) -> None:
    evaluation["results"].append({**ROW, "metric_type": "sharpness", "metric_name": "sharpness", "metric_value": 1.0})


def with_the_audit_in_its_details(evaluation: dict) -> None:
    evaluation["details"]["results"]["audit"] = AUDIT


def with_an_audit_row(evaluation: dict) -> None:
    evaluation["results"].append({**ROW, "metric_type": "audit", "metric_name": "audit", "metric_value": 0.52})


UNPUBLISHABLE = {
    against_the_training_split: "training split",
    with_a_metric_without_a_spec: r"\['sharpness'\] have none",
    with_the_audit_in_its_details: r"\['audit'\] read the protected training records",
    with_an_audit_row: r"\['audit'\] read the protected training records",
}
CASES = pytest.mark.parametrize("change", UNPUBLISHABLE, ids=[change.__name__ for change in UNPUBLISHABLE])


def unpublishable(change) -> dict:
    evaluation = shipped_evaluation()
    change(evaluation)
    return evaluation


@pytest.fixture(scope="module")
def model():
    return tiny_private_flow()


@pytest.fixture
def no_hub(monkeypatch):
    """Online with a token, but any Hub call fails the test."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr("zoo.release.hub.HfApi", lambda **kwargs: pytest.fail("the Hub was called"))


@CASES
def test_save_pretrained_refuses_an_unpublishable_evaluation_before_writing(model, change, tmp_path):
    with pytest.raises(UnpublishableMetricError, match=UNPUBLISHABLE[change]) as refusal:
        save_pretrained(model, tmp_path / "tiny-flow", evaluation=unpublishable(change))
    assert str(refusal.value).startswith("tiny-flow: will not publish the evaluation given")
    assert "zoo.evaluate_into_card (dpzoo evaluate --write-card)" in str(refusal.value)
    assert list(tmp_path.iterdir()) == []


@CASES
def test_push_to_hub_refuses_an_unpublishable_evaluation_before_the_hub(model, change, no_hub):
    with pytest.raises(UnpublishableMetricError, match=UNPUBLISHABLE[change]):
        push_to_hub(model, "me/tiny-flow", token="hf_not_used", evaluation=unpublishable(change))


def test_push_folder_refuses_a_folder_edited_to_hold_an_audit(model, tmp_path, no_hub):
    folder = save_pretrained(model, tmp_path / "tiny-flow", evaluation=shipped_evaluation())
    config = load_config(folder)
    with_the_audit_in_its_details(config["evaluation"])
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    with pytest.raises(UnpublishableMetricError, match=r"me/tiny-flow: .*\['audit'\]"):
        push_folder(folder, "me/tiny-flow", token="hf_not_used")


def test_an_evaluation_as_zoo_evaluate_returns_it_is_refused(model, tmp_path):
    details = shipped_evaluation()["details"]
    with pytest.raises(UserError, match="must be a card's evaluation"):
        save_pretrained(model, tmp_path / "tiny-flow", evaluation=details)
    assert list(tmp_path.iterdir()) == []


def test_every_shipped_evaluation_is_publishable():
    from zoo.release.publication import check_evaluation_publishable

    folders = sorted(path.parent for path in checkpoints_dir().glob("*/config.json"))
    assert folders
    for folder in folders:
        check_evaluation_publishable(load_config(folder).get("evaluation"), folder.name)


def test_a_side_row_publishes_its_metric(model, tmp_path):
    rows = [
        {**ROW, "metric_type": metric, "metric_name": metric, "metric_value": 0.5} for metric in ("prc", "prc_recall")
    ]
    folder = save_pretrained(model, tmp_path / "tiny-flow", evaluation={"command": "made up", "results": rows})
    assert [row["metric_type"] for row in load_config(folder)["evaluation"]["results"]] == ["prc", "prc_recall"]


def test_a_loaded_shipped_model_saves_again_with_its_evaluation(tmp_path):
    model = zoo.load(SHIPPED)
    evaluation = model.pretrained_config["evaluation"]
    folder = save_pretrained(model, tmp_path / "again", evaluation=evaluation)
    assert load_config(folder)["evaluation"]["details"] == evaluation["details"]
    assert from_pretrained(folder).privacy_ledger == model.privacy_ledger
