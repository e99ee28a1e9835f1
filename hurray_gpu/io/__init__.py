"""Hurray containers: raw tensor streams and ``.hrry`` files (docs/format.md)."""

from __future__ import annotations

from hurray_gpu.io.crc32c import crc32c
from hurray_gpu.io.file_format import FileHeader, IndexEntry, Trailer
from hurray_gpu.io.file_reader import HrryFile, load, open_file
from hurray_gpu.io.file_writer import FileWriter, save
from hurray_gpu.io.kv import UInt64, decode_kv, encode_kv
from hurray_gpu.io.stream import StreamReader, StreamWriter

__all__ = [
    "FileHeader", "FileWriter", "HrryFile", "IndexEntry", "StreamReader", "StreamWriter",
    "Trailer", "UInt64", "crc32c", "decode_kv", "encode_kv", "load", "open_file", "save",
]
