"""The recipe ``dpzoo train`` takes for a folder: the method's recipe in ``configs/`` written for images
like the folder's (colour: its CIFAR-10 recipe; grey: its MNIST one, else Fashion-MNIST), at the ε asked
or the nearest. The choice is made in the open (``Choice.reason`` is printed and recorded) and a folder
that no recipe fits is answered with a ``Problem`` naming the options, never with a guess."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from zoo.data.conversion import pixels
from zoo.data.folder_check import Fix, Problem
from zoo.data.sources import NamedImages, by_channels, named, named_sources

RECIPES = Path(__file__).resolve().parents[1] / "configs"
#: how far (as a ratio of sides) a folder's images may be from a recipe's and still take it as they are
NEAR = (0.5, 1.5)
YOUR_RECIPE = Fix(command="dpzoo fit --config RECIPE.yaml --images FOLDER", what="a recipe of your own")


@dataclass(frozen=True)
class RecipeFile:
    """A method's recipe file for a named dataset at one ε (``configs/<method>_<dataset>_eps<ε>.yaml``), among
    which ``dpzoo train`` chooses; not the objects a recipe builds (``zoo.recipe_cli.Recipe``)."""

    path: Path
    method: str
    #: the named set it was written for (``zoo.data.sources``)
    dataset: str
    epsilon: float

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return self.source.image_shape

    @property
    def source(self) -> NamedImages:
        source = named(self.dataset)
        assert source is not None  # recipe_files reads only the named sets' recipes
        return source

    @cached_property
    def settings(self) -> dict[str, Any]:
        return yaml.safe_load(self.path.read_text()) or {}

    @property
    def validates(self) -> bool:
        """Whether its training reads the validation images (else the folder needs none)."""
        return (self.settings.get("trainer") or {}).get("limit_val_batches", 1.0) != 0


@dataclass(frozen=True)
class Choice:
    recipe: RecipeFile
    #: (height, width) the images are read at
    size: tuple[int, int]
    reason: str


def recipe_files() -> list[RecipeFile]:
    """Every method's recipes for the named sets (``configs/<method>_<dataset>_eps<ε>.yaml``, the method's ``-``
    spelt ``_``), by the sets' order, then by name. Read from the file names, without torch."""
    names = "|".join(re.escape(name) for name in named_sources())
    pattern = re.compile(rf"(?P<method>.+?)_(?P<dataset>{names})_eps(?P<epsilon>[^_]+)\.yaml")
    recipes = []
    for path in sorted(RECIPES.glob("*.yaml")):
        found = pattern.fullmatch(path.name)
        try:
            epsilon = float(found["epsilon"]) if found else None
        except ValueError:
            continue  # eps10000-style names only; anything else is not an ε recipe
        if found and epsilon is not None:
            recipes.append(RecipeFile(path, found["method"].replace("_", "-"), found["dataset"], epsilon))
    order = list(named_sources())
    return sorted(recipes, key=lambda recipe: order.index(recipe.dataset))


def method_recipes(method: str) -> list[RecipeFile]:
    """The method's recipes for the named sets (``recipe_files``)."""
    return [recipe for recipe in recipe_files() if recipe.method == method]


def choose_recipe(
    method: str, epsilon: float, channels: int, size: tuple[int, int] | None, size_given: bool
) -> Choice | Problem:
    """The recipe for ``channels``-channel images of (height, width) ``size`` (None: the sizes differ, so
    they are read at the recipe's); ``size_given``: the user set it, so it is kept whatever the recipe's."""
    recipes = method_recipes(method)
    kinds = [dataset for dataset in by_channels().get(channels, ()) if any(r.dataset == dataset for r in recipes)]
    if not kinds:
        return _no_recipe(method, channels, recipes)
    candidates = [r for r in recipes if r.dataset == kinds[0]]
    recipe = min(candidates, key=lambda r: (abs(math.log(r.epsilon / epsilon)), r.epsilon))
    _, height, width = recipe.image_shape
    own = pixels((height, width))
    kind = f"{'colour' if channels == 3 else 'grey'} images ({recipe.source.title}, {own})"
    at = f"written for ε = {recipe.epsilon:g}, run at" if recipe.epsilon != epsilon else "at"
    at = f"{at} ε = {epsilon:g}"
    reason = f"{method}'s recipe for {kind}, {at}"
    if size_given:
        assert size is not None  # --image-size gives it
        return Choice(recipe, size, f"{reason}; images read at {pixels(size)} as asked")
    if size is None:
        return Choice(recipe, (height, width), f"{reason}; the images differ in size, so all are read at its size")
    if size == (height, width):
        return Choice(recipe, size, f"{reason}; the images are {pixels(size)} already")
    if all(NEAR[0] <= side / own <= NEAR[1] for side, own in zip(size, (height, width), strict=True)):
        return Choice(recipe, size, f"{reason}; the images are {pixels(size)}, near enough to keep as they are")
    return Problem(
        f"the images are {pixels(size)}, far from the {own} that {recipe.path.name} was written for",
        (Fix((("image_size", height),), f"read them at {own}"), YOUR_RECIPE),
    )


def _no_recipe(method: str, channels: int, recipes: list[RecipeFile]) -> Problem:
    if not recipes:
        return Problem(f"{method} has no image recipe in {RECIPES} (a repository checkout holds them)", (YOUR_RECIPE,))
    other = 1 if channels == 3 else 3
    kind = "grey" if channels == 3 else "colour"
    names = ", ".join(sorted({r.path.name for r in recipes}))
    return Problem(
        f"{method} has recipes for {kind} images only ({names})",
        (Fix((("channels", other),), f"read the images as {kind}"), YOUR_RECIPE),
    )
