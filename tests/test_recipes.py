"""Every recipe in configs/ parses as `dpzoo fit` reads it: the model and data build, and the trainer
holds exactly one privacy budget (a recipe that no longer matches its method's arguments fails here,
not hours into a user's run)."""

from pathlib import Path

import pytest

from zoo.fit import _budget_and_trainer_options, _cli
from zoo.privacy.pac import PACPrivacy

RECIPES = sorted(str(p) for p in (Path(__file__).parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("recipe", RECIPES, ids=[Path(r).stem for r in RECIPES])
def test_recipe_parses_and_holds_one_budget(recipe):
    cli = _cli(["--config", recipe])
    budget, _, options = _budget_and_trainer_options(cli)
    if isinstance(budget, PACPrivacy):  # one PAC release, no training steps to plan
        assert budget.mi_bound > 0
    else:  # σ is calibrated for the planned steps
        assert budget.target_epsilon > 0 and options["max_steps"] > 0
