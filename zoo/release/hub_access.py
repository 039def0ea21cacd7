"""Whether publishing can happen at all (online, with a token), answered from huggingface_hub's settings alone: no
torch and no model, so that ``dpzoo push`` refuses at once."""

from __future__ import annotations

from huggingface_hub import constants, get_token

from zoo.release.layout import CheckpointError


class HubUnavailableError(CheckpointError):
    """Publishing cannot happen: offline, no token, or the Hub unreachable or refusing the upload."""


def publishing_token(token: str | None) -> str:
    """The token to publish with, checked before any work is done: offline or without a token the
    upload can only fail, after saving, with huggingface_hub's own error."""
    if constants.HF_HUB_OFFLINE:
        raise HubUnavailableError("publishing to the Hugging Face Hub needs the network, but HF_HUB_OFFLINE is set")
    token = token or get_token()
    if not token:
        raise HubUnavailableError(
            "no Hugging Face token: pass {token}, set HF_TOKEN or run `hf auth login`", token="token=..."
        )
    return token
