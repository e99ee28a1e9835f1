"""``hurray-gpu serve`` and ``hurray-gpu get``: the network interchange protocol from the shell
(docs/interchange.md)."""

from __future__ import annotations

import signal
import ssl
from pathlib import Path
from typing import Any

from hurray_gpu.cli.common import show
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.io import save
from hurray_gpu.net import connect, serve
from hurray_gpu.net.sources import MAX_OPEN_FILES
from hurray_gpu.net.transport import DEFAULT_PORT

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    """Register ``serve`` and ``get``."""
    p = sub.add_parser("serve", help="serve .hrry files over the network protocol",
                       description="Serve tensors by key: a .hrry file's tensor names, or "
                       "FILE.hrry/NAME for a directory. Runs until Ctrl-C or SIGTERM.")
    p.add_argument("source", nargs="+", help=".hrry files and/or directories of them")
    p.add_argument("--unix", default=None, help="listen on this Unix-domain socket path")
    p.add_argument("--host", default="127.0.0.1", help="TCP address (default loopback only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port ({DEFAULT_PORT})")
    p.add_argument("--tls-cert", default=None, help="PEM certificate: serve TLS (hurrays://)")
    p.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    p.add_argument("--writable", action="store_true",
                   help="let PUTs of <file>.hrry/<name> write files in served directories")
    p.add_argument("--sendfile", action="store_true",
                   help="send files' large data ranges with sendfile(2), not from their map")
    p.add_argument("--max-open-files", type=int, default=MAX_OPEN_FILES,
                   help=f"files of a directory kept open at once ({MAX_OPEN_FILES})")
    p.add_argument("--transcode-limit", type=int, default=1 << 30,
                   help="largest transcoded tensor in bytes (0: no transcoding)")
    p.set_defaults(run=run_serve)
    g = sub.add_parser("get", help="fetch one tensor from a server into a .hrry file",
                       description="Fetch KEY from URL (hurray://HOST:PORT, hurrays://... or "
                       "hurray+unix:///PATH) and write it to --out.")
    g.add_argument("url")
    g.add_argument("key")
    g.add_argument("--out", required=True, help="the .hrry file to write (atomically)")
    g.add_argument("--device", default=None, help="receive onto this device first")
    g.add_argument("--layout", action="append", default=None,
                   help="an acceptable layout (repeatable, in preference order)")
    g.add_argument("--dtype", default=None, help="ask for dense values of this type")
    g.add_argument("--allow-transcode", action="store_true",
                   help="let the server convert the layout or type")
    g.add_argument("--tls-ca", default=None, help="PEM CA file to trust for hurrays://")
    g.add_argument("--force", action="store_true", help="replace --out when it exists")
    g.set_defaults(run=run_get)


def _stop(*_: object) -> None:
    raise KeyboardInterrupt


def run_serve(args: Any) -> int:
    """Serve until interrupted."""
    context = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise HurrayGPUError("--tls-cert and --tls-key go together",
                                 fix="pass both, or neither for plain TCP.")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
    source = args.source if len(args.source) > 1 else args.source[0]
    server = serve(source, host=args.host, port=args.port, unix=args.unix,
                   ssl_context=context, transcode_limit=args.transcode_limit,
                   writable=args.writable, sendfile=args.sendfile,
                   max_open_files=args.max_open_files, background=True)
    signal.signal(signal.SIGTERM, _stop)
    print(f"serving at {server.url}", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def run_get(args: Any) -> int:
    """Fetch one tensor and save it."""
    out = Path(args.out)
    if out.suffix != ".hrry":
        raise HurrayGPUError(f"cannot write {args.out!r}", fix="end --out with .hrry.")
    if out.exists() and not args.force:
        raise HurrayGPUError(f"{out} exists", fix="pass --force to replace it.")
    context = ssl.create_default_context(cafile=args.tls_ca) if args.tls_ca else None
    with connect(args.url, ssl_context=context) as client:
        t = client.get(args.key, device=args.device, layouts=args.layout, dtype=args.dtype,
                       allow_transcode=args.allow_transcode)
    save(out, {args.key: t})
    show(f"{args.key}: {t!r} -> {out}")
    return 0
