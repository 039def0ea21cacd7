"""Private helpers (GS-WGAN's critics, DP²-VAE's encoders) train on a public schedule: step t trains
helper t mod K with randomness seeded from t, whatever helper the secret draw queries, so each
helper's state (parameters and buffers) depends on its part and the released outputs only (the
theorem in ``zoo.privacy.mechanisms.private_helpers``); the query changes no helper, and a helper's
training changes nothing but that helper. An empty part leaves its helper untouched, and the
refusal of too many helpers reads the public N and K only."""

import math

import pytest
import torch

from lightning_modules.dp2_vae import DP2VAE
from lightning_modules.gs_wgan import GSWGAN
from lightning_modules.parts.helper_parts import PRIVATE_STREAM, public_randomness
from zoo.privacy import DPBudget, PrivateHelpers
from zoo.training import train

QUIET = dict(accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
METHODS = {"gs-wgan": (GSWGAN, "critics"), "dp2-vae": (DP2VAE, "encoders")}


def tiny(method: str, **overrides):
    cls, _ = METHODS[method]
    torch.manual_seed(0)
    recipe = cls.tiny_recipe()
    return cls(**{**recipe.architecture, **overrides}), recipe.data()


def state(module: torch.nn.Module) -> list[torch.Tensor]:
    """Parameters and buffers (spectral norm's power-iteration vectors among them)."""
    return [tensor.detach().clone() for tensor in module.state_dict().values()]


def helper_states(model, method: str) -> list[list[torch.Tensor]]:
    return [state(helper) for helper in getattr(model, METHODS[method][1])]


def other_states(model, method: str) -> list[list[torch.Tensor]]:
    """Every module of the model but the never-released ones, its helpers and their scratch networks
    (for GS-WGAN: the trained and released generators)."""
    scratch = [getattr(model, name) for name in model.never_released]
    return [state(module) for module in model.children() if all(module is not s for s in scratch)]


def changed(before: list[torch.Tensor], after: list[torch.Tensor]) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def record_private_updates(model, method: str, monkeypatch) -> list[tuple[int, set[int]]]:
    """(step, helpers whose weights a private step changed), for every private step of a run."""
    updates = []
    original = type(model).training_step

    def recording(self, step, batch_idx):
        private = self.training_stage["name"] != self.pretraining
        before = helper_states(self, method) if private else None
        original(self, step, batch_idx)
        if private:
            after = helper_states(self, method)
            moved = {k for k, (b, a) in enumerate(zip(before, after, strict=True)) if changed(b, a)}
            updates.append((int(step), moved))

    monkeypatch.setattr(type(model), "training_step", recording)
    return updates


@pytest.mark.parametrize("method", METHODS)
def test_private_step_t_trains_helper_t_mod_k_whatever_the_secret_draw(method, monkeypatch):
    model, data = tiny(method)
    parts = model.helpers.parts
    monkeypatch.setattr(type(model), "draw_helper", lambda self: parts - 1)  # always query the last helper
    updates = record_private_updates(model, method, monkeypatch)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=5, **QUIET)
    assert len(updates) == 5
    assert all(trained == {step % parts} for step, trained in updates)


def record_around_private_steps(model, states, monkeypatch) -> list:
    """Append ``states(model)`` when a private step asks for its schedule (before its helpers train) and
    when it draws the helper to query (after they have trained, before the query)."""
    schedule, draw = type(model).scheduled_helpers, type(model).draw_helper

    def scheduled(self, step):
        recorded.append(states(self))
        return schedule(self, step)

    def drawn(self):
        recorded.append(states(self))
        return draw(self)

    recorded: list = []
    monkeypatch.setattr(type(model), "scheduled_helpers", scheduled)
    monkeypatch.setattr(type(model), "draw_helper", drawn)
    return recorded


@pytest.mark.parametrize("method", METHODS)
def test_a_query_leaves_every_helper_as_it_was(method, monkeypatch):
    """GS-WGAN's critics are spectrally normalised: a forward pass in training mode moves their
    power-iteration vectors, which would leave a trace of the secret draw in the queried critic."""
    model, data = tiny(method)
    monkeypatch.setattr(type(model), "train_helper", lambda self, helper: None)  # only the queries change state
    recorded = record_around_private_steps(model, lambda m: helper_states(m, method), monkeypatch)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=4, **QUIET)
    recorded.append(helper_states(model, method))
    queries = list(zip(recorded[1::2], recorded[2::2], strict=True))  # (before, after) each query
    assert len(queries) == 4
    assert not any(changed(a, b) for before, after in queries for a, b in zip(before, after, strict=True))


