"""What a tensor server serves (docs/interchange.md, Keys): ``.hrry`` files (a file's tensors
read once and kept while the file is unchanged on disk), directories of them, and a
PagedKVCache; dicts of Tensors are served as they are. Each source looks a key up and stores
a PUT; a key no source can hold, or none has, is refused with ERROR on its stream.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format import protocol as P
from hurray_gpu.format.descriptor.model import TensorDescriptor
from hurray_gpu.io import HrryFile, open_file, save
from hurray_gpu.io.file_format import DEFAULT_ALIGNMENT
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.net.framing import FileData
from hurray_gpu.net.transport import StreamError
from hurray_gpu.tensor import Tensor

# Implementation-defined error code (the spec leaves 0xF0-0xFE to implementations).
REQUEST_FAILED = 0xF0  # the library raised while producing or storing the tensor
_MAX_KEY = 4096
# Files a served directory keeps open at once (each holds its descriptor and its map; with
# sendfile a second descriptor): the least recently used one is let go beyond this, so a
# client walking a large directory cannot use up the server's descriptors.
MAX_OPEN_FILES = 64
_KV_KEY = re.compile(r"kv/([\w.-]+)(?:/(\d+)(?:/(key|value))?)?")


class Refused(StreamError):
    """A request the server answers with ERROR on its stream; the connection keeps serving."""

    def __init__(self, code: int, message: str, *, fix: str) -> None:
        super().__init__(message, code=code, fix=fix)


def unknown_key(key: str) -> Refused:
    return Refused(P.ErrorCode.UNKNOWN_TENSOR, f"no tensor has the key {key!r}",
                   fix="list the server's keys (docs/interchange.md, Keys) and check the spelling.")


# -- sources ---------------------------------------------------------------------------------
_Stamp = tuple[int, int, int, int]  # a file's (st_dev, st_ino, st_size, st_mtime_ns)
# An open file as it was found: its stamp, the file, the tensors read from it, its bytes for
# sendfile (None when the server does not use sendfile: no duplicate descriptor).
_Opened = tuple[_Stamp, HrryFile, dict[str, Tensor], FileData | None]


class FileSource:
    """One ``.hrry`` file, its tensor names the keys; the base of :class:`DirectorySource`.

    A file is stat'ed on every lookup and reopened when its (device, inode, size, mtime)
    differ from those it was opened with: a file replaced on disk (the server's own PUT
    rewrite included) or rewritten in place is seen by the next lookup, and its old tensors
    are dropped with its old map. While the file is unchanged, a key returns the very same
    Tensor (zero-copy views of the map), so a prepared reply holds (see _Reply) and a repeated
    get does not decode the descriptor again.

    At most ``max_open`` files are kept open, the least recently used let go beyond that (not
    closed under a get in flight: its map goes with the last view of it, see _Reply); a
    file deleted from disk is let go at its next lookup. ``sendfile``: keep each file's
    :class:`FileData` for the server's ``sendfile`` path.
    """

    def __init__(self, path: str, *, sendfile: bool = False,
                 max_open: int = MAX_OPEN_FILES) -> None:
        if not isinstance(max_open, int) or max_open < 1:
            raise UnsupportedOpError(f"max_open_files must be a positive int, not {max_open!r}",
                                     fix=f"pass at least 1 (default {MAX_OPEN_FILES}).")
        self.path, self.sendfile, self.max_open = path, sendfile, max_open
        self._open: OrderedDict[str, _Opened] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()  # HrryFile builds its order tables lazily, unlocked

    def _split(self, key: str) -> tuple[str, str] | None:
        """(file path, tensor name) of a key."""
        return self.path, key

    def lookup(self, key: str) -> Tensor | None:
        found = self._split(key)
        if found is None:
            return None
        opened = self.opened(found[0])  # (one stat; no lock while the file is unchanged)
        if opened is None:
            return None
        t = opened[2].get(found[1])  # (read before: no lock needed to find it again)
        if t is not None or found[1] not in opened[1]:
            return t
        with self._lock:
            t = opened[2].get(found[1])
            if t is None:
                t = opened[2][found[1]] = opened[1].read(found[1])
            return t

    def held(self, key: str) -> Tensor | None:
        """What the last lookup of ``key`` returned, if it is still held (no stat)."""
        found = self._split(key)
        opened = None if found is None else self._open.get(found[0])
        return None if found is None or opened is None else opened[2].get(found[1])

    def opened(self, path: str) -> _Opened | None:
        """(stamp, open file, tensors read, its FileData) of the file at ``path`` as it is on
        disk now; None when there is no such regular file."""
        try:
            info = os.stat(path)
        except OSError:
            info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            if path in self._open:  # deleted or replaced by a non-file: let it go
                with self._lock:
                    self._open.pop(path, None)
            return None
        stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        known = self._open.get(path)
        if known is not None and known[0] == stamp:  # unchanged (the common case)
            if len(self._open) > 1:  # the order matters only among several files
                with self._lock:
                    if path in self._open:
                        self._open.move_to_end(path)
            return known
        with self._lock:
            known = self._open.get(path)
            if known is None or known[0] != stamp:
                hrry = open_file(path)
                known = self._open[path] = (stamp, hrry, {}, FileData(hrry.fileno())
                                            if self.sendfile else None)
                self._open.move_to_end(path)
                while len(self._open) > self.max_open:
                    self._open.popitem(last=False)  # the least recently used
            return known

    def files_of(self, key: str, t: Tensor) -> list[tuple[FileData, int] | None] | None:
        """Where each buffer of ``t`` begins in its file (for ``sendfile``, see FileData), when
        ``t`` is the tensor ``key`` names here, read as views of the file's map; else None."""
        try:
            found = self._split(key)
        except Refused:  # not a key of this source (another source named ``t``)
            return None
        opened = None if found is None else self._open.get(found[0])
        if found is None or opened is None or opened[3] is None or \
                opened[2].get(found[1]) is not t or t.members:
            return None
        spans: list[tuple[FileData, int] | None] = []
        for b in t.buffers:
            view = b.device.allocator.host_array(b.allocation)
            at = None if view is None else opened[1].file_offset(view)
            spans.append(None if at is None else (opened[3], at))
        return spans

    def close(self) -> None:
        with self._lock:
            for _, hrry, _, _ in self._open.values():
                hrry.close()
            self._open.clear()


