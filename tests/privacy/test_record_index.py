"""The local record index: one key per image whatever its file, one name per set of records on this machine,
names no one without this machine's key can recompute, and kept where only the owner reads it."""

import stat

import numpy as np
import pytest

from zoo.privacy import record_index


def test_a_grey_image_and_its_rgb_copy_share_a_key_and_another_size_does_not():
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert record_index.pixel_key(grey) == record_index.pixel_key(np.repeat(grey[:, :, None], 3, axis=2))
    assert record_index.pixel_key(grey) != record_index.pixel_key(grey.reshape(4, 3))
    batch = np.stack([grey[None], grey[None] + 1])  # (N, C, H, W)
    assert record_index.pixel_keys(batch)[0].tobytes() == record_index.pixel_key(grey)
    with pytest.raises(ValueError, match="uint8"):
        record_index.pixel_key(grey.astype(np.float32))


def test_a_set_of_records_gets_one_name_in_any_order_and_another_on_another_machine(tmp_path, monkeypatch):
    keys = record_index.pixel_keys(np.arange(2 * 3 * 4 * 4, dtype=np.uint8).reshape(2, 3, 4, 4))
    name = record_index.register(keys)
    assert name.startswith("local:") and name == record_index.register(keys[::-1]) == record_index.register(
        np.concatenate([keys, keys])
    )
    assert record_index.overlap(name, record_index.register(keys[:1])) is True
    assert record_index.overlap(name, "local:not-here") is None and record_index.keys_of(None) is None
    folder = record_index.index_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "secret.key").stat().st_mode) == 0o600
    monkeypatch.setenv("DPZOO_CACHE_DIR", str(tmp_path / "another-machine"))
    assert record_index.register(keys) != name and record_index.keys_of(name) is None
