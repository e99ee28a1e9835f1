"""Hurray containers: raw tensor streams and ``.hrry`` files (docs/format.md)."""

from __future__ import annotations

from .crc32c import crc32c
from .file_format import FileHeader, IndexEntry, Trailer
from .file_reader import HrryFile, load, open_file
from .file_writer import FileWriter, save
from .kv import UInt64, decode_kv, encode_kv
from .stream import StreamReader, StreamWriter

__all__ = [
    "FileHeader", "FileWriter", "HrryFile", "IndexEntry", "StreamReader", "StreamWriter",
    "Trailer", "UInt64", "crc32c", "decode_kv", "encode_kv", "load", "open_file", "save",
]
