"""Local data of every kind the registry reads (``zoo.data.sources``): a folder, a CSV or Parquet table of image paths,
a ``datasets`` dataset saved to disk. Each is read through the folder machinery, so the same images are the same
records whatever holds them, and their uses compose in the ledger; a wrong column or a missing extra is refused in
one line, before any work."""

import importlib.util

import pytest
import torch

import zoo
from lightning_modules import DPMERF
from tests.folders import write_image_folder, write_saved_dataset, write_table
from zoo.data import ImageFolderDataModule
from zoo.data.sources import MissingExtraError, check_local
from zoo.errors import UserError
from zoo.privacy import DPBudget
from zoo.shapes import model_for_data
from zoo.train_request import TrainRequest
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


@pytest.fixture
def photos(tmp_path):
    """Eight 8×8 photos in each of three classes, and the same images as a CSV, a Parquet table and a saved dataset."""
    folder = write_image_folder(tmp_path / "photos", per_class=8, size=(8, 8))
    return {
        "folder": folder,
        "csv": write_table(folder, tmp_path / "photos.csv"),
        "parquet": write_table(folder, tmp_path / "tables" / "photos.parquet"),
        "datasets": write_saved_dataset(folder, tmp_path / "photos-dataset"),
    }


def served(data, **columns) -> ImageFolderDataModule:
    module = ImageFolderDataModule(str(data), validation_size=0, cache=False, **columns)
    module.setup()
    return module


def test_every_kind_of_local_data_serves_the_same_records_under_one_name(photos):
    """The folder, both tables (whose label column is ``species``) and the saved dataset: the same classes, the same
    images, the same ``local:`` identity; the card says which kind it read and which columns."""
    modules = {
        kind: served(data, **({"label_column": "species"} if kind in ("csv", "parquet") else {}))
        for kind, data in photos.items()
    }
    folder = modules["folder"]
    for kind, module in modules.items():
        assert module.classes == ("cats", "dogs", "owls"), kind
        assert torch.equal(module.train_set.images.sort(0).values, folder.train_set.images.sort(0).values), kind
        assert module.records_identity == folder.records_identity, kind
        assert module.card_data()["source"] == kind
    assert modules["csv"].card_data()["columns"] == {"image": None, "label": "species"}
    assert "columns" not in folder.card_data()


def test_two_uses_of_the_same_images_through_two_sources_compose_in_the_ledger(photos):
    """A model trained on the folder, fine-tuned on the CSV naming the same files: both entries name one set of
    records, and every guarantee the card states is the composition of both releases."""
    first, second = served(photos["folder"]), served(photos["csv"], label_column="species")
    torch.manual_seed(0)
    model = model_for_data(DPMERF(**DPMERF.tiny_recipe().architecture), first)
    model = train(model, first, DPBudget(target_epsilon=1.0), max_steps=2, **QUIET)
    tuned = zoo.finetune(model, second, target_epsilon=2.0, max_steps=2, **QUIET)
    ledger = tuned.privacy_ledger
    assert [entry.records_identity for entry in ledger.entries] == [first.records_identity] * 2
    assert all(guarantee["epsilon"] > 1.5 for guarantee in ledger.guarantees().values())


def test_a_wrong_column_is_refused_before_any_work_naming_the_columns_there_are(photos):
    request = TrainRequest(str(photos["csv"]), "dp-merf", 1.0, label_column="kind")
    with pytest.raises(UserError, match=r"photos.csv has no column 'kind' \(its columns: path, species\)$"):
        request.check()
    with pytest.raises(
        UserError,
        match=r"has no column 'label' \(its columns: path, species\): name it with label_column \(dpzoo train --label",
    ):
        TrainRequest(str(photos["parquet"]), "dp-merf", 1.0).check()
    with pytest.raises(UserError, match=r"has no column 'picture' \(its columns: image, label\)"):
        check_local(photos["datasets"], image_column="picture")
    with pytest.raises(UserError, match="image and label columns are for tables and datasets"):
        check_local(photos["folder"], label_column="species")


def test_without_the_extra_a_dataset_or_a_parquet_table_is_refused_in_one_line(photos, monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("datasets", "pyarrow") else found(name, *a)
    )
    for kind in ("datasets", "parquet"):
        with pytest.raises(MissingExtraError, match=r"needs \w+: pip install 'dpzoo\[datasets\]'$"):
            check_local(photos[kind])
    check_local(photos["csv"], label_column="species")  # the standard library reads a CSV


