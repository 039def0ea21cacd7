"""A CAS is printed beside its baseline (issue 68: on a 4-class folder a CAS of 29.8 read as a score where always
guessing "Birds" gives 47): the accuracy of always guessing the largest class of the evaluation's test labels, or
chance where the classes are balanced. It reads only those labels, is printed beside each accuracy and kept in the
JSON report, and stays off the card and its config.json."""

import json
from collections import Counter

import torch

import zoo
from tests.folders import write_image_folder
from tests.zoo.test_shared_records import trained_merf
from zoo.cli import main
from zoo.data import ImageFolderDataModule
from zoo.metrics.reference import ReferenceImages


def reference(labels: list[int], classes: tuple[str, ...] | None = None) -> ReferenceImages:
    return ReferenceImages(torch.zeros(len(labels), 1, 2, 2), torch.tensor(labels), "test", classes)


def test_the_baseline_is_the_largest_classs_share_of_the_test_labels_and_chance():
    birds = reference([0, 0, 0, 1, 2, 3, 0, 1], ("Birds", "Cats", "Dogs", "Fish"))
    assert birds.guessing_baseline() == {"largest_class": "Birds", "largest_class_accuracy": 50.0, "chance": 25.0}
    named = reference([1, 1, 0])  # a named dataset's labels: the class by its index
    assert named.guessing_baseline()["largest_class"] == "class 1"
    assert named.guessing_baseline()["chance"] == 50.0


def test_evaluate_prints_the_baseline_beside_each_cas_and_keeps_it_off_the_card(tmp_path, capsys):
    photos = write_image_folder(tmp_path / "photos", per_class=10, size=(8, 8), mode="L", seed=2)
    data = ImageFolderDataModule(str(photos), test_fraction=0.2, validation_size=0)
    model = zoo.save_pretrained(trained_merf(data), tmp_path / "model", data=data.card_data())
    evaluate = ["evaluate", str(model), "--dataset", str(photos), "--metrics", "cas_lr", "--num-samples", "30"]
    report = tmp_path / "report.json"
    assert main([*evaluate, "--runs", "1", "--json", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("cas_lr "))
    baseline = json.loads(report.read_text())["label_baseline"]
    held_out = Counter(data.train_part.labels[i] for i in data.folder_split().held_out)  # the test labels
    (largest, count), *_ = held_out.most_common()
    assert baseline["metrics"] == ["cas_lr"] and baseline["largest_class"] == data.classes[largest]
    assert baseline["largest_class_accuracy"] == 100 * count / held_out.total() > 100 / 3  # not balanced
    guessed = f"always guessing the largest class, {data.classes[largest]}: {100 * count / held_out.total():.1f}"
    assert lines[row + 1].strip() == f"(baseline: {guessed}; chance 33.3)"

    assert main([*evaluate, "--runs", "1", "--write-card"]) == 0
    assert "baseline" in capsys.readouterr().out
    assert "label_baseline" not in (model / "config.json").read_text()
    assert "guessing" not in (model / "README.md").read_text()
