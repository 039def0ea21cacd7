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
