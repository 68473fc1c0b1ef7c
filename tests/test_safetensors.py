"""tinyattn.io's safetensors reader and writer: round trips for every dtype, agreement with the
``safetensors`` package both ways, and hostile files that must be refused with a clear error,
quickly and without allocating from the sizes they declare."""
from __future__ import annotations

import json
import os
import struct
import tracemalloc

import numpy as np
import pytest

from tinyattn import tensor
from tinyattn.io import (SafetensorsError, load_safetensors, read_safetensors_header,
                         save_safetensors)

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint64",
          "uint32", "uint16", "uint8", "bool"]


def _sample(dtype: str, shape=(3, 4), seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def _raw(tmp_path, header, data: bytes = b"", length=None, name="bad.safetensors") -> str:
    """Write a file by hand: 8-byte length, header (a JSON-able object or raw bytes), data."""
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(body) if length is None else length) + body + data)
    return str(path)


def _refused(path, *fragments) -> str:
    """Loading ``path`` raises SafetensorsError (a ValueError) whose message has every
    fragment; memory stays small (nothing allocated from a declared size)."""
    tracemalloc.start()
    try:
        with pytest.raises(SafetensorsError) as info:
            load_safetensors(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert peak < 4 * 2**20 + 4 * os.path.getsize(path), peak
    return message


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(tmp_path, dtype):
    tensors = {"matrix": _sample(dtype), "scalar": _sample(dtype, ()),
               "empty": _sample(dtype, (0, 5)), "cube": _sample(dtype, (2, 3, 2), seed=1)}
    path = str(tmp_path / "x.safetensors")
    save_safetensors(tensors, path, metadata={"format": "pt", "note": "round trip"})
    for mmap in (True, False):
        loaded = load_safetensors(path, mmap=mmap)
        assert set(loaded) == set(tensors)
        for name, array in tensors.items():
            assert loaded[name].dtype == array.dtype, (name, loaded[name].dtype)
            assert loaded[name].shape == array.shape, (name, loaded[name].shape)
            np.testing.assert_array_equal(loaded[name], array)
    assert read_safetensors_header(path).metadata == {"format": "pt", "note": "round trip"}


def test_writer_accepts_views_tensors_and_big_endian(tmp_path):
    base = np.arange(12.0).reshape(3, 4)
    tensors = {"transposed": base.T, "strided": base[:, ::2], "big": base.astype(">f4"),
               "tensor": tensor([[1.0, 2.0]]), "zero_d": np.float64(2.5)}
    path = str(tmp_path / "v.safetensors")
    save_safetensors(tensors, path)
    loaded = load_safetensors(path)
    np.testing.assert_array_equal(loaded["transposed"], base.T)
    np.testing.assert_array_equal(loaded["strided"], base[:, ::2])
    np.testing.assert_array_equal(loaded["big"], base.astype(np.float32))
    np.testing.assert_array_equal(loaded["tensor"], np.array([[1.0, 2.0]], np.float32))
    assert loaded["zero_d"].shape == () and loaded["zero_d"] == 2.5


def test_header_padded_and_tensors_aligned(tmp_path):
    path = str(tmp_path / "a.safetensors")
    save_safetensors({"b": np.ones(3, np.uint8), "a": np.ones(5, np.float64),
                      "c": np.ones(1, np.float32)}, path)
    header = read_safetensors_header(path)
    assert header.data_start % 8 == 0
    for info in header.tensors.values():
        itemsize = np.dtype({"F64": "f8", "F32": "f4", "U8": "u1"}[info.dtype]).itemsize
        assert info.begin % itemsize == 0, info
    assert all(a.flags.aligned for a in load_safetensors(path).values())


def test_mmap_is_copy_on_write(tmp_path):
    path = str(tmp_path / "m.safetensors")
    save_safetensors({"w": np.zeros(4, np.float32)}, path)
    before = open(path, "rb").read()
    loaded = load_safetensors(path)
    loaded["w"][0] = 7.0                       # the process's copy changes ...
    assert loaded["w"][0] == 7.0
    assert open(path, "rb").read() == before   # ... the file does not
    assert load_safetensors(path)["w"][0] == 0.0


def test_empty_file_of_tensors(tmp_path):
    path = str(tmp_path / "none.safetensors")
    save_safetensors({}, path)
    assert load_safetensors(path) == {}
    save_safetensors({"nothing": np.zeros((0,), np.float32)}, path)
    assert load_safetensors(path)["nothing"].shape == (0,)


def test_failed_save_keeps_the_old_file(tmp_path):
    path = str(tmp_path / "keep.safetensors")
    save_safetensors({"w": np.ones(2, np.float32)}, path)
    before = open(path, "rb").read()
    with pytest.raises(TypeError, match="'bad'.*dtype object"):
        save_safetensors({"w": np.zeros(2), "bad": np.array([object()])}, path)
    with pytest.raises(TypeError, match="complex64"):
        save_safetensors({"c": np.zeros(2, np.complex64)}, path)
    with pytest.raises(ValueError, match="reserved"):
        save_safetensors({"__metadata__": np.zeros(2)}, path)
    with pytest.raises(TypeError, match="metadata must be a dict of str -> str"):
        save_safetensors({"w": np.zeros(2)}, path, metadata={"step": 3})
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["keep.safetensors"]   # no temporary left behind


# ---------------------------------------------------------------------------- oracle
def test_matches_the_safetensors_package_both_ways(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy", reason="the safetensors package is "
                                   "the oracle (pip install safetensors)")
    tensors = {f"t_{d}": _sample(d, (2, 5), seed=i) for i, d in enumerate(DTYPES)}
    tensors["scalar"] = np.array(1.5, np.float32)
    ours = str(tmp_path / "ours.safetensors")
    theirs = str(tmp_path / "theirs.safetensors")
    save_safetensors(tensors, ours, metadata={"format": "np"})
    st_numpy.save_file(tensors, theirs, metadata={"format": "np"})
    for loaded in (st_numpy.load_file(ours), load_safetensors(theirs)):
        assert set(loaded) == set(tensors)
        for name, array in tensors.items():
            assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
            np.testing.assert_array_equal(loaded[name], array)


def test_bf16_widened_to_float32_like_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch makes the bfloat16 reference file")
    st_torch = pytest.importorskip("safetensors.torch", reason="needs safetensors")
    values = torch.tensor([0.0, -0.0, 1.0, -2.5, 3.14159, 1e-40, 3e38, float("inf"),
                           float("-inf"), float("nan")]).to(torch.bfloat16)
    path = str(tmp_path / "bf16.safetensors")
    st_torch.save_file({"x": values, "m": torch.randn(3, 4).to(torch.bfloat16)}, path)
    loaded = load_safetensors(path)
    assert loaded["x"].dtype == np.float32 and loaded["m"].shape == (3, 4)
    np.testing.assert_array_equal(loaded["x"], values.float().numpy())  # NaN == NaN here
    np.testing.assert_array_equal(loaded["m"], st_torch.load_file(path)["m"].float().numpy())


# ---------------------------------------------------------------------------- hostile files
def test_too_short(tmp_path):
    for size in (0, 7):
        path = tmp_path / f"short{size}.safetensors"
        path.write_bytes(b"\x00" * size)
        _refused(str(path), f"{size} bytes is too short")


def test_header_longer_than_file(tmp_path):
    _refused(_raw(tmp_path, {}, length=2**64 - 1), "claims 18,446,744,073,709,551,615 bytes",
             "truncated")
    _refused(_raw(tmp_path, b"{}", length=3), "claims 3 bytes", "only 2")


def test_header_over_the_format_limit(tmp_path):
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as f:                 # a sparse 300 MB file: nothing is written
        f.write(struct.pack("<Q", 200_000_000))
        f.truncate(300_000_000)
    _refused(str(path), "200,000,000", "100,000,000")


@pytest.mark.parametrize("body,fragment", [
    (b"\xff\xfe{}", "not UTF-8"),
    (b"{not json", "not valid JSON"),
    (b"[1, 2, 3]", "must be a JSON object"),
    (b"42", "must be a JSON object"),
    (b'"text"', "must be a JSON object"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON"),
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
     b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', "names 'a' twice"),
    (b'{"__metadata__": [1]}', "__metadata__ must be an object of string values"),
    (b'{"__metadata__": {"step": 3}}', "__metadata__ must be an object of string values"),
])
def test_bad_header_text(tmp_path, body, fragment):
    _refused(_raw(tmp_path, body, data=b"\x00" * 8), fragment)


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape) if isinstance(shape, tuple) else shape,
            "data_offsets": list(offsets) if isinstance(offsets, tuple) else offsets}


