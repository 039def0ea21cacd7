"""The forecast before training: a release over a handful of images per class is called mostly noise, one over
MNIST-sized classes is not, and it says what would change it."""

import pytest

from zoo.forecast import mean_embedding_forecast


def test_ten_images_per_class_at_epsilon_one_is_forecast_as_mostly_noise():
    forecast = mean_embedding_forecast("dp-merf", 1, 1.0, 1e-5, [10] * 10, 10_000)
    assert forecast.mostly_noise
    assert "mostly noise" in forecast.lines[0]
    assert "images per class at this ε" in forecast.lines[1] and "--init-from" in forecast.lines[1]


def test_mnist_sized_classes_are_not():
    forecast = mean_embedding_forecast("dp-merf", 1, 1.0, 1e-5, [5_400] * 10, 10_000)
    assert not forecast.mostly_noise
    assert forecast.signal_to_noise > 3 and len(forecast.lines) == 1


def test_more_images_or_a_larger_epsilon_raise_the_signal_to_noise():
    small = mean_embedding_forecast("dp-mepf", 3, 1.0, 1e-5, [135] * 6, 12_944)
    assert mean_embedding_forecast("dp-mepf", 3, 1.0, 1e-5, [1350] * 6, 12_944).signal_to_noise == pytest.approx(
        10 * small.signal_to_noise
    )
    assert mean_embedding_forecast("dp-mepf", 3, 10.0, 1e-5, [135] * 6, 12_944).signal_to_noise > small.signal_to_noise


def test_a_method_without_a_measured_signal_gets_no_forecast():
    assert mean_embedding_forecast("gs-wgan", 1, 1.0, 1e-5, [100] * 10, 1000) is None
