"""Methods that a user may move to a GPU: densities take inputs from anywhere and answer where the input is, the
DP-NF picture is drawn from CPU values, and P3DM's mechanism runs where its module is, never on a GPU it found.
On the CPU: a meta-device model stands in for one on a GPU (it computes shapes only)."""

import pytest
import torch

from lightning_modules import P3DM, DPLFlow
from zoo.plots import density_panel

TINY_FLOW = dict(image_shape=(1, 8, 8), channels=(4, 8), latent_dim=4, flow_blocks=2, flow_hidden=16)


def test_dp_lflow_log_prob_moves_its_input_to_the_model_and_answers_on_the_inputs_device(monkeypatch):
    model = DPLFlow(**TINY_FLOW).eval()
    images = torch.rand(5, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    scores = model.log_prob(images)
    assert scores.shape == (5,) and scores.device.type == "cpu"
    assert torch.equal(scores, model.flow.log_prob(model.encoder(images)))
    model.to("meta")
    codes_on = []

    def log_prob(codes):
        codes_on.append(codes.device.type)
        return torch.zeros(len(codes))

    monkeypatch.setattr(model.flow, "log_prob", log_prob)
    assert model.log_prob(images).device.type == "cpu"
    assert codes_on == ["meta"]  # the encoder ran where the model is


class OnDevice:
    """A log-density on another device: only ``.detach().cpu()`` gives values the CPU can draw."""

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    def detach(self) -> "OnDevice":
        return self

    def cpu(self) -> torch.Tensor:
        return self.values


def test_the_density_picture_reads_log_prob_back_on_the_cpu():
    picture = density_panel(lambda rows: OnDevice(-rows.square().sum(1)), (-2.0, 2.0, -2.0, 2.0), size=32)
    assert picture.size == (32, 32)
    centre, corner = picture.getpixel((16, 16)), picture.getpixel((0, 0))
    assert sum(centre) < sum(corner)  # dark where the density is high


def test_dp_nf_log_prob_answers_on_the_inputs_device():
    from lightning_modules import DPNF

    model = DPNF(features=2, blocks=1, hidden=8).eval()
    rows = torch.randn(6, 2, generator=torch.Generator().manual_seed(0))
    scores = model.log_prob(rows)
    assert scores.shape == (6,) and scores.device == rows.device


def test_p3dm_trains_its_mechanism_where_the_module_is(monkeypatch):
    """Where the run put the module (meta here), not where ``torch.cuda.is_available()`` points."""
    import lightning_modules.p3dm as p3dm

    class Stop(Exception):
        """Enough: the mechanism's parts have been placed."""

    placed = {}

    def train_score_model(images, labels, score, classifier, sigmas, recipe, generator):
        placed.update(images=images.device, score=next(score.parameters()).device, sigmas=sigmas.device)
        raise Stop

    monkeypatch.setattr(p3dm, "train_score_model", train_score_model)
    recipe = P3DM.tiny_recipe()
    model = P3DM(**recipe.architecture).to("meta")
    with pytest.raises(Stop):
        model.mechanism(torch.rand(8, 1, 8, 8), torch.arange(8) % 3)
    assert {name: device.type for name, device in placed.items()} == dict.fromkeys(placed, "meta")
    assert set(placed) == {"images", "score", "sigmas"}
