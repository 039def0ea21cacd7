"""Whether publishing can happen at all (online, with a token), answered from huggingface_hub's settings alone: no
torch and no model, so that ``dpzoo push`` refuses at once."""

from __future__ import annotations

import importlib

from huggingface_hub import HfApi, constants, get_token
from huggingface_hub.errors import HfHubHTTPError

from zoo.release.layout import CheckpointError

#: the transport errors of the HTTP client huggingface_hub uses: httpx2 (2.x), httpx (1.x) or requests (0.x)
_CLIENT_NETWORK_ERRORS = (
    ("httpx2", "TransportError"),
    ("httpx", "TransportError"),
    ("requests", "ConnectionError"),
    ("requests", "Timeout"),
)


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


def check_reachable(token: str) -> None:
    """The Hub answers and takes ``token`` (one ``whoami`` call, no torch and no model): ``dpzoo push`` without the
    network, or with a token the Hub refuses, ends here rather than after the model is loaded and checked."""
    try:
        HfApi(token=token).whoami()
    except HfHubHTTPError as error:
        raise HubUnavailableError(f"the Hugging Face Hub refused the token: {one_line(error)}") from None
    except network_errors() as error:
        raise HubUnavailableError(f"cannot reach the Hugging Face Hub: {one_line(error)}") from None


def network_errors() -> tuple[type[BaseException], ...]:
    """Connection failures and timeouts, whichever HTTP client this huggingface_hub uses."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]  # OfflineModeIsEnabled is a ConnectionError
    for module, name in _CLIENT_NETWORK_ERRORS:
        try:
            errors.append(getattr(importlib.import_module(module), name))
        except ImportError:
            continue
    return tuple(errors)


def one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
