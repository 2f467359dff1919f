"""Suite-wide guards: no network beyond loopback, no real model provider, offline litellm."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

_real_connect = socket.socket.connect


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return True  # AF_UNIX paths


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise RuntimeError(
            f"tests may not reach the network: connect to {address!r} refused "
            "(use the scripted model on loopback)"
        )
    _real_connect(self, address)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield
