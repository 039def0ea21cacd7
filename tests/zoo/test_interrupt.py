"""Ctrl-C during training ends in one line with the exit status of an interrupted command (130): where training had
begun, a Lightning checkpoint and the run's plan (a recipe) beside the model folder, and the exact command that
resumes from both; the resumed run spends no ε twice (a Release is not repeated, DP-SGD's steps continue one ledger
entry)."""

import json
import shlex
import signal

import pytest
import pytorch_lightning as pl
import yaml

from tests.folders import write_image_folder
from tests.privacy.test_stages import QUIET, Staged
from tests.zoo.test_train import TINY_MERF
from zoo import recipes
from zoo.cli import main
from zoo.fit import Interruption, TrainingInterrupted
from zoo.methods import toy_images
from zoo.privacy import DPBudget, epsilon_spent
from zoo.stages import PrivateSteps, Release
from zoo.training import train


class CtrlC(pl.Callback):
    """Presses Ctrl-C (``times`` in a row) during the step that brings the run to ``step`` steps, as a user would."""

    def __init__(self, step: int, times: int = 1) -> None:
        self.step, self.times = step, times

    def on_train_batch_end(self, trainer, *args) -> None:
        if trainer.global_step == self.step:
            for _ in range(self.times):
                signal.raise_signal(signal.SIGINT)


def released_then_steps(model):
    return [Release("mean", lambda d, b: model.release_mean(d, b, 20.0)), PrivateSteps()]


PRIVACY = dict(noise_multiplier=1.5, accountant="rdp")


def test_ctrl_c_during_dp_sgd_saves_a_checkpoint_that_resumes_without_spending_twice(tmp_path, capsys):
    checkpoint, data = tmp_path / "model.interrupted.ckpt", toy_images()
    plan, first = {"trainer": {"max_steps": 8}, "save_pretrained": "model"}, Staged(released_then_steps)
    with Interruption(checkpoint, plan) as interruption:
        with pytest.raises(TrainingInterrupted) as stopped:
            train(first, data, DPBudget(**PRIVACY), callbacks=[CtrlC(3), interruption], max_steps=8, **QUIET)
    recipe = tmp_path / "model.interrupted.yaml"
    assert str(stopped.value) == (
        f"interrupted after step 3: saved {checkpoint} and its plan {recipe}; resume with dpzoo fit --config {recipe} "
        f"--ckpt_path {checkpoint}"
    )
    assert "stopping after this step to save a checkpoint" in capsys.readouterr().err
    assert checkpoint.is_file() and [e.steps for e in first.privacy_ledger.entries] == [1, 3]
    assert yaml.safe_load(recipe.read_text()) == plan

    resumed = Staged(released_then_steps)  # as the printed command does, in a new process with its own budget
    train(resumed, data, DPBudget(**PRIVACY), ckpt_path=str(checkpoint), max_steps=8, **QUIET)
    assert resumed.released_means == [] and [e.steps for e in resumed.privacy_ledger.entries] == [1, 8]
    whole = epsilon_spent([(20.0, 1.0, 1), (1.5, 0.25, 8)], 1e-5, "rdp")  # an uninterrupted run's ε
    assert resumed.privacy_ledger.epsilon(data.dataset_id) == pytest.approx(whole)


def test_a_second_ctrl_c_or_one_outside_the_steps_stops_at_once_saving_nothing(tmp_path):
    checkpoint = tmp_path / "model.interrupted.ckpt"
    before = signal.getsignal(signal.SIGINT)  # Python's own, or ignored under nohup
    with Interruption(checkpoint, {}) as interruption:
        with pytest.raises(TrainingInterrupted, match="^interrupted again: stopped at once; nothing was saved$"):
            train(
                Staged(),
                toy_images(),
                DPBudget(**PRIVACY),
                callbacks=[CtrlC(2, times=2), interruption],
                max_steps=8,
                **QUIET,
            )

    def pressed(model):
        return [Release("mean", lambda d, b: signal.raise_signal(signal.SIGINT)), PrivateSteps()]

    with Interruption(checkpoint, {}) as interruption:
        with pytest.raises(TrainingInterrupted, match="^interrupted; nothing was saved$"):
            train(Staged(pressed), toy_images(), DPBudget(**PRIVACY), callbacks=[interruption], max_steps=8, **QUIET)
    assert not checkpoint.exists()
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler again


def test_dpzoo_train_interrupted_prints_one_line_and_the_printed_command_resumes_it(tmp_path, monkeypatch, capsys):
    """The Release is not repeated on resume: the model's ledger holds the one release of the first run. The plan
    written beside the checkpoint is the folder's (``dpzoo train`` passes no command line to resume from)."""
    (tmp_path / "configs").mkdir()
    name = "dp_merf_cifar10_eps1.yaml"
    recipe = yaml.safe_load((recipes.RECIPES / name).read_text())
    recipe["model"]["init_args"].update(TINY_MERF)
    recipe["trainer"].update(max_steps=6, enable_progress_bar=False)
    recipe["trainer"]["callbacks"] = [{"class_path": f"{__name__}.CtrlC", "init_args": {"step": 2}}]
    (tmp_path / "configs" / name).write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(recipes, "RECIPES", tmp_path / "configs")
    photos = write_image_folder(tmp_path / "photos", per_class=14, size=(32, 32))
    out = tmp_path / "models" / "pets"
    monkeypatch.chdir(tmp_path)  # the folders given relative: the plan and the resume command name them absolute
    assert main(["train", "photos", "--method", "dp-merf", "--epsilon", "1", "--out", "models/pets"]) == 130
    monkeypatch.chdir(photos)
    err = capsys.readouterr().err
    checkpoint = tmp_path / "models" / "pets.interrupted.ckpt"
    last = err.strip().splitlines()[-1]
    plan = tmp_path / "models" / "pets.interrupted.yaml"
    assert last.startswith(f"dpzoo train: interrupted after step 2: saved {checkpoint} and its plan {plan}; resume ")
    assert "graceful shutdown" not in err and "Traceback" not in err
    assert checkpoint.is_file() and not out.exists()
    monkeypatch.chdir(tmp_path)  # the same command again: the saved run is offered before any training
    assert main(["train", "photos", "--method", "dp-merf", "--epsilon", "1", "--out", "models/pets"]) == 130
    monkeypatch.chdir(photos)
    offer = f"an interrupted run into this --out is saved at {checkpoint}: to resume it instead"
    assert offer in capsys.readouterr().out
    command = shlex.split(last.split("resume with ", 1)[1])
    assert command == ["dpzoo", "fit", "--config", str(plan), "--ckpt_path", str(checkpoint)]
    written = yaml.safe_load(plan.read_text())
    assert written["data"]["init_args"]["root"] == str(photos) and written["save_pretrained"] == str(out)
    assert main(command[1:]) == 0
    config = json.loads((out / "config.json").read_text())
    (release,) = config["privacy_ledger"]["entries"]
    assert release["mechanism"] == "gaussian" and release["steps"] == 1
    assert config["recipe"]["selection"].startswith("dpzoo train chose configs/dp_merf_cifar10_eps1.yaml")
