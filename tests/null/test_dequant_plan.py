"""Dequant planning: hostile descriptors and buffers raise typed errors before any launch."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import BufferHandle
from hurray_gpu.ops import dequantize, plan_dequantize, plan_unpack, unpack
from hurray_gpu.ops.quantize import quantized_tensor, random_quantized
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor
from tests._support import trusted_tensor


@pytest.fixture
def no_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a kernel was launched")

    monkeypatch.setattr(Device, "run", forbidden)


def _block_tensor(**kw: object) -> Tensor:
    rng = np.random.default_rng(5)
    return random_quantized(rng, "per_block", "int4", (4, 6), axis=1, block_size=4, **kw)


def _replace_q(t: Tensor, **changes: object) -> object:
    return dataclasses.replace(t.descriptor,
                               quantization=dataclasses.replace(t.quantization, **changes))


@pytest.mark.parametrize("changes", [{"axis": 2}, {"axis": 7}, {"block_size": 3},
                                     {"block_size": 8}, {"scale_buffer_index": 0},
                                     {"scale_buffer_index": 5}, {"scale_type_tag": 0x04}])
def test_bad_quantization_fields_raise_format_error(changes: dict, no_launch: None) -> None:
    with pytest.raises(HurrayFormatError):
        plan_dequantize(_replace_q(_block_tensor(), **changes))


@pytest.mark.parametrize("index", [1, 2])
def test_wrong_parameter_buffer_sizes_raise(index: int, no_launch: None) -> None:
    t = _block_tensor()
    handles = list(t.descriptor.buffers)
    handles[index] = BufferHandle(handles[index].byte_size + 4, 64)
    with pytest.raises(HurrayFormatError, match="byte_size"):
        plan_dequantize(dataclasses.replace(t.descriptor, buffers=tuple(handles)))


def test_short_data_buffer_raises(no_launch: None) -> None:
    t = _block_tensor()
    handles = list(t.descriptor.buffers)
    handles[0] = BufferHandle(handles[0].byte_size - 1, 64)
    with pytest.raises(HurrayFormatError):
        plan_dequantize(dataclasses.replace(t.descriptor, buffers=tuple(handles)))


def test_runtime_buffer_smaller_than_handle_raises(no_launch: None) -> None:
    t = _block_tensor()
    short = [np.asarray(t.buffers[0])[:-1], *t.buffers[1:]]
    hostile = trusted_tensor(t.descriptor, short)
    with pytest.raises(HurrayFormatError, match="buffers\\[0\\]"):
        dequantize(hostile, device="reference")


def test_mx_shape_not_multiple_of_block_raises(no_launch: None) -> None:
    rng = np.random.default_rng(1)
    t = random_quantized(rng, "mxfp", "float8_e4m3", (2, 32), axis=1, block_size=16)
    bad = dataclasses.replace(t.descriptor, shape=(2, 24))
    with pytest.raises(HurrayFormatError):
        plan_dequantize(bad)


def test_unsupported_requests(no_launch: None) -> None:
    t = _block_tensor()
    with pytest.raises(UnsupportedOpError):
        plan_dequantize(t.descriptor, "float64")
    f32 = Tensor.from_numpy(np.zeros((2, 2), np.float32))
    with pytest.raises(UnsupportedOpError):
        plan_dequantize(f32.descriptor)
    col = Tensor.from_numpy(np.zeros((2, 3), np.int8), order="F")
    with pytest.raises(UnsupportedOpError, match="row-major"):
        plan_dequantize(col.descriptor)
    with pytest.raises(UnsupportedOpError):
        plan_unpack(t.descriptor)
    i4 = Tensor.from_numpy(np.zeros(4, ml_dtypes.int4))
    with pytest.raises(UnsupportedOpError):
        plan_unpack(i4.descriptor, "uint8")
    assert plan_unpack(i4.descriptor).out_dtype == "int8"


@pytest.mark.parametrize("e8", [0x00, 0xFF])
def test_mx_reserved_scale_bytes_raise(e8: int) -> None:
    rng = np.random.default_rng(2)
    t = random_quantized(rng, "mxfp", "float4_e2m1", (3, 32), axis=1, block_size=16)
    scales = np.array(t.buffers[1])
    scales[4] = e8
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], scales])
    with pytest.raises(HurrayFormatError, match=f"MX scale byte 4 is 0x{e8:02X}") as info:
        dequantize(hostile, device="reference")
    assert info.value.field == "scales" and info.value.offset == 4


@pytest.mark.parametrize(("stype", "bad"), [("float32", np.float32(0)),
                                            ("float32", np.float32(np.inf)),
                                            ("float16", np.float16(np.nan)),
                                            ("bfloat16", ml_dtypes.bfloat16(-0.0))])
def test_invalid_block_scales_raise(stype: str, bad: object) -> None:
    t = _block_tensor(scale_type=stype)
    scales = np.array(t.buffers[1])
    width = np.asarray(bad).itemsize
    scales[3 * width:4 * width] = np.frombuffer(np.asarray(bad).tobytes(), np.uint8)
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], scales, t.buffers[2]])
    with pytest.raises(HurrayFormatError, match="scale entry 3") as info:
        dequantize(hostile, device="reference")
    assert info.value.offset == 3 * width


def test_zero_point_out_of_range_raises() -> None:
    t = quantized_tensor(np.zeros((2, 2), np.uint8).astype(ml_dtypes.uint4), "uint4",
                         "per_channel", axis=0, scales=np.ones(2, np.float32),
                         zero_points=np.array([0, 3], np.int32))
    zps = np.frombuffer(np.array([0, 16], np.int32).tobytes(), np.uint8)
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], t.buffers[1], zps])
    with pytest.raises(HurrayFormatError, match="zero point entry 1 = 16"):
        dequantize(hostile, device="reference")


def test_negative_nf4_absmax_raises() -> None:
    t = quantized_tensor(np.zeros(8, np.uint8).astype(ml_dtypes.uint4), "uint4", "nf4",
                         block_size=8, scales=np.ones(1, np.float32))
    hostile = trusted_tensor(t.descriptor, [t.buffers[0], np.frombuffer(
        np.float32(-1).tobytes(), np.uint8)])
    with pytest.raises(HurrayFormatError, match="NF4 absmax entry 0"):
        dequantize(hostile, device="reference")


def test_e8m0_data_with_reserved_codes_raises() -> None:
    t = Tensor.from_numpy(np.array([1.0, 2.0], ml_dtypes.float8_e8m0fnu))
    hostile = trusted_tensor(t.descriptor, [np.array([0x7F, 0xFF], np.uint8)])
    with pytest.raises(HurrayFormatError, match="float8_e8m0"):
        unpack(hostile, device="reference")
    assert unpack(t, device="reference").to("cpu").numpy().tolist() == [1.0, 2.0]


def test_empty_tensors_need_no_launch(no_launch: None) -> None:
    t = quantized_tensor(np.zeros((0, 4), np.int8), "int8", "per_block", axis=0,
                         block_size=2, scales=np.zeros(0, np.float32))
    out = dequantize(t, device="reference")
    assert out.shape == (0, 4) and out.to("cpu").numpy().shape == (0, 4)


def test_byte_offset_is_honoured() -> None:
    t = Tensor.from_numpy(np.array([1, 2, 3, 4, 5], np.int8).astype(ml_dtypes.int4))
    data = np.concatenate([np.array([0xEE], np.uint8), np.asarray(t.buffers[0])])
    desc = dataclasses.replace(t.descriptor, byte_offset=1,
                               buffers=(BufferHandle(data.size, 64),))
    shifted = Tensor.from_parts(desc, [data])
    assert unpack(shifted, device="reference").to("cpu").numpy().tolist() == [1, 2, 3, 4, 5]
