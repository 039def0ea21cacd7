"""Your own images end to end: every image method trains on a folder of its own shape, `dpzoo fit`
builds the recipe's model for the folder, `evaluate` reads the folder's held-out images only, and
`finetune` refuses data of another shape before any work."""

import json

import pytest
import torch

import zoo
from tests.folders import write_image_folder
from tests.zoo.test_hub import tiny_private_flow
from zoo.cli import main
from zoo.data import ImageFolderDataModule
from zoo.methods import registered_methods
from zoo.shapes import DataShapeError, model_for_data
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
IMAGE_METHODS = sorted(m for m, cls in registered_methods().items() if cls.sample_kind == "images" and m != "per-class")
#: small DP-MERF and DP-LFlow on top of the shipped recipes, so that a test trains in seconds
TINY_MERF = ["--model.init_args.features", "64", "--model.init_args.hidden", "16", "--model.init_args.batch_size", "8"]
TINY_LFLOW = ["--model.init_args.channels", "[4, 8]", "--model.init_args.flow_blocks", "2"]
TINY_LFLOW += ["--model.init_args.flow_hidden", "16", "--model.init_args.latent_dim", "4"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """RGB 24×36 images (a size no recipe was written for) with a test part."""
    return write_image_folder(tmp_path_factory.mktemp("own") / "pets", per_class=10, size=(24, 36), test_per_class=4)


@pytest.mark.parametrize("method", IMAGE_METHODS)
def test_every_image_method_trains_on_a_folder_of_its_own_shape(method, folder):
    cls = registered_methods()[method]
    recipe = cls.tiny_recipe()
    data = ImageFolderDataModule(str(folder), sample_rate=0.25, validation_size=0)
    torch.manual_seed(0)
    model = model_for_data(cls(**recipe.architecture), data)
    assert model.data_arguments()["image_shape"] == (3, 24, 36)
    train(model, data, recipe.budget(**recipe.privacy), max_steps=recipe.max_steps, limit_val_batches=0, **QUIET)
    assert model.sample(4, seed=0).shape == (4, 3, 24, 36)
    ids = {e.dataset_id for e in model.privacy_ledger.entries} | {
        r.dataset_id for r in model.privacy_ledger.pac_releases
    }
    assert ids == {data.dataset_id}


@pytest.mark.heavy
def test_dpzoo_fit_builds_the_recipe_for_the_folder_then_evaluate_and_finetune_it(folder, tmp_path, capsys):
    merf, lflow = tmp_path / "merf", tmp_path / "lflow"
    fit = ["--images", str(folder), "--trainer.max_steps", "2", "--trainer.enable_progress_bar", "false"]
    assert (
        main(["fit", "--config", "configs/dp_merf_mnist_eps1.yaml", *fit, *TINY_MERF, "--save_pretrained", str(merf)])
        == 0
    )
    lflow_recipe = ["fit", "--config", "configs/dp_lflow_mnist_eps1.yaml", *fit, *TINY_LFLOW]
    assert main([*lflow_recipe, "--save_pretrained", str(lflow)]) == 0
    merf_config = json.loads((merf / "config.json").read_text())
    assert merf_config["architecture"]["image_shape"] == [3, 24, 36] and merf_config["architecture"]["num_classes"] == 3
    lflow_config = json.loads((lflow / "config.json").read_text())
    assert lflow_config["architecture"]["num_classes"] == 3  # per_class: 10 in the recipe follows the folder
    (entry,) = merf_config["privacy_ledger"]["entries"]
    assert entry["dataset_id"].startswith("local:") and 20 < entry["dataset_size"] < 30  # about 10% validation

    capsys.readouterr()
    evaluate = ["evaluate", str(merf), "--dataset", str(folder), "--num-samples", "30", "--runs", "1"]
    assert main([*evaluate, "--metrics", "cas_mlp", "--epochs", "1"]) == 0
    assert "cas_mlp" in capsys.readouterr().out
    assert main([*evaluate, "--metrics", "fid_lenet"]) == 2
    assert "trained on MNIST and Fashion-MNIST" in capsys.readouterr().err

    data = ImageFolderDataModule(str(folder), sample_rate=0.25)
    before = zoo.load(lflow).privacy_ledger.guarantees()[data.dataset_id]["epsilon"]
    tuned = zoo.finetune(str(lflow), data, target_epsilon=before + 1, max_steps=2, enable_progress_bar=False)
    after = tuned.privacy_ledger.guarantees()[data.dataset_id]["epsilon"]
    assert before + 1 >= after > before  # the same files compose with the earlier entries: the target is the card's
    other_split = ImageFolderDataModule(str(folder), sample_rate=0.25, validation_size=0)
    again = zoo.finetune(tuned, other_split, target_epsilon=after + 1, max_steps=2, enable_progress_bar=False)
    guarantees = again.privacy_ledger.guarantees()  # another split shares their records: it composes with them
    assert after + 1 >= guarantees[other_split.dataset_id]["epsilon"] == guarantees[data.dataset_id]["epsilon"] > after


def test_finetune_refuses_data_of_another_shape_before_any_training(folder):
    model = tiny_private_flow()  # 1×8×8
    with pytest.raises(
        DataShapeError,
        match=r"takes 1×8×8 images, the data has 3×24×36.*image_size=\(8, 8\), channels=1; "
        r"dpzoo train: --image-size 8 --channels 1",
    ):
        zoo.finetune(model, ImageFolderDataModule(str(folder)), target_epsilon=1.0, max_steps=1)
    assert len(model.privacy_ledger.entries) == 1


def test_a_shape_set_on_the_command_line_is_kept_and_a_conflict_named(folder, tmp_path, capsys):
    argv = ["fit", "--config", "configs/dp_merf_mnist_eps1.yaml", "--images", str(folder)]
    assert main([*argv, "--model.init_args.image_shape", "[1, 28, 28]", "--save_pretrained", str(tmp_path / "m")]) == 2
    assert "image_shape = 1×28×28 was set for dp-merf, but the data has 3×24×36" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_the_folders_own_settings_on_the_command_line_apply_to_it(folder, tmp_path):
    """The README's ``--data.init_args.image_size 32`` (which the shape errors recommend) resizes the folder
    given by ``--images`` before it; ``--data.init_args.convert`` says how images of another aspect ratio fit."""
    fit = ["fit", "--config", "configs/dp_merf_mnist_eps1.yaml", *TINY_MERF, "--trainer.max_steps", "1"]
    fit += ["--images", str(folder), "--data.init_args.image_size", "16", "--data.init_args.convert", "crop"]
    assert main([*fit, "--trainer.enable_progress_bar", "false", "--save_pretrained", str(tmp_path / "m")]) == 0
    assert json.loads((tmp_path / "m" / "config.json").read_text())["architecture"]["image_shape"] == [3, 16, 16]


def test_what_would_replace_the_folder_or_be_lost_is_refused(folder, capsys):
    """Options apply left to right: a recipe after ``--images`` would replace the folder, and a data option
    before it would be lost with the recipe's data; both are refused before any work."""
    recipe = ["--config", "configs/dp_merf_mnist_eps1.yaml"]
    assert main(["fit", "--images", str(folder), *recipe]) == 2
    assert "give --images after --config" in capsys.readouterr().err
    assert main(["fit", *recipe, "--data.init_args.image_size", "16", "--images", str(folder)]) == 2
    assert "--data.init_args.image_size comes before --images" in capsys.readouterr().err


def test_a_net_that_cannot_take_the_shape_says_which_it_takes(tmp_path):
    odd = ImageFolderDataModule(str(write_image_folder(tmp_path / "odd", per_class=2, size=(30, 30))))
    dp_lflow = registered_methods()["dp-lflow"]
    with pytest.raises(DataShapeError, match="divisible by 2\\*\\*2.*image_size"):
        model_for_data(dp_lflow(**dp_lflow.tiny_recipe().architecture), odd)


def test_evaluation_never_reads_the_training_images(tmp_path):
    flat = write_image_folder(tmp_path / "flat", per_class=3)
    with pytest.raises(ValueError, match="no test/ folder.*--reference"):
        zoo.evaluate(tiny_private_flow(), str(flat), metrics=("fid",))


def test_a_class_conditional_method_needs_two_classes(tmp_path):
    single = ImageFolderDataModule(str(write_image_folder(tmp_path / "one", per_class=4, classes=("scans",))))
    dp_merf = registered_methods()["dp-merf"]
    with pytest.raises(DataShapeError, match="needs at least 2 classes"):
        model_for_data(dp_merf(**dp_merf.tiny_recipe().architecture), single)


def test_zero_samples_are_refused_before_any_work(capsys):
    with pytest.raises(ValueError, match="num_samples must be a positive integer"):
        zoo.evaluate("no-model-is-loaded", "mnist", num_samples=0)
    assert main(["evaluate", "dp-merf-mnist-eps1", "--num-samples", "0"]) == 2
    assert "num_samples must be a positive integer" in capsys.readouterr().err
