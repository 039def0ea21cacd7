"""`dpzoo train` on a folder with every kind of mess (``tests.folders.write_messy_folder``): one report names
every problem with the flag that fixes it, ``--convert`` reads the mess and says what it did, the held-out
part travels with the model, and a tiny run of train then evaluate uses it."""

import functools
import json
import os
import re
import shutil

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from tests.folders import CORRUPT, MESSY_CLASSES, write_image_folder, write_messy_folder
from zoo import recipes
from zoo.cli import main
from zoo.data import ImageFolderDataModule, ImageFolderError
from zoo.data.conversion import counted, pixels
from zoo.data.folder_check import MIN_IMAGES_PER_CLASS
from zoo.data.folders import folder_parts, held_out_indices, read_part, subset
from zoo.errors import UserError
from zoo.front_checks import parse_duration
from zoo.metrics import closeness
from zoo.privacy import record_index
from zoo.recipes import Choice, Problem, choose_recipe
from zoo.train_request import TrainRequest

#: dp-merf's recipes with a model small enough to train in seconds
TINY_MERF = {"features": 64, "generator": "conv", "hidden": 16, "channels": [4, 2], "kernel_size": 3, "batch_size": 8}
TRAIN = ["--method", "dp-merf", "--epsilon", "1"]


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    return write_messy_folder(tmp_path_factory.mktemp("photos") / "my photos")


@pytest.fixture(scope="module")
def cleaned(messy, tmp_path_factory):
    """The messy folder with its unreadable file removed, as the report says."""
    folder = shutil.copytree(messy, tmp_path_factory.mktemp("cleaned") / "my photos")
    (folder / CORRUPT).unlink()
    return folder


@pytest.fixture
def tiny_recipes(tmp_path, monkeypatch):
    """dp-merf's CIFAR-10 and MNIST recipes with a tiny model, where `dpzoo train` looks for recipes."""
    (tmp_path / "configs").mkdir()
    for name in ("dp_merf_cifar10_eps1.yaml", "dp_merf_mnist_eps1.yaml"):
        recipe = yaml.safe_load((recipes.RECIPES / name).read_text())
        recipe["model"]["init_args"].update(TINY_MERF)
        (tmp_path / "configs" / name).write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(recipes, "RECIPES", tmp_path / "configs")


