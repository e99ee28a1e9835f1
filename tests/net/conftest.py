"""Fixtures of the network interchange tests: servers on TCP, Unix and TLS, and a raw peer
that writes hand-made (hostile) frames."""

from __future__ import annotations

import datetime
import socket
import ssl
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import hurray_gpu as hg
from hurray_gpu.format import protocol as P
from hurray_gpu.net import Server
from hurray_gpu.net.transport import parse_url
from tests._support import skip_or_fail

TRANSPORTS = ("tcp", "unix", "tls")


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1/localhost and its key, via `cryptography` or `openssl`."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        try:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                            "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", str(key), "-out", str(cert)], check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            skip_or_fail(f"neither cryptography nor openssl can make a certificate ({exc})",
                         "pip install cryptography")
        return cert, key
    import ipaddress

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    built = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
             .public_key(private.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.SubjectAlternativeName(
                 [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
             .sign(private, hashes.SHA256()))
    cert.write_bytes(built.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, key


@pytest.fixture(scope="session")
def tls_contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext,
                                                                     ssl.SSLContext]:
    """(server context, client context trusting only the self-signed certificate)."""
    cert, key = _self_signed(tmp_path_factory.mktemp("tls"))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(cert)
    return server, client


Start = Callable[..., tuple[Server, dict[str, Any]]]


@pytest.fixture
def start(tmp_path: Path, tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext]
          ) -> Iterator[Start]:
    """``start(source, transport="tcp", **serve_kwargs) -> (server, connect_kwargs)``; every
    server started is closed at the end of the test."""
    servers: list[Server] = []

    def run(source: Any, transport: str = "tcp", **kwargs: Any
            ) -> tuple[Server, dict[str, Any]]:
        extra: dict[str, Any] = {}
        if transport == "unix":
            kwargs["unix"] = str(tmp_path / f"s{len(servers)}.sock")
        elif transport == "tls":
            kwargs["ssl_context"], extra["ssl_context"] = tls_contexts
        server = hg.serve(source, port=0, background=True, **kwargs)
        servers.append(server)
        return server, extra

    yield run
    for server in servers:
        server.close()


class RawPeer:
    """A client that writes raw bytes: the hostile side of the tests."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        scheme, address = parse_url(url)
        assert scheme != "hurrays"
        family = socket.AF_UNIX if scheme == "hurray+unix" else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(address)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_msg(self, msg: Any, stream: int) -> None:
        self.send(P.encode(msg, stream))

    def hello(self, max_message_size: int = P.DEFAULT_MAX_MESSAGE) -> P.Hello:
        self.send_msg(P.ClientHello(1, max_message_size, 0, (), (0,), ()), 1)
        header, msg = self.recv()
        assert header.stream_id == 1 and isinstance(msg, P.ServerHello), msg
        return msg

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return out

    def recv(self) -> tuple[P.Header, Any]:
        """The next message (TENSOR_DATA decoded too)."""
        header = P.decode_header(self._exact(P.HEADER_SIZE), 1 << 30)
        return header, P.decode(header, self._exact(header.length))

    def recv_error(self) -> tuple[int, int]:
        """``(stream, code)`` of the next message, which must be an ERROR."""
        header, msg = self.recv()
        assert isinstance(msg, P.ErrorMsg), msg
        return header.stream_id, msg.code

    def closed_by_peer(self) -> bool:
        """True when the server closed the connection (EOF) within the socket timeout."""
        try:
            return self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True

    def closed_by_peer_now(self) -> bool:
        """True when the server has already closed the connection (no waiting)."""
        timeout = self.sock.gettimeout()
        self.sock.setblocking(False)
        try:
            return self.sock.recv(1 << 16) == b""
        except BlockingIOError:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.sock.settimeout(timeout)

    def close(self) -> None:
        self.sock.close()


def header(mtype: int, stream: int, length: int) -> bytes:
    """A raw 12-byte message header (not checked by the codec)."""
    return struct.pack("<III", mtype, stream, length)


def data_frame(stream: int, offset: int, data: bytes) -> bytes:
    """A raw TENSOR_DATA frame."""
    return header(P.MessageType.TENSOR_DATA, stream, 8 + len(data)) + struct.pack("<Q", offset) \
        + data


def as_discrete(monkeypatch: pytest.MonkeyPatch, dev: Any) -> None:
    """Give lavapipe (which maps every buffer) a discrete GPU's device memory, which the host
    cannot address: only its pinned memory keeps a host view, so a device get goes through
    the pinned staging ring."""
    cls = type(dev.allocator)
    view = cls.host_view
    monkeypatch.setattr(cls, "host_view", lambda self, a: view(self, a) if a.memory_class
                        == hg.MemoryClass.HOST_PINNED else None)
