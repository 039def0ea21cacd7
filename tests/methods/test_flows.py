"""RealNVP and DP-LFlow building blocks: invertibility and exact log-determinants."""

import torch

from lightning_modules.nets import RealNVP


def test_realnvp_inverts():
    torch.manual_seed(0)
    flow = RealNVP(dim=6, blocks=4, hidden=16)
    x = torch.randn(10, 6)
    z, _ = flow(x)
    torch.testing.assert_close(flow.inverse(z), x, atol=1e-5, rtol=1e-5)


def test_realnvp_log_det_matches_a_numerical_jacobian():
    torch.manual_seed(1)
    flow = RealNVP(dim=4, blocks=3, hidden=8).double()
    x = torch.randn(3, 4, dtype=torch.double)
    _, log_det = flow(x)
    for row in range(3):
        jacobian = torch.autograd.functional.jacobian(lambda v: flow(v[None])[0][0], x[row])
        torch.testing.assert_close(log_det[row], torch.linalg.slogdet(jacobian).logabsdet)


def test_realnvp_density_integrates_to_one_in_2d():
    torch.manual_seed(2)
    flow = RealNVP(dim=2, blocks=4, hidden=16).double()
    grid = torch.linspace(-8, 8, 401, dtype=torch.double)
    xx, yy = torch.meshgrid(grid, grid, indexing="ij")
    density = flow.log_prob(torch.stack([xx.flatten(), yy.flatten()], 1)).exp()
    cell = (grid[1] - grid[0]) ** 2
    assert abs((density.sum() * cell).item() - 1.0) < 0.01


def test_flow_trains_encoder_switch_controls_the_flow_gradient_into_the_encoder():
    from lightning_modules import DPLFlow

    torch.manual_seed(3)
    images = torch.rand(5, 1, 8, 8)
    tiny = dict(image_shape=(1, 8, 8), channels=(4, 8), latent_dim=4, flow_blocks=2, flow_hidden=8)

    def encoder_gradient(model, loss):
        model.zero_grad()
        loss.sum().backward()
        return torch.cat([p.grad.flatten() for p in model.encoder.parameters()])

    for joint in (True, False):
        model = DPLFlow(**tiny, flow_trains_encoder=joint)
        total = encoder_gradient(model, model.per_example_loss(images))
        reconstruction_only = encoder_gradient(
            model, (model.decoder(model.encoder(images)) - images).square().flatten(1).sum(1)
        )
        assert torch.allclose(total, reconstruction_only) is not joint