def test_a_table_naming_missing_files_or_classes_outside_the_list_is_refused(photos, tmp_path):
    table = tmp_path / "gone.csv"
    table.write_text("path,label\nphotos/cats/0.png,cats\nphotos/cats/nowhere.png,cats\n")
    with pytest.raises(UserError, match=r"names 1 files that do not exist: .*nowhere\.png"):
        ImageFolderDataModule(str(table))
    with pytest.raises(UserError, match=r"rows of classes owls that are not among the classes given \(cats, dogs\)"):
        ImageFolderDataModule(str(photos["csv"]), label_column="species", classes=("cats", "dogs"))


def test_the_summary_says_what_the_data_was_recognised_as_and_problems_name_it(tmp_path):
    from zoo.data.folder_check import FolderProblems
    from zoo.folder_training import _summary, plan_folder

    folder = write_image_folder(tmp_path / "photos", per_class=12, size=(32, 32), test_per_class=3)
    saved = write_saved_dataset(folder, tmp_path / "photos-dataset")
    summary = _summary(plan_folder(TrainRequest(str(saved), "dp-merf", 1.0)), None)
    assert summary.startswith("photos-dataset: 3 classes (a Hugging Face datasets dataset saved to disk, with a test")
    assert "held out for evaluation: 9 images (its test split)" in summary
    few = write_saved_dataset(
        write_image_folder(tmp_path / "few", per_class=4, size=(32, 32)), tmp_path / "few-dataset"
    )
    with pytest.raises(FolderProblems, match=rf"^{few} cannot be used as it is \(1 to fix.*\n.*fewer than 10 training"):
        plan_folder(TrainRequest(str(few), "dp-merf", 1.0))


@pytest.mark.heavy
@pytest.mark.parametrize("kind", ["csv", "parquet", "datasets"])
def test_each_kind_trains_with_dpzoo_train_and_evaluates_with_dpzoo_evaluate(kind, tmp_path, capsys):
    """End to end from the command line: the table (label column ``species``) or the saved dataset trains, the card
    names what it was read from, and ``dpzoo evaluate --dataset DATA`` finds the part the model held out."""
    from zoo.cli import main
    from zoo.release.layout import load_config

    folder = write_image_folder(tmp_path / "photos", per_class=14, size=(32, 32))
    data = {
        "csv": lambda: write_table(folder, tmp_path / "photos.csv"),
        "parquet": lambda: write_table(folder, tmp_path / "photos.parquet"),
        "datasets": lambda: write_saved_dataset(folder, tmp_path / "photos-dataset"),
    }[kind]()
    columns = ["--label-column", "species"] if kind != "datasets" else []
    out = tmp_path / "model"
    train_argv = ["train", str(data), "--method", "dp-merf", "--epsilon", "1", "--max-steps", "2", "--out", str(out)]
    assert main([*train_argv, *columns]) == 0
    config = load_config(out)
    assert config["data"]["source"] == kind and config["data"]["classes"] == ["cats", "dogs", "owls"]
    capsys.readouterr()
    evaluate = ["evaluate", str(out), "--dataset", str(data), "--metrics", "cas_lr", "--num-samples", "30"]
    assert main([*evaluate, "--runs", "1", "--write-card"]) == 0
    assert "held out of training" in capsys.readouterr().out
    card = (out / "README.md").read_text()
    assert f"| read from | {config_title(kind)} |" in card and "cas_lr" in card


def config_title(kind: str) -> str:
    from zoo.data.sources import local_sources

    return local_sources()[kind].title


@pytest.mark.heavy
def test_dpzoo_fit_reads_a_table_given_as_images(photos, tmp_path):
    from zoo.cli import main
    from zoo.release.layout import load_config

    fit = ["fit", "--config", "configs/dp_merf_mnist_eps1.yaml", "--images", str(photos["csv"])]
    fit += ["--data.init_args.label_column", "species", "--trainer.max_steps", "1"]
    fit += ["--model.init_args.features", "64", "--model.init_args.hidden", "16", "--model.init_args.batch_size", "8"]
    assert main([*fit, "--trainer.enable_progress_bar", "false", "--save_pretrained", str(tmp_path / "m")]) == 0
    assert load_config(tmp_path / "m")["data"]["source"] == "csv"


def test_the_summary_names_classes_that_differ_only_in_case(tmp_path):
    from zoo.folder_training import _summary, plan_folder

    folder = write_image_folder(tmp_path / "scans", per_class=40, size=(32, 32))
    table = write_table(folder, tmp_path / "scans.csv")
    table.write_text(table.read_text().replace(",owls", ",Owls ", 20))
    summary = _summary(plan_folder(TrainRequest(str(table), "dp-merf", 1.0, label_column="species")), None)
    assert "\n  classes Owls  and owls differ only in case or spaces: they are trained as 2 classes" in summary
    assert f"`dpzoo evaluate MODEL --dataset {table}` uses them" in summary
