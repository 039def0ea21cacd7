"""Training stops at the target ε, never beyond, resuming continues the spent budget, and the budget the
user holds reports what the plan spent."""

import pytest
import torch
from torch.utils.data import TensorDataset

from tests.toys import TinyClassifier, ToyData, tiny_trainer, toy_images
from zoo.methods import method_class
from zoo.privacy import DPBudget, DPCallback, PrivacyConfigError, epsilon_spent
from zoo.privacy.callback import CHECKPOINT_KEY
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)

DATA = toy_images(200)


def budgeted(planned_steps: int = 12) -> DPCallback:
    return DPCallback(target_epsilon=2.0, accountant="rdp", planned_steps=planned_steps, max_grad_norm=1.0)


def spent(entry, steps=None) -> float:
    return epsilon_spent([(entry.noise_multiplier, entry.sample_rate, steps or entry.steps)], 1e-5, "rdp")


@pytest.mark.parametrize("accumulate", [1, 2])
def test_training_stops_at_the_last_step_within_the_target(accumulate):
    callback = budgeted()
    trainer = tiny_trainer([callback], max_steps=10_000, accumulate_grad_batches=accumulate)
    trainer.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1))
    entry = callback.entry
    assert entry.steps == callback.allowed_steps == trainer.global_step >= 12
    assert spent(entry) <= 2.0 < spent(entry, entry.steps + 1)
    assert callback.epsilon == pytest.approx(spent(entry))
    assert trainer.lightning_module.privacy_ledger.entries == [entry]


def test_resume_continues_the_spent_budget(tmp_path):
    first = DPCallback(noise_multiplier=1.5, accountant="rdp")
    trainer = tiny_trainer([first], max_steps=6)
    trainer.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1))
    trainer.save_checkpoint(tmp_path / "run.ckpt")
    saved = torch.load(tmp_path / "run.ckpt", weights_only=False)
    assert saved[CHECKPOINT_KEY]["entries"][0]["steps"] == 6

    second = DPCallback(noise_multiplier=1.5, accountant="rdp")
    tiny_trainer([second], max_steps=10).fit(
        TinyClassifier(lr=0.1), ToyData(DATA, 0.1), ckpt_path=tmp_path / "run.ckpt"
    )
    assert len(second.ledger.entries) == 1
    assert second.entry.steps == 10
    assert second.epsilon == pytest.approx(spent(second.entry, 10))


def test_resume_with_a_target_counts_steps_taken_before(tmp_path):
    first = budgeted(planned_steps=12)
    trainer = tiny_trainer([first], max_steps=5)
    trainer.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1))
    allowed = first.allowed_steps
    trainer.save_checkpoint(tmp_path / "run.ckpt")

    second = budgeted(planned_steps=12)
    resumed = tiny_trainer([second], max_steps=10_000)
    resumed.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1), ckpt_path=tmp_path / "run.ckpt")
    assert second.entry.steps == allowed  # not 5 + allowed
    assert second.entry.noise_multiplier == first.entry.noise_multiplier
    assert second.epsilon <= 2.0


def test_resuming_a_spent_budget_trains_no_further(tmp_path):
    first = budgeted(planned_steps=8)
    trainer = tiny_trainer([first], max_steps=10_000)
    trainer.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1))
    trainer.save_checkpoint(tmp_path / "spent.ckpt")
    steps, epsilon = first.entry.steps, first.epsilon

    second = budgeted(planned_steps=8)
    module = TinyClassifier(lr=0.1)
    with pytest.warns(UserWarning, match="already spent"):
        tiny_trainer([second], max_steps=10_000).fit(module, ToyData(DATA, 0.1), ckpt_path=tmp_path / "spent.ckpt")
    assert second.entry.steps == steps and second.epsilon == pytest.approx(epsilon)


def test_resume_with_other_settings_opens_a_new_entry_that_composes(tmp_path):
    trainer = tiny_trainer([DPCallback(noise_multiplier=1.5, accountant="rdp")], max_steps=4)
    trainer.fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1))
    trainer.save_checkpoint(tmp_path / "run.ckpt")
    second = DPCallback(noise_multiplier=3.0, accountant="rdp")
    tiny_trainer([second], max_steps=8).fit(TinyClassifier(lr=0.1), ToyData(DATA, 0.1), ckpt_path=tmp_path / "run.ckpt")
    assert [e.steps for e in second.ledger.entries] == [4, 4]
    expected = epsilon_spent([(1.5, 0.1, 4), (3.0, 0.1, 4)], 1e-5, "rdp")
    assert second.epsilon == pytest.approx(expected)