@pytest.mark.parametrize("method", METHODS)
def test_training_a_helper_changes_nothing_but_that_helper(method, monkeypatch):
    """With GS-WGAN's ResNet generator (spectrally normalised), a critic's training would move the
    generator's buffers, and the released ones with them, in a way that depends on the data: an empty
    part skips the forward passes."""
    overrides = {"generator": "resnet"} if method == "gs-wgan" else {}
    model, data = tiny(method, **overrides)
    recorded = record_around_private_steps(model, lambda m: other_states(m, method), monkeypatch)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=3, **QUIET)
    trainings = list(zip(recorded[0::2], recorded[1::2], strict=True))  # (before, after) each step's helpers
    assert len(trainings) == 3
    assert not any(changed(a, b) for before, after in trainings for a, b in zip(before, after, strict=True))


def test_several_critics_per_step_follow_the_public_schedule_whatever_the_secret_draw(monkeypatch):
    model, data = tiny("gs-wgan", critics=3, critics_per_step=2)
    monkeypatch.setattr(GSWGAN, "draw_helper", lambda self: 0)
    updates = record_private_updates(model, "gs-wgan", monkeypatch)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=3, **QUIET)
    assert [trained for _, trained in updates] == [{0, 1}, {2, 0}, {1, 2}]


def test_more_critics_per_step_than_critics_is_refused():
    with pytest.raises(ValueError, match="between 1 and 3 helpers can train per step, got 4"):
        tiny("gs-wgan", critics=3, critics_per_step=4)


@pytest.mark.parametrize("method", METHODS)
def test_an_empty_part_leaves_its_helper_as_initialised_and_training_goes_on(method, monkeypatch):
    model, data = tiny(method)
    monkeypatch.setattr(PrivateHelpers, "assign", lambda self, records, key=None: 1 + torch.arange(len(records)) % 2)
    monkeypatch.setattr(type(model), "draw_helper", lambda self: 0)  # every query goes to the empty part
    model.configure_model()
    initial = helper_states(model, method)
    train(model, data, DPBudget(noise_multiplier=5.0, accountant="rdp"), max_steps=4, **QUIET)
    assert len(model.helper_parts()[0][0]) == 0
    trained = helper_states(model, method)
    assert not changed(initial[0], trained[0]) and changed(initial[1], trained[1])
    assert model.privacy_ledger.entries[-1].steps == 4  # every private step queried the empty part's helper


def test_whether_too_many_helpers_are_refused_depends_on_n_and_k_only():
    records, labels = torch.rand(6, 1, 4, 4), torch.zeros(6, dtype=torch.long)
    parts = PrivateHelpers(6).split(records, labels, b"k" * 16)  # most likely some parts are empty: allowed
    assert sum(len(images) for images, _ in parts) == 6
    with pytest.raises(ValueError, match="7 helpers for 6 records.*use fewer helpers"):
        PrivateHelpers(7).split(records, labels, b"k" * 16)


def test_helper_randomness_is_a_function_of_the_step_and_leaves_the_global_stream_alone():
    torch.manual_seed(123)
    with public_randomness(PRIVATE_STREAM, 7, torch.device("cpu")):
        first = torch.rand(3)
    after_first = torch.rand(1)
    torch.manual_seed(999)
    with public_randomness(PRIVATE_STREAM, 7, torch.device("cpu")):
        second = torch.rand(3)
    with public_randomness(PRIVATE_STREAM, 8, torch.device("cpu")):
        other_step = torch.rand(3)
    torch.manual_seed(123)
    assert torch.equal(first, second) and not torch.equal(first, other_step)
    assert torch.equal(after_first, torch.rand(1))


@pytest.mark.parametrize("gamma", [0.5, 0.1, 0.01])
def test_one_step_is_dominated_by_the_poisson_subsampled_gaussian_it_is_accounted_as(gamma):
    """The theorem's single-step claim, checked numerically in one dimension: one of K helpers
    drawn (rate γ = 1/K), the other helpers' outputs anywhere in the ball of radius R, the record's
    helper moved from one end to the other. Its hockey-stick divergences, both ways, stay below
    those of ((1 − γ)N(0) + γN(2R), N(0)), the Poisson remove pair, at every ε."""
    sigma, radius = 1.0, 1.0
    x = torch.linspace(-12, 12, 200_001, dtype=torch.float64)
    dx = float(x[1] - x[0])

    def gaussian(mean: float) -> torch.Tensor:
        return torch.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * (2 * torch.pi) ** 0.5)

    def hockey_stick(p: torch.Tensor, q: torch.Tensor, alpha: float) -> float:
        return float((p - alpha * q).clamp(min=0).sum() * dx)

    others = sum(gaussian(m) for m in (-radius, -0.3, 0.2, radius)) / 4  # the helpers j ≠ k
    with_record = (1 - gamma) * others + gamma * gaussian(radius)
    without = (1 - gamma) * others + gamma * gaussian(-radius)
    accounted = ((1 - gamma) * gaussian(0.0) + gamma * gaussian(2 * radius), gaussian(0.0))
    for epsilon in (0.0, 0.05, 0.2, 0.5, 1.0, 2.0):
        alpha = math.exp(epsilon)
        bound = hockey_stick(*accounted, alpha)
        assert hockey_stick(with_record, without, alpha) <= bound + 1e-9
        assert hockey_stick(without, with_record, alpha) <= bound + 1e-9
