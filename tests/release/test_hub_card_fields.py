"""Cards that other tools can read (issue 69, item 5): beside dpzoo's own fields, the front matter carries the
Hugging Face Hub's common spellings: the tags ``differential_privacy`` and ``dp-sgd``, and in its ``privacy:``
block the privacy unit and the accountant's library at the version that trained the model. A B1 release, a
DP-SGD model, a table model and the PAC model (which is not DP) each get what they are, every current field kept."""

import copy
import json
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from zoo.privacy import PrivacyBarrier, PrivacyLedger
from zoo.privacy.ledger import LedgerEntry
from zoo.privacy.mechanisms import DP_SGD_BARRIERS
from zoo.privacy.summary import privacy_metadata
from zoo.release.cards import hub_tags, model_card
from zoo.release.layout import CARD_NAME
from zoo.release.registry import checkpoints_dir

#: model id: (tags it must carry, tags it must not carry, privacy unit, accountant library); None: no such field
EXPECTED = {
    "dp-merf-mnist-eps1": (["differential-privacy", "differential_privacy"], ["dp-sgd"], "one image", "opacus 1.6.0"),
    "dp2-vae-mnist-eps1": (
        ["differential-privacy", "differential_privacy", "dp-sgd"],
        [],
        "one image",
        "opacus 1.6.0",
    ),
    "dp-nf-lifesci-eps1": (
        ["differential-privacy", "differential_privacy", "dp-sgd"],
        [],
        "one table row",
        "opacus 1.6.0",
    ),
    "p3dm-mnist": (["pac-privacy"], ["differential-privacy", "differential_privacy", "dp-sgd"], None, None),
}


def shipped_config(model_id: str) -> dict:
    return json.loads((checkpoints_dir() / model_id / "config.json").read_text())


def card_data(config: dict) -> dict:
    return model_card(config, config["model_id"]).data.to_dict()


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_the_card_carries_the_hub_spellings_beside_every_current_field(model_id):
    carried, absent, unit, library = EXPECTED[model_id]
    config = shipped_config(model_id)
    data = card_data(config)
    assert set(carried) <= set(data["tags"]) and not set(absent) & set(data["tags"])
    privacy = data["privacy"]
    assert privacy.get("privacy_unit") == unit and privacy.get("accountant_library") == library
    current = privacy_metadata(config)
    assert {key: privacy[key] for key in current} == current  # every current field kept, unchanged
    assert set(privacy) - set(current) == {k for k in ("privacy_unit", "accountant_library") if k in privacy}


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_the_shipped_card_was_regenerated_with_them(model_id):
    carried, absent, unit, library = EXPECTED[model_id]
    data = ModelCard.load(Path(checkpoints_dir() / model_id / CARD_NAME)).data.to_dict()
    assert set(carried) <= set(data["tags"]) and not set(absent) & set(data["tags"])
    assert data["privacy"].get("privacy_unit") == unit and data["privacy"].get("accountant_library") == library


def test_the_fields_sit_beside_those_they_restate():
    keys = list(card_data(shipped_config("dp-merf-mnist-eps1"))["privacy"])
    assert keys[keys.index("neighbouring_relation") + 1] == "privacy_unit"
    assert keys[keys.index("accountant_description") + 1] == "accountant_library"


def test_the_library_version_is_the_one_the_ledger_recorded_not_the_installed_one():
    config = copy.deepcopy(shipped_config("dp-merf-mnist-eps1"))
    (entry,) = config["privacy_ledger"]["entries"]
    entry["library_versions"]["opacus"] = "1.4.1"
    assert card_data(config)["privacy"]["accountant_library"] == "opacus 1.4.1"
    entry["accountant"] = "pld"  # Google's dp-accounting; this old entry recorded no version of it
    assert card_data(config)["privacy"]["accountant_library"] == "dp-accounting (version not recorded)"
    entry["library_versions"]["dp-accounting"] = "0.4.4"
    assert card_data(config)["privacy"]["accountant_library"] == "dp-accounting 0.4.4"


def test_new_entries_record_the_version_of_every_accountant_library():
    versions = entry("B4").library_versions
    assert versions["opacus"] != "not installed" and versions["dp-accounting"] != "not installed"


#: the mechanism each barrier's entries name
MECHANISMS = {
    "B1": "gaussian",
    "B1'": "subsampled_kernel_embedding",
    "B2": "subsampled_gaussian",
    "B3": "sanitized_output_gradient",
    "B4": "subsampled_gaussian",
}


def entry(barrier: str) -> LedgerEntry:
    return LedgerEntry(
        mechanism=MECHANISMS[barrier],
        barrier=barrier,
        dataset_id="mnist/train",
        dataset_size=60000,
        noise_multiplier=1.0,
        clip_norm=1.0,
        sample_rate=0.01,
        delta=1e-5,
        accountant="prv",
        steps=100,
    )


def test_only_the_dp_sgd_barriers_are_tagged_dp_sgd():
    """B2 and B4 train with DP-SGD; GS-WGAN's B3 sanitises the gradients into a generated batch, B1 and B1′
    release a noised statistic: neither is DP-SGD."""
    assert DP_SGD_BARRIERS == {PrivacyBarrier.PRIVATE_CRITIC, PrivacyBarrier.PRIVATE_MODEL}
    dp = {"notion": "(epsilon, delta)-differential privacy"}
    for barrier, tags in {"B2": ["dp-sgd"], "B4": ["dp-sgd"], "B3": [], "B1": [], "B1'": []}.items():
        assert hub_tags(dp, PrivacyLedger(entries=[entry(barrier)])) == ["differential_privacy", *tags]