@pytest.mark.parametrize("entry,fragments", [
    ([1, 2], ["'w'", "must be an object"]),
    ({"dtype": "F32", "shape": [2]}, ["'w'", "missing ['data_offsets']"]),
    (dict(_entry(), extra=1), ["'w'", "unexpected ['extra']"]),
    (_entry(dtype="F128"), ["'w'", "unknown dtype 'F128'", "F32"]),
    (_entry(dtype=5), ["'w'", "unknown dtype 5"]),
    (_entry(dtype="F8_E4M3"), ["'w'", "F8_E4M3 has no NumPy equivalent"]),
    (_entry(shape="2"), ["'w'", "shape must be a list of non-negative integers", "'2'"]),
    (_entry(shape=[-2]), ["'w'", "shape must be a list", "[-2]"]),
    (_entry(shape=[2.0]), ["'w'", "shape must be a list", "[2.0]"]),
    (_entry(shape=[True, 2]), ["'w'", "shape must be a list", "[True, 2]"]),
    (_entry(shape=[[2]]), ["'w'", "shape must be a list"]),
    (_entry(shape=[1] * 65, offsets=(0, 4)), ["'w'", "shape must be a list"]),
    (_entry(offsets=[0]), ["'w'", "data_offsets must be [begin, end]", "[0]"]),
    (_entry(offsets=[0, -8]), ["'w'", "data_offsets must be [begin, end]"]),
    (_entry(offsets=[0, 8.0]), ["'w'", "data_offsets must be [begin, end]"]),
    (_entry(offsets="0:8"), ["'w'", "data_offsets must be [begin, end]"]),
    (_entry(offsets=(8, 0)), ["'w'", "[8, 0] end before they begin"]),
    (_entry(shape=(3,)), ["'w'", "span 8 bytes", "shape [3] of F32 needs 12"]),
    (_entry(dtype="F64"), ["'w'", "span 8 bytes", "shape [2] of F64 needs 16"]),
    (_entry(offsets=(0, 16), shape=(4,)), ["'w'", "[0, 16] past the end", "8 bytes"]),
])
def test_bad_entry(tmp_path, entry, fragments):
    _refused(_raw(tmp_path, {"w": entry}, data=b"\x00" * 8), *fragments)


