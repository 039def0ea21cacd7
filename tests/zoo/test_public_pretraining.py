"""Public pretraining, private fine-tuning: data is public only when the user declares it, the ledger
names it and charges it nothing, and the private plan that follows spends on the private data alone."""

import json
import re
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

import zoo
from lightning_modules import DPMERF
from tests.folders import write_image_folder
from tests.toys import StopAfter
from zoo.base_weights import load_base
from zoo.cli import main
from zoo.data import ImageFolderDataModule, PublicData
from zoo.privacy import DPBudget, PrivacyConfigError
from zoo.stages import PublicStatistic, check_plan
from zoo.training import pretrain_public, train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Two disjoint 8×8 grayscale folders of 3 classes: one to declare public, one private."""
    root = tmp_path_factory.mktemp("public-private")
    public = write_image_folder(root / "public", per_class=8, size=(8, 8), mode="L", seed=1)
    private = write_image_folder(root / "private", per_class=8, size=(8, 8), mode="L", seed=2)
    return public, private


def tiny_merf() -> DPMERF:
    torch.manual_seed(0)
    return DPMERF(**DPMERF.tiny_recipe().architecture)


def declared(folder) -> PublicData:
    return PublicData(ImageFolderDataModule(str(folder), validation_size=0), source="written by the test")


def test_data_is_public_only_when_declared_with_a_reason(folders):
    data = ImageFolderDataModule(str(folders[0]), validation_size=0)
    with pytest.raises(PrivacyConfigError, match="say why the data is public"):
        PublicData(data, source="  ")
    with pytest.raises(PrivacyConfigError, match="declared public"):
        pretrain_public(tiny_merf(), data, max_steps=1, **QUIET)


def test_a_method_without_public_pretraining_says_so(folders):
    from lightning_modules import DPLFlow

    with pytest.raises(PrivacyConfigError, match="DPLFlow has no public pretraining"):
        pretrain_public(DPLFlow(**DPLFlow.tiny_recipe().architecture), declared(folders[0]), max_steps=1, **QUIET)


def test_a_private_plan_refuses_a_statistic_of_public_data():
    with pytest.raises(PrivacyConfigError, match="pretrain_public"):
        check_plan([PublicStatistic("public statistic", lambda public: None)], DPBudget(target_epsilon=1.0))


def test_pretraining_records_the_public_data_charges_nothing_and_saves_a_base_without_guarantee(folders, tmp_path):
    public = declared(folders[0])
    model = pretrain_public(tiny_merf(), public, max_steps=3, **QUIET)
    ledger = model.privacy_ledger
    assert ledger.entries == [] and ledger.notion == "public"
    (use,) = ledger.public_data
    assert (use.dataset_id, use.records, use.source) == (public.dataset_id, 24, "written by the test")
    exact, count = model.embedding_sum(public, model.features)
    assert torch.allclose(model.released_embedding, (exact / count).float())  # no noise on public data

    folder = zoo.save_pretrained(model, tmp_path / "base")
    config = json.loads((folder / "config.json").read_text())
    assert config["privacy_ledger"]["public_data"][0]["dataset_id"] == public.dataset_id
    card = (folder / "README.md").read_text()
    assert "carries no privacy guarantee and needs none" in card and "written by the test" in card
    assert "ε =" not in card
    assert zoo.load(folder).privacy_ledger.notion == "public"


def test_finetuning_a_public_base_spends_on_the_private_data_alone_and_the_card_states_both(folders, tmp_path):
    public = declared(folders[0])
    base = pretrain_public(tiny_merf(), public, max_steps=3, **QUIET)
    private = ImageFolderDataModule(str(folders[1]), validation_size=0)
    tuned = zoo.finetune(base, private, target_epsilon=1.0, max_steps=2, **QUIET)
    ledger = tuned.privacy_ledger
    assert [entry.dataset_id for entry in ledger.entries] == [private.dataset_id]
    assert list(ledger.guarantees()) == [private.dataset_id]
    assert 0.98 <= ledger.guarantees()[private.dataset_id]["epsilon"] <= 1.0
    assert [use.dataset_id for use in ledger.public_data] == [public.dataset_id]

    card = (zoo.save_pretrained(tuned, tmp_path / "tuned") / "README.md").read_text()
    assert re.search(rf"\(ε = 0\.99\d*, δ = 1e-05\) for {re.escape(private.dataset_id)}", card)
    assert "| dataset | records | declared public because | stages |" in card and public.dataset_id in card


def test_records_the_model_protects_cannot_be_declared_public(folders):
    private = ImageFolderDataModule(str(folders[1]), validation_size=0)
    model = train(tiny_merf(), private, DPBudget(target_epsilon=1.0), max_steps=1, **QUIET)
    with pytest.raises(PrivacyConfigError, match=r"declared public \(local:.*shares records with local:"):
        pretrain_public(model, declared(folders[1]), max_steps=1, **QUIET)
    assert model.privacy_ledger.public_data == []


def test_a_renamed_copy_declared_public_still_holds_the_protected_records(folders, tmp_path):
    """The audit's reproduction: a copy under another folder name, its class folders renamed, declared public;
    then the original trained privately. The local record index sees the same images: refused before any work."""
    import shutil

    copy = shutil.copytree(folders[1], tmp_path / "published-photos")
    for index, class_folder in enumerate(sorted(p for p in copy.iterdir() if p.is_dir())):
        class_folder.rename(copy / f"renamed-{index}")
    base = pretrain_public(tiny_merf(), declared(copy), max_steps=1, **QUIET)
    with pytest.raises(PrivacyConfigError, match="shares records with local:.*holds as public data"):
        zoo.finetune(base, ImageFolderDataModule(str(folders[1]), validation_size=0), 1.0, max_steps=1, **QUIET)
    assert base.privacy_ledger.entries == []


def test_records_declared_public_cannot_be_protected_by_a_later_plan(folders):
    """Another split of the same folder draws on the same records: refused too, before any release."""
    public = declared(folders[0])
    base = pretrain_public(tiny_merf(), public, max_steps=1, **QUIET)
    assert base.privacy_ledger.public_data[0].records_identity == public.records_identity
    other_split = ImageFolderDataModule(str(folders[0]), validation_size=0.2)
    with pytest.raises(PrivacyConfigError, match=r"which the ledger holds as public data \(declared public"):
        zoo.finetune(base, other_split, target_epsilon=1.0, max_steps=1, **QUIET)
    assert base.privacy_ledger.entries == []


TINY_MERF = ["--model.init_args.features", "64", "--model.init_args.generator", "conv"]
TINY_MERF += ["--model.init_args.hidden", "16", "--model.init_args.batch_size", "8"]
TINY_MERF += ["--trainer.max_steps", "2", "--trainer.enable_progress_bar", "false"]
BASE_RECIPE = ["fit", "--config", "configs/dp_merf_cifar10_public_base.yaml", *TINY_MERF]
PRIVATE_RECIPE = ["fit", "--config", "configs/dp_merf_cifar10_classes5to9_eps1.yaml", *TINY_MERF]


def test_dpzoo_fit_pretrains_a_base_on_declared_public_data_and_a_private_recipe_starts_from_it(folders, tmp_path):
    public, private = folders
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    public_root = ["--data.init_args.data.init_args.root", str(public)]
    assert main([*BASE_RECIPE, *public_root, "--save_pretrained", str(base)]) == 0
    ledger = json.loads((base / "config.json").read_text())["privacy_ledger"]
    assert ledger["entries"] == [] and ledger["public_data"][0]["source"].startswith("CIFAR-10 classes 0-4")

    from_base = ["--images", str(private), "--init_from", str(base), "--save_pretrained", str(tuned)]
    assert main([*PRIVATE_RECIPE, *from_base]) == 0
    ledger = json.loads((tuned / "config.json").read_text())["privacy_ledger"]
    private_id = ImageFolderDataModule(str(private)).dataset_id
    public_id = ImageFolderDataModule(str(public), validation_size=0).dataset_id
    assert [entry["dataset_id"] for entry in ledger["entries"]] == [private_id]
    assert [use["dataset_id"] for use in ledger["public_data"]] == [public_id]


def test_a_public_recipe_spends_no_budget_and_a_base_must_fit_the_recipe(folders, tmp_path, capsys):
    public, private = folders
    budget = ["--privacy", "zoo.privacy.DPBudget", "--privacy.target_epsilon=1.0"]
    public_root = ["--data.init_args.data.init_args.root", str(public)]
    assert main([*BASE_RECIPE, *public_root, *budget]) == 2
    assert "public pretraining spends no budget" in capsys.readouterr().err
    base = tmp_path / "base"
    assert main([*BASE_RECIPE, *public_root, "--save_pretrained", str(base)]) == 0
    larger = write_image_folder(tmp_path / "larger", per_class=4, size=(12, 12), mode="L")
    never = ["--save_pretrained", str(tmp_path / "never")]
    assert main([*PRIVATE_RECIPE, "--images", str(larger), "--init_from", str(base), *never]) == 2
    assert f"cannot start from {base}: dp-merf takes 1×8×8 images" in capsys.readouterr().err


def test_a_base_for_another_class_count_starts_with_a_fresh_label_layer(folders, tmp_path, capsys):
    """The layers whose shape follows the class count start afresh (said, and noted in the ledger); the CLI and
    zoo.finetune alike. A base whose other layers do not fit is refused in plain words."""
    base = tmp_path / "base"
    public_root = ["--data.init_args.data.init_args.root", str(folders[0])]
    assert main([*BASE_RECIPE, *public_root, "--save_pretrained", str(base)]) == 0
    two = write_image_folder(tmp_path / "two", per_class=6, size=(8, 8), mode="L", classes=("cats", "dogs"), seed=3)
    tuned = tmp_path / "tuned"
    assert main([*PRIVATE_RECIPE, "--images", str(two), "--init_from", str(base), "--save_pretrained", str(tuned)]) == 0
    said = "generator.fc.0 re-initialised for the data's 2 classes"
    assert said in capsys.readouterr().out
    (entry,) = json.loads((tuned / "config.json").read_text())["privacy_ledger"]["entries"]
    assert said in entry["note"] and entry["dataset_id"].startswith("local:") and "two" not in entry["dataset_id"]

    model = zoo.finetune(str(base), ImageFolderDataModule(str(two), validation_size=0), 1.0, max_steps=1, **QUIET)
    assert model.num_classes == 2 and said in model.privacy_ledger.entries[-1].note
    wider = ["--model.init_args.hidden", "32", "--save_pretrained", str(tmp_path / "never")]
    assert main([*PRIVATE_RECIPE, "--images", str(two), "--init_from", str(base), *wider]) == 2
    assert "hidden: 16 in the base, 32 here" in capsys.readouterr().err


def test_only_the_class_dependent_layer_is_left_as_initialised():
    base, model = tiny_merf(), DPMERF(**{**DPMERF.tiny_recipe().architecture, "num_classes": 5})
    fresh = {k: v.clone() for k, v in model.generator.state_dict().items()}
    reinitialised = load_base(model, base, "the base")
    assert reinitialised.layers == ("generator.fc.0",) and (reinitialised.base_classes, reinitialised.classes) == (3, 5)
    for key, value in model.generator.state_dict().items():
        source = fresh if key.startswith("fc.0.") else base.generator.state_dict()
        assert torch.equal(value, source[key]), key


def test_the_shipped_public_base_fine_tunes_on_any_class_count(tmp_path, capsys):
    """dp-merf-cifar10-public-base (5 classes of CIFAR-10) on 4 classes of 32×32 colour images. Its public images
    were indexed on the machine that pretrained it, so here the user states that theirs are not among them."""
    four = write_image_folder(tmp_path / "four", per_class=3, size=(32, 32), classes=("a", "b", "c", "d"))
    data = ImageFolderDataModule(str(four), validation_size=0)
    with pytest.raises(PrivacyConfigError, match="nothing on this machine shows"):
        zoo.finetune("dp-merf-cifar10-public-base", data, target_epsilon=1.0, max_steps=1, **QUIET)
    base = "dp-merf-cifar10-public-base"
    model = zoo.finetune(base, data, target_epsilon=1.0, max_steps=1, assume_disjoint=True, **QUIET)
    assert model.num_classes == 4 and model.sample(8, seed=0).shape == (8, 3, 32, 32)
    assert "re-initialised for the data's 4 classes" in capsys.readouterr().out


def test_a_recipe_that_names_an_image_folder_keeps_its_data_settings(folders, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    text = Path("configs/dp_merf_cifar10_classes5to9_eps1.yaml").read_text()
    text = text.replace("root: data/cifar10-classes-5-9", f"root: {folders[1]}")
    recipe.write_text(text.replace("validation_size: 0.1", "validation_size: 0.25"))  # not the folder's default
    folder = tmp_path / "scratch"
    from_scratch = ["--init_from", "null", "--save_pretrained", str(folder)]
    assert main(["fit", "--config", str(recipe), *TINY_MERF, *from_scratch]) == 0
    (entry,) = json.loads((folder / "config.json").read_text())["privacy_ledger"]["entries"]
    assert entry["dataset_id"].startswith("local:") and "validation=0.25" in entry["dataset_id"]


def test_public_pretraining_resumes_from_its_checkpoint_instead_of_starting_again(folders, tmp_path):
    checkpoint = tmp_path / "stopped.ckpt"
    pretrain_public(tiny_merf(), declared(folders[0]), max_steps=6, callbacks=[StopAfter(checkpoint, 2)], **QUIET)
    steps = []
    counting = pl.Callback()
    counting.on_train_batch_end = lambda trainer, *args: steps.append(trainer.global_step)
    resumed = pretrain_public(
        tiny_merf(), declared(folders[0]), max_steps=6, callbacks=[counting], ckpt_path=str(checkpoint), **QUIET
    )
    assert resumed.trainer.global_step == 6 and steps == [3, 4, 5, 6]
