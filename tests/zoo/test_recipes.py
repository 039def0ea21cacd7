"""Every recipe in configs/ parses as `dpzoo fit` reads it: the model and data build, and the trainer
has one privacy budget in its `privacy:` block, or none when the data is declared public (a recipe that no longer
matches its method's arguments fails here, not hours into a user's run)."""

import inspect
from pathlib import Path

import pytest
import yaml

from tests.folders import write_image_folder
from zoo.front_checks import image_methods, trains_per_class
from zoo.methods import method_class
from zoo.privacy import PACBudget
from zoo.recipe_cli import parse_recipe

RECIPES = sorted(str(p) for p in (Path(__file__).parents[2] / "configs").glob("*.yaml"))


#: where a recipe that names an image folder keeps its root, under the data block
FOLDER_ROOTS = {
    "zoo.data.ImageFolderDataModule": "data.init_args.root",
    "zoo.data.PublicData": "data.init_args.data.init_args.root",
}


def folder_stand_in(recipe: str, tmp_path: Path) -> list[str]:
    """For a recipe whose image folder is not on this machine (``benchmarks/cifar10_class_folders.py``
    writes the CIFAR-10 ones), the command-line override that points it at a tiny folder of the same
    class count, so that it still parses here."""
    data = yaml.safe_load(Path(recipe).read_text())["data"]
    key = FOLDER_ROOTS.get(data["class_path"])
    if key is None:
        return []
    root = data
    for name in key.split(".")[1:]:
        root = root[name]
    if Path(root).is_dir():
        return []
    classes = tuple(f"class{i}" for i in range(5))
    return [f"--{key}", str(write_image_folder(tmp_path / "folder", per_class=2, size=(32, 32), classes=classes))]


@pytest.mark.parametrize("recipe", RECIPES, ids=[Path(r).stem for r in RECIPES])
def test_recipe_parses_and_holds_one_budget(recipe, tmp_path):
    parsed = parse_recipe(["--config", recipe, *folder_stand_in(recipe, tmp_path)])
    options = parsed.trainer_options
    if parsed.public:  # public pretraining: a stated reason, and no budget at all
        assert parsed.budget is None and parsed.data.source and options["max_steps"] > 0
        return
    budget = parsed.budget
    if isinstance(budget, PACBudget):  # one PAC release, no training steps to plan
        assert budget.mi_bound > 0
    else:  # σ is calibrated for the planned steps, or given
        assert (budget.target_epsilon or budget.noise_multiplier) > 0 and options["max_steps"] > 0


@pytest.mark.parametrize("method", image_methods())
def test_a_method_is_class_conditional_unless_its_recipes_train_one_model_per_class(method):
    """What lets `dpzoo train` refuse a one-class folder before torch is imported (``check_class_count``)."""
    conditional = "num_classes" in inspect.signature(method_class(method)).parameters
    assert trains_per_class(method) is not conditional
