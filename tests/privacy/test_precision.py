"""Under bf16 autocast (Lightning's ``bf16-mixed``, here on the CPU) every mechanism still clips in float32:
no record's contribution exceeds C, the noise is drawn in float32, and fp16 is refused before any work."""

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import TensorDataset

from tests.toys import GradientRecorder, TinyClassifier, ToyData, tiny_trainer
from zoo.privacy import DPBudget, DPCallback, PrivacyConfigError
from zoo.privacy.mechanisms.output_sanitizer import GradientSanitizer
from zoo.privacy.precision import mechanism_arithmetic
from zoo.privacy.randomness import DeviceGenerators

MODES = ["ghost", "hooks", "functorch"]
CLIP = 1.0
FLOAT32_ROUNDING = 1e-6


class ManualTinyClassifier(TinyClassifier):
    """TinyClassifier stepping its own optimiser, as Private Set and DP²-VAE do: its backward pass, and so the
    clipping behind it, runs inside the autocast of ``training_step``."""

    def __init__(self, lr: float) -> None:
        super().__init__(lr)
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(super().training_step(batch, batch_idx))
        optimizer.step()


def one_record_contributions(module: pl.LightningModule, mode: str, steps: int = 6) -> list[float]:
    """The norm of one record's clipped gradient at each of ``steps`` steps: the dataset is that record, the
    sampling rate 1 and the noise 1e-13·C, so each step's private gradient is its contribution alone."""
    x = 30 * torch.randn(1, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    record = TensorDataset(x, torch.tensor([1]))
    recorder = GradientRecorder()
    callback = DPCallback(noise_multiplier=1e-13, max_grad_norm=CLIP, per_example_mode=mode, noise_seed=0)
    trainer = tiny_trainer([callback, recorder], steps, precision="bf16-mixed")
    trainer.fit(module, ToyData(record, sample_rate=1.0))
    return [torch.sqrt(sum(g.double().square().sum() for g in grads)).item() for grads in recorder.grads]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("manual", [False, True], ids=["automatic", "manual"])
def test_a_records_clipped_contribution_stays_within_C_under_bf16_autocast(mode, manual):
    torch.manual_seed(0)
    module = ManualTinyClassifier(lr=0.01) if manual else TinyClassifier(lr=0.01)
    norms = one_record_contributions(module, mode)
    assert len(norms) == 6
    assert max(norms) <= CLIP * (1 + FLOAT32_ROUNDING)
    assert min(norms) > 0.99 * CLIP  # the record was clipped, not dropped


def test_the_sanitiser_clips_bf16_rows_in_float32():
    rows = (50 * torch.randn(64, 3, 8, 8, generator=torch.Generator().manual_seed(1))).bfloat16()
    sanitizer = GradientSanitizer(noise_multiplier=0.0, max_grad_norm=CLIP, loss_reduction="sum")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        clipped = sanitizer.sanitize_gradient(rows)
    assert clipped.dtype == torch.float32
    assert clipped.flatten(1).double().norm(dim=1).max() <= CLIP * (1 + FLOAT32_ROUNDING)


def test_noise_is_drawn_in_float32_for_bf16_rows():
    sanitizer = GradientSanitizer(noise_multiplier=1.0, max_grad_norm=CLIP, loss_reduction="sum")
    noised = sanitizer.sanitize_gradient(torch.zeros(4096, 1, dtype=torch.bfloat16))
    assert noised.dtype == torch.float32
    assert noised.unique().numel() > 4000  # a bf16 lattice would repeat values


def test_mechanism_arithmetic_turns_autocast_and_tf32_off_and_restores_them():
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with mechanism_arithmetic():
                assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
                assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def test_device_generators_draw_cpu_noise_from_the_source_itself():
    source = torch.Generator().manual_seed(5)
    assert DeviceGenerators(source).on(torch.device("cpu")) is source


def test_float16_is_refused_by_train_before_any_stage_runs():
    from zoo.training import train

    class Untouchable:
        privacy_ledger = None

        def training_parts(self, datamodule):
            raise AssertionError("a stage was prepared before the refusal")

    with pytest.raises(PrivacyConfigError, match="fp16 loss scaling"):
        train(Untouchable(), None, DPBudget(target_epsilon=1.0), precision="16-mixed")
