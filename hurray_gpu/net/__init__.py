"""The Hurray network interchange protocol over sockets: ``serve`` and ``connect``
(docs/interchange.md). The byte codec is :mod:`hurray_gpu.format.protocol`."""

from __future__ import annotations

from hurray_gpu.net.client import Client, connect
from hurray_gpu.net.server import Server, serve
from hurray_gpu.net.transport import TransportError

__all__ = ["Client", "Server", "TransportError", "connect", "serve"]