def test_one_report_names_every_problem_with_the_flag_that_fixes_it(messy, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["train", str(messy), *TRAIN, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    for words in (
        "1 unreadable file: kitties/broken.jpg",
        f"`rm -- '{messy / CORRUPT}'`",
        "12 images have another aspect ratio than 32×32 and would be stretched (40×28 ×4, 28×40 ×4, 36×24 ×4)",
        "`--convert crop` (centre crop) or `--convert pad` (pad with white)",
        "4 images have transparency, which would be dropped (e.g. Boats/Boa 6.PNG",
        "grey and colour images mix: 4 grey (e.g. Boats/Boa 5.png",
        "`--channels 3` (read all as RGB) or `--channels 1`",
        "all at once: --convert crop --channels 3",
        "ignored 3 files that are not images: .DS_Store, Boats/.DS_Store, kitties/notes.txt",
    ):
        assert words in err, words
    assert not out.exists()


def test_the_datamodule_and_fit_report_the_same_problems_in_their_own_words(messy, tmp_path, capsys):
    with pytest.warns(UserWarning, match="ignored 3 files"), pytest.raises(ImageFolderError) as error:
        ImageFolderDataModule(str(messy), cache=False).setup()
    for words in ("kitties/broken.jpg", "images differ in size", "image_size=24", "convert='crop'", "channels=3"):
        assert words in str(error.value), words
    fit = ["fit", "--config", "configs/dp_merf_mnist_eps1.yaml", "--images", str(messy)]
    assert main([*fit, "--save_pretrained", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    for flag in ("--data.init_args.image_size 24", "--data.init_args.convert crop", "--data.init_args.channels 3"):
        assert flag in err, flag


@pytest.mark.parametrize("convert, how", [("crop", "centre-cropped"), ("pad", "padded with white")])
def test_convert_reads_the_mess_and_states_what_it_did(cleaned, convert, how):
    data = ImageFolderDataModule(str(cleaned), image_size=32, channels=3, convert=convert, cache=False)
    assert data.image_shape == (3, 32, 32)
    assert data.card_data()["preprocessing"] == (  # the rule: counts of the images would be statistics of them
        f"every image read as RGB 32×32: one of another size resized bilinearly ({how} to a square first where its "
        "aspect ratio differs); transparency composited on white; grey images converted to RGB"
    )
    part, _ = folder_parts(cleaned)
    decoded = read_part(part, (32, 32), 3, cache=False, convert=convert)
    transparent = part.files.index(cleaned / "Boats" / "Boa 6.PNG")
    assert decoded.images[transparent, :, :, 16:].min() == 255  # its transparent right half, on white


def test_the_held_out_part_is_chosen_by_pixels_and_stays_out_of_the_records(cleaned, tmp_path):
    options = dict(image_size=32, channels=3, convert="crop", validation_size=0, cache=False)
    data = ImageFolderDataModule(str(cleaned), test_fraction=0.1, **options)
    data.setup()
    held = held_out_indices(data.train_part, 0.1, seed=0)
    assert 0 < len(held) < 12 and len(data.test_set) == len(held)
    held_keys = read_part(subset(data.train_part, held), (32, 32), 3, cache=False, convert="crop").record_keys.numpy()
    assert record_index.shared_keys(data.records_identity, held_keys) == 0
    assert len(record_index.keys_of(data.records_identity)) == 48 - len(held)
    whole = ImageFolderDataModule(str(cleaned), **options)
    assert whole.records_identity != data.records_identity
    grown = shutil.copytree(cleaned, tmp_path / "grown")
    Image.new("RGB", (32, 32)).save(grown / "Boats" / "new.png")
    part, _ = folder_parts(grown)
    names = {part.files[i].name for i in held_out_indices(part, 0.1, seed=0) if part.files[i].name != "new.png"}
    assert names == {data.train_part.files[i].name for i in held}


def test_train_then_evaluate_on_the_held_out_part(cleaned, tiny_recipes, tmp_path, capsys, caplog):
    out = tmp_path / "mine"
    train = ["train", str(cleaned), *TRAIN, "--out", str(out), "--convert", "crop", "--channels", "3"]
    assert main([*train, "--max-steps", "2"]) == 0
    printed = capsys.readouterr().out
    held = len(held_out_indices(folder_parts(cleaned)[0], 0.1, seed=0))
    for words in (
        "my photos: 4 classes (one folder per class, no test/)",
        "planes and jets",
        "read as RGB 32×32: 20 of 48 images resized to 32×32, 12 of them centre-cropped",
        f"held out for evaluation: {held} images (each image with chance 10%, by a hash of its pixels, so that copies "
        "stay together)",
        f"training: {48 - held} images",
        "recipe: configs/dp_merf_cifar10_eps1.yaml: dp-merf's recipe for colour images (CIFAR-10, 32×32)",
        "its seed 0 fixes the starting weights and the fit's own draws; the privacy noise and the Poisson sampling",
        "forecast: at ε = 1 each class's mean carries noise",
        "the release will be mostly noise",
        "estimated time: about",
        "privacy: (ε = 0.99",
        f"card: {out / 'README.md'}",
    ):
        assert words in printed, words
    assert "Tip:" not in caplog.text + printed
    assert "Seed set to" not in caplog.text + printed  # a reader takes it for the noise's seed
    config = json.loads((out / "config.json").read_text())
    data = config["data"]
    assert data["name"] == "my photos" and data["classes"] == list(MESSY_CLASSES) and data["images"] == 48 - held
    assert data["held_out"] == {"images": held, "fraction": 0.1, "seed": 0, "split": "by pixels", "convert": "crop"}
    (entry,) = config["privacy_ledger"]["entries"]
    assert entry["records_identity"] == data["records"]
    assert config["license"] is None and config["recipe"]["config"] == "configs/dp_merf_cifar10_eps1.yaml"
    command = "dpzoo train 'my photos' --method dp-merf --epsilon 1 --max-steps 2 --convert crop --channels 3"
    assert config["recipe"]["command"] == command
    assert config["recipe"]["selection"].startswith("dpzoo train chose configs/dp_merf_cifar10_eps1.yaml: dp-merf's")
    card = (out / "README.md").read_text()
    for text in (card, json.dumps(config, ensure_ascii=False)):
        assert str(cleaned.parent) not in text and str(tmp_path) not in text
    assert all(name in card for name in MESSY_CLASSES) and "license:" not in card.split("---")[1]

    report = tmp_path / "report.json"
    evaluate = ["evaluate", str(out), "--dataset", str(cleaned), "--metrics", "cas_mlp", "--num-samples", "20"]
    evaluate += ["--runs", "1", "--epochs", "1"]
    assert main([*evaluate, "--json", str(report)]) == 0
    reported = json.loads(report.read_text())
    assert reported["reference"] == f"the images of my photos held out of training ({held} held-out images)"
    assert "not_publishable" not in reported
    changed = shutil.copytree(cleaned, tmp_path / "changed" / "my photos")
    part, _ = folder_parts(changed)
    trained = next(i for i in range(48) if i not in held_out_indices(part, 0.1, seed=0))
    shutil.copy(part.files[trained], part.files[held_out_indices(part, 0.1, seed=0)[0]])  # a trained image, renamed
    assert main([*evaluate[:3], str(changed), *evaluate[4:], "--json", str(report), "--overwrite"]) == 0
    reported = json.loads(report.read_text())  # the copy falls where its image does: on the training side
    assert reported["reference"] == f"the images of my photos held out of training ({held - 1} held-out images)"
    assert "not_publishable" not in reported
    split = shutil.copytree(cleaned, tmp_path / "split" / "my photos" / "train")
    for name in MESSY_CLASSES:  # a test/ part the user filed, one of whose images is also a training image
        write_image_folder(split.parent / "test", per_class=1, size=(32, 32), classes=(name,), seed=len(name))
    shutil.copy(part.files[trained], split.parent / "test" / part.classes[part.labels[trained]] / "copied.png")
    assert main([*evaluate[:3], str(split.parent), *evaluate[4:], "--json", str(report), "--overwrite"]) == 0
    assert re.search(r"1 of these images .*the model protects", json.loads(report.read_text())["not_publishable"])
    assert main([*evaluate[:3], str(split.parent), *evaluate[4:], "--write-card"]) == 2
    assert re.search(r"1 of these images .*the model protects", capsys.readouterr().err)


def test_the_recipe_is_chosen_for_the_images_and_a_misfit_is_refused_with_options(tmp_path, capsys):
    colour = choose_recipe("dp-merf", 1.0, 3, (32, 32), size_given=False)
    assert isinstance(colour, Choice) and colour.recipe.path.name == "dp_merf_cifar10_eps1.yaml"
    grey = choose_recipe("dp-merf", 3.0, 1, (28, 28), size_given=False)
    assert isinstance(grey, Choice) and grey.recipe.path.name == "dp_merf_mnist_eps1.yaml"
    assert "written for ε = 1, run at ε = 3" in grey.reason
    large = choose_recipe("dp-merf", 1.0, 3, (256, 256), size_given=False)
    assert isinstance(large, Problem) and large.fixes[0].options == (("image_size", 32),)
    assert isinstance(choose_recipe("dp-merf", 1.0, 3, (256, 256), size_given=True), Choice)
    only_grey = choose_recipe("dp-lflow", 1.0, 3, (32, 32), size_given=False)
    assert isinstance(only_grey, Problem) and only_grey.fixes[0].options == (("channels", 1),)
    assert main(["train", str(tmp_path), *TRAIN[:3], "0"]) == 2
    assert "--epsilon must be a finite number > 0" in capsys.readouterr().err


def test_too_few_classes_or_images_and_imageless_class_folders_are_refused_before_the_summary(tmp_path, capsys):
    """One class for a class-conditional method, a class below MIN_IMAGES_PER_CLASS training images, and every
    class folder that holds no image (a folder of text files: all named in one report), before the summary."""
    one = write_image_folder(tmp_path / "one", per_class=14, size=(32, 32), classes=("cats",))
    few = write_image_folder(tmp_path / "few", per_class=14, size=(32, 32))
    for image in sorted((few / "dogs").iterdir())[3:]:
        image.unlink()
    texts = tmp_path / "texts"
    for name in ("a", "b", "c"):
        (texts / name).mkdir(parents=True)
        (texts / name / "notes.txt").write_text("not an image")
    refused = {
        one: "one class (cats): dp-merf is class-conditional and needs at least 2: add a folder per class",
        few: f"1 class with fewer than {MIN_IMAGES_PER_CLASS} training images (dogs ",  # 3 files, one may be held out
        texts: f"{texts}: 3 class folders hold no images (.png, .jpg, .jpeg, .bmp, .webp): a, b, c",
    }
    for folder, words in refused.items():
        out = tmp_path / "out" / folder.name
        assert main(["train", str(folder), *TRAIN, "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert words in captured.err and "recipe:" not in captured.out and not out.exists(), folder
    assert main(["train", str(one), "--method", "dp-lflow", "--epsilon", "1", "--out", str(tmp_path / "x")]) == 2
    assert "one class" not in capsys.readouterr().err  # an unconditional method takes one class


def test_max_time_trains_as_many_steps_as_fit_and_says_how_many(cleaned, tiny_recipes, tmp_path, capsys):
    out = tmp_path / "timed"
    train = ["train", str(cleaned), *TRAIN, "--out", str(out), "--convert", "crop", "--channels", "3"]
    assert main([*train, "--max-time", "2s", "--max-steps", "2500"]) == 0  # the steps bound alone: no flat stop
    printed = capsys.readouterr().out
    steps = int(re.search(r"--max-time 2s: the last stage trained ([\d,]+) of the 2,500 planned steps", printed)[1])
    assert 0 < steps < 2500
    assert re.search(r"--max-time stops it after about [\d,]+ of the 2,500 steps", printed)  # said before training
    assert "--max-time 2s" in json.loads((out / "config.json").read_text())["recipe"]["command"]


def test_a_duration_is_read_in_seconds_and_a_bad_one_refused():
    assert [parse_duration(text) for text in ("90s", "10m", "2h", "1h30m", "0.5m")] == [90, 600, 7200, 5400, 30]
    for bad in ("", "10", "ten minutes", "0s"):
        with pytest.raises(UserError, match="--max-time"):
            parse_duration(bad)


def test_the_verdict_reads_held_out_images_only_and_reaches_the_card_when_asked(
    tiny_recipes, tmp_path, monkeypatch, capsys
):
    """Issue 55: after training, how close the samples are to the held-out images (test/ here), printed for the
    owner and not on the card; `dpzoo evaluate --metrics closeness --write-card` puts it there, saying so."""
    folder = write_image_folder(tmp_path / "shop", per_class=12, size=(32, 32), test_per_class=8)
    test_pixels = {np.asarray(Image.open(path).convert("RGB")).tobytes() for path in (folder / "test").rglob("*.*")}
    seen: list[torch.Tensor] = []

    def pixel_features(images: torch.Tensor) -> torch.Tensor:
        seen.append(images)
        return images.flatten(1).double()

    monkeypatch.setattr(closeness, "inception_pool_features", lambda: pixel_features)
    out = tmp_path / "shop-model"
    assert main(["train", str(folder), *TRAIN, "--out", str(out), "--max-steps", "2"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"verdict: -?[\d.]+, (near|resembles|far)", printed), printed[-600:]
    assert re.search(r"spread: (samples vary within each class|collapsed: every code)", printed), printed[-600:]
    assert "this number is for you, not on the card" in printed
    real = seen[0].mul(255).round().byte().permute(0, 2, 3, 1).numpy()  # the first pass: half A of the held-out images
    assert len(real) == 3 * 4 and all(image.tobytes() in test_pixels for image in real)
    assert "closeness" not in (out / "config.json").read_text()

    evaluate = ["evaluate", str(out), "--dataset", str(folder), "--metrics", "closeness", "--num-samples", "16"]
    assert main([*evaluate, "--write-card"]) == 0
    (row,) = json.loads((out / "config.json").read_text())["evaluation"]["results"]
    assert row["metric_type"] == "closeness" and "which the stated (ε, δ) does not cover" in row["metric_config"]
    assert "which the stated (ε, δ) does not cover" in (out / "README.md").read_text()


def test_sizes_read_width_by_height_and_counts_agree_with_their_nouns():
    assert pixels((1200, 1500)) == "1500×1200" and pixels((32, 32)) == "32×32"
    assert counted(1, "image", has=True) == "1 image has" and counted(1_200, "image", has=True) == "1,200 images have"
    assert counted(0, "image") == "0 images"


def test_images_of_another_size_than_the_base_are_refused_from_their_headers_before_the_summary(tmp_path, capsys):
    folder = write_image_folder(tmp_path / "wide", per_class=12, size=(48, 48))
    out = tmp_path / "tuned"
    assert main(["train", str(folder), *TRAIN, "--init-from", "dp-merf-cifar10-public-base", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    refusal = "the images are 48×48, but the base dp-merf-cifar10-public-base was fitted to 32×32 images: pass "
    assert refusal + "--image-size 32 (read them at its size) or train without --init-from" in captured.err
    assert "recipe:" not in captured.out and not out.exists()


def test_the_model_is_built_once_at_the_folders_shape(tiny_recipes, tmp_path, monkeypatch):
    """The plan writes the folder's image shape and class count into the model's arguments before the recipe is
    parsed (the recipe's own are CIFAR-10's 10 classes), so nothing rebuilds it for the data."""
    from lightning_modules.dp_merf import DPMERF

    built, init = [], DPMERF.__init__

    @functools.wraps(init)
    def counted_init(self, *args, **kwargs):
        built.append((tuple(kwargs["image_shape"]), kwargs["num_classes"]))
        init(self, *args, **kwargs)

    monkeypatch.setattr(DPMERF, "__init__", counted_init)
    folder = write_image_folder(tmp_path / "shop", per_class=12, size=(32, 32))
    assert main(["train", str(folder), *TRAIN, "--out", str(tmp_path / "m"), "--max-steps", "1"]) == 0
    assert built == [((3, 32, 32), len(os.listdir(folder)))]


def test_the_summary_names_the_base_that_init_from_gives(tmp_path):
    from zoo.folder_training import _summary, plan_folder

    folder = write_image_folder(tmp_path / "photos", per_class=12, size=(32, 32))
    request = TrainRequest(str(folder), "dp-merf", 1.0, init_from="dp-merf-cifar10-public-base", assume_disjoint=True)
    plan = plan_folder(request)
    assert "\nbase: dp-merf-cifar10-public-base, as --init-from gives: its card says" in _summary(plan, None)
    assert plan.with_base(request) == request