class TwoStepsPerBatch(TinyClassifier):
    def __init__(self):
        super().__init__(lr=0.1)
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        for _ in range(2):
            optimizer.zero_grad()
            self.manual_backward(super().training_step(batch, batch_idx))
            optimizer.step()


def test_two_private_steps_on_one_batch_are_refused():
    with pytest.raises(PrivacyConfigError, match="second private optimizer step on the same Poisson batch"):
        tiny_trainer([DPCallback(noise_multiplier=1.0)], max_steps=2).fit(TwoStepsPerBatch(), ToyData(DATA, 0.1))


def test_load_from_checkpoint_keeps_the_ledger_so_further_training_composes(tmp_path):
    from lightning_modules import DPLFlow
    from tests.zoo.test_hub import TINY

    images = TensorDataset(torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.zeros(64))
    first = DPCallback(noise_multiplier=1.2, max_grad_norm=0.1, accountant="rdp")
    trainer = tiny_trainer([first], max_steps=6)
    trainer.fit(DPLFlow(**TINY), ToyData(images, 0.25, "same-data"))
    trainer.save_checkpoint(tmp_path / "run.ckpt")

    loaded = DPLFlow.load_from_checkpoint(tmp_path / "run.ckpt")
    assert loaded.privacy_ledger.entries[0].steps == 6
    second = DPCallback(noise_multiplier=1.2, max_grad_norm=0.1, accountant="rdp")
    tiny_trainer([second], max_steps=6).fit(loaded, ToyData(images, 0.25, "same-data"))
    assert [e.steps for e in second.ledger.entries] == [6, 6]
    assert second.epsilon == pytest.approx(epsilon_spent([(1.2, 0.25, 12)], 1e-5, "rdp"))


@pytest.mark.parametrize("method", ["dp-lflow", "dp-merf"])
def test_the_budget_the_user_holds_reports_what_the_whole_plan_spent(method):
    """DP-SGD steps (DP-LFlow) and a Release stage before public steps (DP-MERF) spend into one budget."""
    cls = method_class(method)
    recipe = cls.tiny_recipe()
    model, data = cls(**recipe.architecture), recipe.data()
    budget = DPBudget(**recipe.privacy)
    assert budget.epsilon_spent == budget.ledger_worst_epsilon == 0.0
    train(model, data, budget, max_steps=recipe.max_steps, **QUIET)
    assert budget.ledger is model.privacy_ledger and budget.ledger.entries
    (guarantee,) = model.privacy_ledger.guarantees().values()
    assert budget.epsilon_spent == budget.ledger_worst_epsilon == guarantee["epsilon"]
    assert 0 < budget.epsilon_spent <= recipe.privacy["target_epsilon"]


class ToyRecords(ToyData):
    """Toy data that names its records, as the private datamodules do (``zoo.privacy.records``)."""

    records_identity = "toy/train#0123456789abcdef"


def test_a_private_stage_records_the_records_it_touched_and_a_budget_may_not_rename_them():
    """A budget's own dataset_id may not rename records in the ledger; the data's own name is the data's (one
    class of another split may keep the very same records) and composes with the first."""
    model = TinyClassifier()
    first = DPCallback(noise_multiplier=1.0, accountant="rdp")
    tiny_trainer([first], max_steps=2).fit(model, ToyRecords(DATA, 0.1))
    assert first.entry.records_identity == ToyRecords.records_identity
    renamed = DPCallback(noise_multiplier=1.0, accountant="rdp", dataset_id="renamed")
    with pytest.raises(
        PrivacyConfigError, match=r"holds these records \(toy/train#0123456789abcdef\) as toy, not renamed"
    ):
        tiny_trainer([renamed], max_steps=2).fit(model, ToyRecords(DATA, 0.1))
    assert [e.steps for e in model.privacy_ledger.entries] == [2]
    other_split = DPCallback(noise_multiplier=1.0, accountant="rdp")  # a name the data gives is its own
    tiny_trainer([other_split], max_steps=2).fit(model, ToyRecords(DATA, 0.1, "toy[another split]"))
    assert model.privacy_ledger.guarantees()["toy"]["composed_with"] == ["toy[another split]"]


def test_train_takes_the_budget_and_refuses_a_stage_callback_saying_so():
    recipe = method_class("dp-lflow").tiny_recipe()
    with pytest.raises(PrivacyConfigError, match=r"zoo.privacy.DPBudget\(...\) with the same arguments"):
        train(method_class("dp-lflow")(**recipe.architecture), recipe.data(), DPCallback(target_epsilon=1.0))