class DirectorySource(FileSource):
    """``.hrry`` files under a root, keyed ``<relative file path>/<tensor name>``; with
    ``writable``, a PUT of such a key writes the tensor into that file (see :meth:`put`)."""

    def __init__(self, root: str, writable: bool = False, *, sendfile: bool = False,
                 max_open: int = MAX_OPEN_FILES) -> None:
        super().__init__(os.path.realpath(root), sendfile=sendfile, max_open=max_open)
        self.root, self.writable = self.path, writable
        self._writing = threading.Lock()  # one rewrite at a time; readers never wait on it

    def _split(self, key: str) -> tuple[str, str] | None:
        """(file path inside the root, tensor name) of a key with a ``.hrry`` component."""
        parts = key.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in ("", ".", "..") or "\\" in part:
                raise Refused(P.ErrorCode.UNKNOWN_TENSOR,
                              f"the key {key!r} has an empty, '.' or '..' path component",
                              fix="name files by their plain relative path under the directory.")
            if part.endswith(".hrry"):
                path = os.path.realpath(os.path.join(self.root, *parts[:i + 1]))
                if os.path.commonpath([path, self.root]) != self.root:
                    raise Refused(P.ErrorCode.UNKNOWN_TENSOR,
                                  f"the key {key!r} leads outside the served directory",
                                  fix="request files inside the served directory only.")
                return path, "/".join(parts[i + 1:])
        return None

    def put_key(self, key: str) -> bool:
        """Whether a PUT of ``key`` is this source's to store (or refuse)."""
        try:
            return self._split(key) is not None
        except Refused:
            return True

    def put(self, key: str, t: Tensor) -> bool:
        """Write a pushed ``<file>.hrry/<name>`` tensor into that file; False for other keys.

        The file is created (with its folders under the root), or rewritten with its other
        tensors, its metadata and its alignment kept and ``name`` replaced, then renamed over
        the old one: a reader never sees a partial file, and gets in flight keep the old map.
        """
        found = self._split(key)
        if found is None:
            return False
        if not self.writable:
            raise Refused(REQUEST_FAILED, f"the served directory {self.root} is read-only",
                          fix="serve it with writable=True (hurray-gpu serve --writable), or "
                              "PUT a key without a .hrry path component (kept in memory).")
        path, name = found
        with self._writing:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                opened = self.opened(path)
                tensors: dict[str, Any] = {}
                if opened is not None:
                    with self._lock:  # the lazy order tables again; one open file for all
                        tensors = {n: opened[2][n] if n in opened[2] else opened[1].read(n)
                                   for n in opened[1].top_level_names() if n != name}
                tensors[name] = t
                old = None if opened is None else opened[1]
                save(path, tensors, None if old is None else old.metadata,
                     alignment=DEFAULT_ALIGNMENT if old is None else old.header.alignment)
            except OSError as exc:
                raise Refused(REQUEST_FAILED, f"cannot write {key!r}: {exc}",
                              fix="check the served directory's free space and permissions."
                              ) from exc
        return True


