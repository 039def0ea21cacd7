"""``zoo.evaluate_into_card``: what ``dpzoo evaluate --write-card`` does, for a Python caller: the refusals before
any work, the evaluation, and the card and config.json written together with the command that repeats it; a
failure halfway leaves the folder's files as they were."""

import json

import pytest

import zoo
from tests.folders import write_image_folder
from tests.zoo.test_shared_records import trained_merf
from zoo.data import ImageFolderDataModule
from zoo.errors import TargetExistsError
from zoo.metrics import record_evaluation
from zoo.metrics.publication import UnpublishableMetricError


@pytest.fixture
def folder_model(tmp_path):
    """A model trained on a flat folder of 8×8 grey photos, a fifth of each class's files held out."""
    photos = write_image_folder(tmp_path / "photos", per_class=10, size=(8, 8), mode="L", seed=2)
    data = ImageFolderDataModule(str(photos), test_fraction=0.2, validation_size=0)
    return photos, zoo.save_pretrained(trained_merf(data), tmp_path / "model", data=data.card_data())


def test_a_python_caller_evaluates_into_the_card(folder_model, monkeypatch):
    photos, model = folder_model
    evaluation = zoo.evaluate_into_card(model, str(photos), ["cas_lr"], num_samples=30, runs=1)
    config = json.loads((model / "config.json").read_text())
    recorded = config["evaluation"]
    assert recorded["details"]["results"] == evaluation["results"] and recorded["details"]["dataset"] == "photos"
    assert recorded["command"] == (
        "dpzoo evaluate model --dataset photos --metrics cas_lr --num-samples 30 --runs 1 --write-card"
    )
    assert "cas_lr" in (model / "README.md").read_text() and str(photos.parent) not in json.dumps(config)

    monkeypatch.setattr("zoo.metrics.records.evaluate", lambda *a, **k: pytest.fail("evaluated before refusing"))
    with pytest.raises(UnpublishableMetricError, match="audit"):
        zoo.evaluate_into_card(model, str(photos), ["cas_lr", "audit"])
    with pytest.raises(UnpublishableMetricError, match="a folder given as --reference .* cannot be shown"):
        zoo.evaluate_into_card(model, str(photos), ["cas_lr"], reference=str(photos))
    with pytest.raises(TargetExistsError, match="num_samples 30 on the card, 40 now"):
        zoo.evaluate_into_card(model, str(photos), ["cas_lr"], num_samples=40)


def test_a_failure_halfway_leaves_the_card_and_config_as_they_were(folder_model, monkeypatch):
    photos, model = folder_model
    before = {path.name: path.read_bytes() for path in model.iterdir()}

    def card_that_does_not_render(*args, **kwargs):
        raise RuntimeError("the card's template broke")

    monkeypatch.setattr("zoo.metrics.records.model_card", card_that_does_not_render)
    evaluation = {"dataset": str(photos), "results": {"cas_lr": {"value": 50.0, "protocol": {"classifier": "lr"}}}}
    with pytest.raises(RuntimeError, match="template broke"):
        record_evaluation(model, evaluation, "dpzoo evaluate model --dataset photos --write-card")
    assert {path.name: path.read_bytes() for path in model.iterdir()} == before
    assert sorted(path.name for path in model.parent.iterdir()) == ["model", "photos"]  # no staging folder left