def test_huge_declared_size_is_never_allocated(tmp_path):
    huge = 2**40
    _refused(_raw(tmp_path, {"w": _entry(shape=(huge, huge), offsets=(0, 4 * huge * huge))},
                  data=b"\x00" * 8), "'w'", "past the end")
    _refused(_raw(tmp_path, {"w": _entry(shape=(huge, huge), offsets=(0, 8))},
                  data=b"\x00" * 8), "'w'", "span 8 bytes", f"{4 * huge * huge:,}")


def test_overlap_gap_and_trailing_bytes(tmp_path):
    overlap = {"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(4, 12))}
    _refused(_raw(tmp_path, overlap, data=b"\x00" * 12), "'a' [0, 8]", "'b' [4, 12]",
             "overlap")
    same = {"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(0, 8))}
    _refused(_raw(tmp_path, same, data=b"\x00" * 8), "overlap")
    gap = {"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(12, 20))}
    _refused(_raw(tmp_path, gap, data=b"\x00" * 20), "bytes [8, 12)", "before 'b'")
    _refused(_raw(tmp_path, {"a": _entry()}, data=b"\x00" * 9), "cover 8 bytes",
             "has 9", "belong to no tensor")
    _refused(_raw(tmp_path, {"a": _entry()}, data=b"\x00" * 5), "'a'", "past the end")


def test_header_reader_checks_without_reading_data(tmp_path):
    path = _raw(tmp_path, {"a": _entry(), "__metadata__": {"format": "pt"}},
                data=b"\x00" * 8)
    header = read_safetensors_header(path)
    assert header.metadata == {"format": "pt"}
    assert header.tensors["a"].shape == (2,) and header.tensors["a"].dtype == "F32"
    assert header.data_start == 8 + len(json.dumps(
        {"a": _entry(), "__metadata__": {"format": "pt"}}).encode())
    with pytest.raises(SafetensorsError, match="overlap"):
        read_safetensors_header(_raw(tmp_path, {"a": _entry(), "b": _entry()},
                                     data=b"\x00" * 8, name="h2.safetensors"))


def test_negative_control_a_valid_file_is_accepted(tmp_path):
    """The hand-written files above fail for their one defect: the same writer with a
    correct header loads."""
    data = np.array([1.5, -2.0], np.float32).tobytes()
    loaded = load_safetensors(_raw(tmp_path, {"w": _entry()}, data=data))
    np.testing.assert_array_equal(loaded["w"], [1.5, -2.0])


def test_a_dimension_beyond_numpys_limit_names_the_tensor(tmp_path):
    """shape [0, 10**30] holds 0 bytes, so its offsets fit, but NumPy cannot make the array."""
    header = b'{"empty": {"dtype": "F32", "shape": [0, ' + str(10 ** 30).encode() + \
        b'], "data_offsets": [0, 0]}}'
    _refused(_raw(tmp_path, header), "empty", "shape")


def test_an_integer_too_long_for_python_names_the_tensor(tmp_path):
    """A 5000-digit integer is over Python's int-length limit: json.loads raised a plain
    ValueError before any check ran."""
    header = b'{"long": {"dtype": "F32", "shape": [' + b"9" * 5000 + \
        b'], "data_offsets": [0, 4]}}'
    _refused(_raw(tmp_path, header, b"\0" * 4), "long", "shape")