class KVSource:
    """A PagedKVCache: ``kv/<seq>/<layer>/key|value`` is [tokens, heads, head_dim],
    ``kv/<seq>/<layer>`` stacks key and value ([2, tokens, ...]), ``kv/<seq>`` every layer
    ([layers, 2, tokens, ...]); all dense row-major in the cache's dtype (a gather).

    ``<seq>`` is a live sequence id, or a name a PUT gave a sequence: a PUT of
    ``kv/<name>`` or ``kv/<name>/<layer>`` appends its tokens to that sequence, creating it
    (``names[name]`` is its id) on the first PUT of a name that is not a number.
    """

    def __init__(self, cache: PagedKVCache) -> None:
        self.cache = cache
        self.names: dict[str, int] = {}
        self._lock = threading.RLock()

    def _seq(self, name: str) -> int | None:
        if name in self.names:
            return self.names[name]
        return int(name) if name.isdigit() and int(name) in self.cache.seq_ids else None

    def lookup(self, key: str) -> Tensor | None:
        found = _KV_KEY.fullmatch(key)
        seq = None if found is None else self._seq(found.group(1))
        if found is None or seq is None:
            return None
        if found.group(2) is None:
            lens = {self.cache.seq_len(seq, layer) for layer in range(self.cache.num_layers)}
            if len(lens) > 1:
                raise Refused(REQUEST_FAILED, f"sequence {seq}'s layers hold different token "
                              f"counts {sorted(lens)}", fix=f"request kv/{seq}/<layer> one at a "
                              "time until every layer is appended.")
            return Tensor.from_numpy(np.stack([self._layer(seq, layer) for layer in
                                               range(self.cache.num_layers)]))
        layer = int(found.group(2))
        if layer >= self.cache.num_layers:
            return None
        both = self._layer(seq, layer)
        if found.group(3) is None:
            return Tensor.from_numpy(both)
        return Tensor.from_numpy(both[0 if found.group(3) == "key" else 1])

    def _layer(self, seq: int, layer: int) -> np.ndarray:
        k, v, _ = self.cache.gather([seq], layer)
        return np.stack([k.to("cpu").numpy(), v.to("cpu").numpy()])

    def put(self, key: str, t: Tensor) -> bool:
        """Append a pushed ``kv/...`` tensor's tokens; False when ``key`` is not a KV key."""
        found = _KV_KEY.fullmatch(key)
        if found is None:
            return False
        cache, name = self.cache, found.group(1)
        layers, lead = self._layers(found)
        shape = t.shape
        if (found.group(3) is not None or layers[-1] >= cache.num_layers
                or t.dtype != cache.dtype or t.layout_name != "row_major" or t.quantization
                or shape[:len(lead)] != lead or tuple(shape[len(lead) + 1:])
                != (cache.num_kv_heads, cache.head_dim)):
            raise Refused(REQUEST_FAILED, f"a PUT of {key!r} must be a row-major "
                          f"{cache.dtype.name} tensor of shape {(*lead, 'tokens')} + "
                          f"({cache.num_kv_heads}, {cache.head_dim}); got {t!r}",
                          fix="PUT kv/<seq> as [layers, 2, tokens, heads, head_dim] or "
                          "kv/<seq>/<layer> as [2, tokens, heads, head_dim].")
        rows = t.numpy().reshape(len(layers), 2, *shape[len(lead):])
        with self._lock:
            seq, created = self._sequence(name, key)
            try:
                for i, layer in enumerate(layers):
                    cache.append_prefill(seq, layer, rows[i, 0], rows[i, 1])
            except BaseException:
                if created:
                    cache.free(seq)
                raise
            self.names[name] = seq
        return True

    def put_key(self, key: str) -> bool:
        """Whether a PUT of ``key`` is this source's to store (or refuse)."""
        return _KV_KEY.fullmatch(key) is not None

    def _layers(self, found: re.Match[str]) -> tuple[list[int], tuple[int, ...]]:
        """The layers a PUT's key names and the dimensions before its tokens."""
        if found.group(2) is not None:
            return [int(found.group(2))], (2,)
        return list(range(self.cache.num_layers)), (self.cache.num_layers, 2)

    def _sequence(self, name: str, key: str) -> tuple[int, bool]:
        """(id, created) of the sequence a PUT of ``key`` appends to (the caller holds the
        lock): a new one for a new name, UNKNOWN_TENSOR for an unknown numeric id."""
        seq = self._seq(name)
        if seq is not None:
            return seq, False
        if name.isdigit():
            raise unknown_key(key)
        return self.cache.add_sequence(), True

    def rows_for(self, key: str, desc: Any) -> _KVRows | None:
        """Where a PUT of ``key`` declaring ``desc`` can be received straight into the
        cache's pages (a host-memory cache without kv_dtype, a dense row-major tensor of the
        cache's dtype and geometry): the sequence's reserved rows (see
        :meth:`PagedKVCache.write_rows`), committed once every byte arrived. None where the
        PUT takes :meth:`put` (which refuses what does not fit, saying why)."""
        found = _KV_KEY.fullmatch(key)
        cache = self.cache
        if found is None or found.group(3) is not None or not cache.row_views \
                or desc.layout_tag != 0x01 or desc.quantization is not None or desc.byte_offset \
                or desc.dtype.tag != cache.dtype.tag or len(desc.buffers) != 1:
            return None
        layers, lead = self._layers(found)
        shape = tuple(desc.shape)
        if layers[-1] >= cache.num_layers or shape[:len(lead)] != lead or \
                shape[len(lead) + 1:] != (cache.num_kv_heads, cache.head_dim) or \
                not isinstance(shape[len(lead)], int):
            return None
        tokens = int(shape[len(lead)])
        if int(desc.buffers[0].byte_size) != len(layers) * 2 * tokens * cache.row_bytes:
            return None
        name = found.group(1)
        with self._lock:
            seq, created = self._sequence(name, key)
            self.names[name] = seq  # (a GET sees its committed rows, a PUT of it adds its own)
            opened: list[Any] = []
            try:
                opened += [cache.write_rows(seq, layer, tokens) for layer in layers]
            except BaseException:
                for rows in opened:
                    rows.release()
                if created:
                    self._forget(name, seq)
                raise
        return _KVRows(self, name, seq if created else None, opened)

    def rows_out(self, key: str) -> _KVOut | None:
        """What a GET of ``key`` sends straight from the cache's pages (a host-memory cache
        without kv_dtype: the rows' views, see :meth:`PagedKVCache.read_rows`, and the dense
        descriptor a gather's result would have), released once sent. None where the GET
        takes :meth:`lookup` (which answers or refuses it, saying why)."""
        found = _KV_KEY.fullmatch(key)
        cache = self.cache
        seq = None if found is None else self._seq(found.group(1))
        if found is None or seq is None or not cache.row_views:
            return None
        layers, lead = self._layers(found)
        if layers[-1] >= cache.num_layers:
            return None
        opened: list[Any] = []
        try:
            opened += [cache.read_rows(seq, layer) for layer in layers]
        except UnsupportedOpError:  # freed or swapped out meanwhile
            for rows in opened:
                rows.release()
            return None
        role = found.group(3)
        if len({r.tokens for r in opened}) != 1:
            for rows in opened:
                rows.release()
            return None
        views = [v for r in opened for v in (r.views if role is None else r.views[
            :len(r.views) // 2] if role == "key" else r.views[len(r.views) // 2:])]
        shape = (opened[0].tokens, cache.num_kv_heads, cache.head_dim)
        desc = TensorDescriptor.dense(cache.dtype, shape if role else (*lead, *shape))
        return _KVOut(desc, views, opened)

    def _forget(self, name: str, seq: int) -> None:
        """Free a sequence a failed PUT created, unless another PUT of it is open or stored
        rows in it meanwhile."""
        with self._lock, contextlib.suppress(UnsupportedOpError):
            if self.cache.seq_len(seq):
                return
            self.cache.free(seq)
            if self.names.get(name) == seq:
                del self.names[name]

    def close(self) -> None:
        """The cache belongs to the caller."""


class _KVRows:
    """A PUT's reserved rows in a PagedKVCache, one RowViews per layer (their views in the
    order of the PUT's bytes); released rows of a sequence the PUT created free it."""

    def __init__(self, source: KVSource, name: str, created: int | None,
                 rows: list[Any]) -> None:
        self.source, self.name, self.created, self.rows = source, name, created, rows
        self.views = [v for r in rows for v in r.views]

    def commit(self) -> None:
        for r in self.rows:
            r.commit()

    def release(self) -> None:
        for r in self.rows:
            r.release()
        if self.created is not None:
            self.source._forget(self.name, self.created)


class _KVOut:
    """A GET's rows in a PagedKVCache: the descriptor to send, the views of its bytes and the
    row transfers to release once they are sent."""

    def __init__(self, desc: Any, views: list[memoryview], rows: list[Any]) -> None:
        self.desc, self.views, self.rows = desc, views, rows
        self.nbytes = sum(len(v) for v in views)

    def release(self) -> None:
        for r in self.rows:
            r.release()


def open_source(item: Any, writable: bool, sendfile: bool = False,
                max_open: int = MAX_OPEN_FILES) -> Any:
    if isinstance(item, dict):
        return item
    if isinstance(item, PagedKVCache):
        return KVSource(item)
    if isinstance(item, str | os.PathLike):
        path = os.fspath(item)
        if os.path.isdir(path):
            return DirectorySource(path, writable, sendfile=sendfile, max_open=max_open)
        os.stat(path)  # a missing file fails serve() here (OSError), a malformed one below
        source = FileSource(path, sendfile=sendfile, max_open=max_open)
        if source.opened(path) is None:
            raise UnsupportedOpError(f"{path} is not a regular file",
                                     fix="serve a .hrry file, or a directory of them.")
        return source
    raise UnsupportedOpError(f"cannot serve a {type(item).__name__}",
                             fix="pass a .hrry path, a directory, a dict of Tensors, a "
                                 "PagedKVCache, or a list of those.")


def check_key(key: str) -> None:
    """Reject a key no source can hold (empty, too long, or with a NUL)."""
    if not key or len(key) > _MAX_KEY or "\0" in key:
        raise Refused(P.ErrorCode.UNKNOWN_TENSOR, f"{key[:64]!r} is not a valid tensor key",
                      fix=f"send a non-empty key of at most {_MAX_KEY} characters without NUL.")


__all__ = ["MAX_OPEN_FILES", "REQUEST_FAILED", "DirectorySource", "FileSource", "KVSource", "Refused", "check_key", "open_source",
           "unknown_key"]
