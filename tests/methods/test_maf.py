"""MAF building blocks (DP-NF): autoregressive masks, exact inverse, log-det, normalisation."""

import pytest
import torch

from lightning_modules.nets.maf import MADE, MAF


def test_made_output_d_depends_only_on_inputs_before_d():
    torch.manual_seed(0)
    made = MADE(dim=5, hidden=16)
    x = torch.randn(1, 5)
    for half in (0, 1):  # shift and log-scale
        jacobian = torch.autograd.functional.jacobian(lambda v, half=half: made(v)[half][0], x)[:, 0]  # (out, in)
        assert torch.all(jacobian.triu() == 0), jacobian
        assert torch.all(jacobian.tril(-1)[1:].abs().sum(1) > 0)  # the allowed inputs stay connected


@pytest.mark.parametrize("actnorm", [False, True])
def test_maf_inverts_exactly(actnorm):
    torch.manual_seed(1)
    flow = MAF(dim=4, blocks=3, hidden=12, actnorm=actnorm).double()
    if actnorm:
        flow.blocks[0].actnorm.initialize(torch.randn(4, dtype=torch.double), torch.rand(4, dtype=torch.double) + 0.5)
    x = torch.randn(6, 4, dtype=torch.double)
    z, _ = flow(x)
    torch.testing.assert_close(flow.inverse(z), x)


def test_maf_log_det_matches_a_numerical_jacobian():
    torch.manual_seed(2)
    flow = MAF(dim=3, blocks=2, hidden=8, actnorm=True).double()
    flow.blocks[1].actnorm.initialize(torch.tensor([0.1, -0.2, 0.3]).double(), torch.tensor([0.5, 2.0, 1.5]).double())
    x = torch.randn(4, 3, dtype=torch.double)
    _, log_det = flow(x)
    for row in range(4):
        jacobian = torch.autograd.functional.jacobian(lambda v: flow(v[None])[0][0], x[row])
        torch.testing.assert_close(log_det[row], torch.linalg.slogdet(jacobian).logabsdet)


@pytest.mark.parametrize("dim", [1, 2])
def test_maf_density_integrates_to_one(dim):
    torch.manual_seed(3)
    flow = MAF(dim=dim, blocks=3, hidden=16).double()
    grid = torch.linspace(-10, 10, 2001 if dim == 1 else 401, dtype=torch.double)
    points = grid[:, None] if dim == 1 else torch.stack(torch.meshgrid(grid, grid, indexing="ij"), -1).reshape(-1, 2)
    cell = (grid[1] - grid[0]) ** dim
    assert (flow.log_prob(points).exp().sum() * cell).item() == pytest.approx(1.0, abs=0.01)


def test_mixture_prior_density_integrates_to_one_and_gets_exact_per_example_gradients():
    from zoo.privacy.per_example import create_engine

    torch.manual_seed(0)
    flow = MAF(2, blocks=1, hidden=8, prior_components=3).double()
    axis = torch.linspace(-9, 9, 361, dtype=torch.double)
    grid = torch.stack(torch.meshgrid(axis, axis, indexing="xy"), -1).reshape(-1, 2)
    with torch.no_grad():
        mass = flow.log_prob(grid).exp().sum() * (axis[1] - axis[0]) ** 2
    assert mass.item() == pytest.approx(1.0, abs=0.01)
    x = torch.randn(5, 2, dtype=torch.double)
    engine = create_engine([flow], "ghost")
    flow.log_prob(x).sum().backward()
    norms = engine.squared_norms().sqrt()
    engine.close()
    for i in range(5):
        flow.zero_grad()
        flow.log_prob(x[i : i + 1]).sum().backward()
        single = torch.cat([p.grad.flatten() for p in flow.parameters() if p.grad is not None]).norm()
        assert norms[i].item() == pytest.approx(single.item(), rel=1e-6)
    samples = flow.sample(100, torch.Generator().manual_seed(0))
    assert samples.shape == (100, 2) and torch.isfinite(samples).all()
