"""What a training run is given besides its recipe's objects (``zoo.recipe_cli.Recipe``): where the model goes
(``RunOptions``) and how the run came about, as the saved model's card records it (``Provenance``).

A front end translates its own input into these two objects and ``zoo.fit.run_recipe`` runs them: ``dpzoo fit``
from the recipe's settings and its command line, ``dpzoo train`` from its options and the recipe it chose, a
Python caller by building them. The core never reads a command line. ``RunOptions``' fields are named as
``dpzoo fit`` and a recipe name them (``--save_pretrained``, ``weights_dtype:``), so that the settings a recipe
parses into and the plan an interrupted run writes (``zoo.fit.Interruption``) are one dictionary away."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class RunOptions:
    """Where and how a run writes its model, and what it starts or resumes from."""

    #: the folder the trained model is saved in (Hub layout); None: the model is returned only
    save_pretrained: str | None = None
    #: the card's model id (default: the folder's name)
    model_id: str | None = None
    #: the release's licence identifier (default: none stated)
    license: str | None = None
    #: ``float32`` or ``float16`` for the released weights
    weights_dtype: str = "float32"
    #: replace a model already in ``save_pretrained``
    overwrite: bool = False
    #: a model (id or folder) whose released weights the run starts from, its ledger coming along
    init_from: str | None = None
    #: a Lightning checkpoint of this plan to resume from (``zoo.training.train``'s ``ckpt_path``)
    ckpt_path: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RunOptions:
        """The options among a recipe's parsed settings (``Recipe.options``); a setting left unset keeps the
        default."""
        given = {f.name: settings.get(f.name) for f in fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})


@dataclass(frozen=True)
class Provenance:
    """How a run came about, in the words its card records (paths are made publishable when saved)."""

    #: the command that ran it (``dpzoo fit --config ...``, ``dpzoo train photos --method ...``)
    command: str
    #: the recipe file, or files, it started from
    config: str | list[str] | None = None
    #: how the recipe's settings were chosen
    selection: str | None = None

    def recipe(self) -> dict[str, Any]:
        """The ``recipe`` entry of the saved model's config.json."""
        return {"config": self.config, "command": self.command, "selection": self.selection}
