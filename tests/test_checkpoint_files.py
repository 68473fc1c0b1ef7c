"""ta.save / ta.load against hostile, wrong and damaged files, and the file-system details of
saving: permissions, symbolic links, leftovers of a killed save."""
import io
import json
import os
import re
import resource
import signal
import stat
import struct
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import atomic
from tinyattn.serialization import MAX_DEPTH, CheckpointError, load, save


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _npz(path, members, compression=zipfile.ZIP_STORED):
    """A zip of raw members {name: bytes}, as a hostile writer would make it."""
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def _meta(tree):
    text = json.dumps({"format": "tinyattn-checkpoint", "version": 1, "tree": tree})
    return _npy_bytes(np.array(text))


def _load_bounded(path, seconds=30.0):
    """load(path), which must fail with CheckpointError within ``seconds``."""
    start = time.perf_counter()
    with pytest.raises(CheckpointError) as info:
        load(path)
    assert time.perf_counter() - start < seconds
    return str(info.value)


def test_a_plain_npy_file_is_named_as_such(tmp_path):
    path = tmp_path / "weights.npy"
    np.save(path, np.ones(3))
    message = _load_bounded(str(path))
    assert "holds a single .npy array" in message and "numpy.load" in message


def test_a_folder_a_pipe_or_an_empty_file_is_refused(tmp_path):
    assert "not a regular file" in _load_bounded(str(tmp_path))
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)                      # opening it would wait for a writer forever
    assert "not a regular file" in _load_bounded(str(fifo))
    (tmp_path / "empty.npz").write_bytes(b"")
    assert "corrupt or was not written by tinyattn.save" in _load_bounded(
        str(tmp_path / "empty.npz"))
    with pytest.raises(FileNotFoundError):
        load(str(tmp_path / "missing.npz"))


def test_a_deeply_nested_header_is_refused_without_recursion(tmp_path):
    tree = '{"list": [' * 5000 + '{"value": 1}' + "]}" * 5000
    text = '{"format": "tinyattn-checkpoint", "version": 1, "tree": ' + tree + "}"
    assert len(text) > 50_000
    path = _npz(tmp_path / "deep.npz", {"__tinyattn__.npy": _npy_bytes(np.array(text))})
    assert "nests 10002 levels deep" in _load_bounded(path)


@pytest.mark.parametrize("innermost", [[1.5], {}, [], {"x": None}])
def test_nesting_up_to_the_limit_round_trips_and_save_refuses_deeper(tmp_path, innermost):
    deepest = innermost
    for _ in range(MAX_DEPTH - 1):          # MAX_DEPTH containers, the innermost included
        deepest = {"k": deepest}
    save(deepest, str(tmp_path / "ok.npz"))
    assert load(str(tmp_path / "ok.npz")) == deepest
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        save({"k": deepest}, str(tmp_path / "deep.npz"))


def _declaring(shape, dtype="<f4", data=b""):
    """A .npy member whose header declares ``shape`` but which holds only ``data``."""
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


def _address_space():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_a_tiny_file_declaring_a_trillion_floats_is_refused_before_allocating(tmp_path):
    path = _npz(tmp_path / "liar.npz", {"__tinyattn__.npy": _meta({"array": "w"}),
                                       "w.npy": _declaring((10 ** 12,))})
    assert os.path.getsize(path) < 1000
    limit = resource.getrlimit(resource.RLIMIT_AS)
    # at most 2 GiB more address space than now: trying to allocate 3.6 TiB would fail
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + (2 << 30), limit[1]))
    try:
        message = _load_bounded(path)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limit)
    assert "declares shape (1000000000000,) of float32 (3.6 TiB) but holds 0 bytes" in message


def test_a_member_declaring_more_bytes_than_the_file_has_is_refused(tmp_path):
    path = _npz(tmp_path / "short.npz", {"__tinyattn__.npy": _meta({"array": "w"}),
                                        "w.npy": _declaring((4,), data=b"\0" * 8)})
    assert "declares shape (4,) of float32 (16 bytes) but holds 8 bytes" in _load_bounded(path)


def test_a_zip_bomb_member_is_never_decompressed(tmp_path):
    """1 MiB that would inflate to 1 GiB: refused from the directory entry alone."""
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__tinyattn__.npy", _meta({"array": "w"}))
        with archive.open("w.npy", "w", force_zip64=True) as member:
            member.write(_declaring((1 << 28,)))
            chunk = bytes(1 << 24)
            for _ in range(64):
                member.write(chunk)
    assert path.stat().st_size < 2 << 20
    assert "is compressed" in _load_bounded(str(path), seconds=15.0)


def _overlapping(path, members, copies):
    """A zip whose central directory lists its last member ``copies`` more times, every entry
    pointing at the same stored bytes (an overlapping-member bomb)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    raw = buffer.getvalue()
    end = raw.rindex(b"PK\x05\x06")
    count, cd_size, cd_offset = struct.unpack("<HII", raw[end + 10:end + 20])
    directory = raw[cd_offset:cd_offset + cd_size]
    start = 0
    for _ in range(count - 1):              # skip to the last entry
        start += 46 + sum(struct.unpack("<HHH", directory[start + 28:start + 34]))
    entry = directory[start:]
    total = count + copies
    directory += entry * copies
    tail = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, total, total, len(directory),
                       cd_offset, 0)
    path.write_bytes(raw[:cd_offset] + directory + tail)
    return str(path)


def test_members_that_claim_more_bytes_than_the_file_holds_are_refused(tmp_path):
    members = {"__tinyattn__.npy": _meta({"array": "w"}),
               "w.npy": _npy_bytes(np.ones(100_000))}
    once = _overlapping(tmp_path / "once.npz", members, copies=0)
    assert load(once).shape == (100_000,)           # the construction itself is sound
    bomb = _overlapping(tmp_path / "bomb.npz", members, copies=50)
    assert os.path.getsize(bomb) < 1 << 20
    assert re.search(r"declare 38\.\d MiB in all but the file has 78\d\.\d KiB",
                     _load_bounded(bomb))


@pytest.mark.parametrize("dtype,shape", [("|O", (2,)), ("<M8[s]", (2,)), ("|V8", (2,))])
def test_object_and_exotic_dtypes_are_refused(tmp_path, dtype, shape):
    path = _npz(tmp_path / "odd.npz", {"__tinyattn__.npy": _meta({"array": "w"}),
                                      "w.npy": _declaring(shape, dtype, b"\0" * 16)})
    assert "has dtype" in _load_bounded(path)


@pytest.mark.parametrize("tree,fragment", [
    ([1, 2], "a node is list"),
    ({"dict": {"a": 1}}, "where a list belongs"),
    ({"dict": [["a"]]}, "not [key, value]"),
    ({"dict": [[["x"], {"value": 1}]]}, "not [key, value]"),
    ({"array": "missing"}, "names an array 'missing' the file does not hold"),
    ({"value": {"a": 1}}, "a value is a dict"),
    ({"what": 1}, "has the keys ['what']"),
    ("text", "a node is str"),
])
def test_a_damaged_description_is_explained(tmp_path, tree, fragment):
    path = _npz(tmp_path / "damaged.npz", {"__tinyattn__.npy": _meta(tree)})
    message = _load_bounded(path)
    assert "damaged header" in message and fragment in message


def test_a_header_that_is_not_json_or_not_a_string(tmp_path):
    not_json = _npz(tmp_path / "a.npz", {"__tinyattn__.npy": _npy_bytes(np.array("{oops"))})
    assert "not valid JSON" in _load_bounded(not_json)
    numeric = _npz(tmp_path / "b.npz", {"__tinyattn__.npy": _npy_bytes(np.ones(3))})
    assert "not a JSON string" in _load_bounded(numeric)


def test_a_flipped_byte_in_the_data_is_caught_by_the_crc(tmp_path):
    path = tmp_path / "ckpt.npz"
    save({"w": np.arange(100.0)}, str(path))
    data = bytearray(path.read_bytes())
    spot = data.index(np.arange(100.0)[50:51].tobytes())
    data[spot] ^= 0xFF
    path.write_bytes(bytes(data))
    assert "Bad CRC-32" in _load_bounded(str(path))


def test_a_good_checkpoint_still_round_trips_every_supported_leaf(tmp_path):
    """Negative control for the checks above: what save writes, load reads back."""
    obj = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3),
           "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
           "empty": np.zeros((0, 4)), "bools": np.array([True, False]),
           "scalar": np.float64(2.5), "ints": np.arange(3, dtype=np.int64),
           "text": "hello", "none": None, "nested": [1, (2.0, "x")], 7: "int key",
           "tensor": ta.tensor([1.0, 2.0])}
    path = str(tmp_path / "all.npz")
    save(obj, path)
    back = load(path)
    for key in ("f32", "fortran", "empty", "bools", "ints"):
        assert back[key].dtype == obj[key].dtype
        np.testing.assert_array_equal(back[key], obj[key])
    assert back["scalar"] == 2.5 and isinstance(back["scalar"], np.float64)
    assert back["nested"] == [1, (2.0, "x")] and back[7] == "int key"
    assert back["text"] == "hello" and back["none"] is None
    assert back["tensor"].tolist() == [1.0, 2.0]
    back["f32"][0, 0] = 9.0                       # a writable array, not a read-only view


# ------------------------------------------------------------------ saving
def test_resaving_keeps_the_files_permissions(tmp_path):
    path = tmp_path / "private.npz"
    save({"a": 1}, str(path))
    os.chmod(path, 0o600)
    save({"a": 2}, str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load(str(path))["a"] == 2


def test_a_new_file_gets_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        save({"a": 1}, str(tmp_path / "new.npz"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.npz").stat().st_mode) == 0o644


def test_saving_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "store").mkdir()
    real = tmp_path / "store" / "real.npz"
    save({"a": 1}, str(real))
    link = tmp_path / "latest.npz"
    link.symlink_to(real)
    save({"a": 2}, str(link))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert load(str(real))["a"] == 2
    assert sorted(os.listdir(tmp_path / "store")) == ["real.npz"]   # the temporary went there


def _leftover(folder, pid, host=None, age_s=0.0):
    host = host or atomic._host_tag()
    path = folder / f"{atomic.TEMP_PREFIX}{host}-{pid}-abc123.npz"
    path.write_bytes(b"half a checkpoint")
    if age_s:
        past = time.time() - age_s
        os.utime(path, (past, past))
    return path


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_save_removes_leftovers_of_dead_processes_only(tmp_path):
    dead = _leftover(tmp_path, _dead_pid())
    ours = _leftover(tmp_path, os.getpid())                  # may be another thread's save
    alive = _leftover(tmp_path, os.getppid())                # a running process
    elsewhere = _leftover(tmp_path, _dead_pid(), host="0badc0de")   # another machine's
    ancient = _leftover(tmp_path, os.getppid(), host="0badc0de", age_s=2 * 86400)
    foreign = tmp_path / ".tmp-someone-elses.npz"
    foreign.write_bytes(b"not ours")
    save({"a": 1}, str(tmp_path / "ckpt.npz"))
    assert not dead.exists() and not ancient.exists()
    assert ours.exists() and alive.exists() and elsewhere.exists() and foreign.exists()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads Linux's /proc")
def test_a_killed_writer_not_yet_waited_for_counts_as_gone(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        child.kill()
        deadline = time.monotonic() + 10
        while not atomic._is_zombie(child.pid):         # killed, not reaped: a zombie
            assert time.monotonic() < deadline
            time.sleep(0.01)
        left = _leftover(tmp_path, child.pid)
        save({"a": 1}, str(tmp_path / "ckpt.npz"))
        assert not left.exists()
    finally:
        child.wait()


def test_load_also_removes_a_dead_writers_leftover(tmp_path):
    save({"a": 1}, str(tmp_path / "ckpt.npz"))
    dead = _leftover(tmp_path, _dead_pid())
    assert load(str(tmp_path / "ckpt.npz"))["a"] == 1
    assert not dead.exists()


def test_sigkill_during_a_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    """A real process killed with SIGKILL while writing: the old checkpoint survives, the
    leftover temporary is removed by the next save in that folder."""
    path = tmp_path / "ckpt.npz"
    save({"step": 1}, str(path))
    script = textwrap.dedent(f"""
        import sys, time
        from tinyattn.atomic import atomic_write
        with atomic_write({str(path)!r}) as f:
            f.write(b"partial")
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
    """)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    assert child.stdout.readline().strip() == b"writing"
    child.send_signal(signal.SIGKILL)
    child.wait()
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith(atomic.TEMP_PREFIX)]
    assert len(leftovers) == 1                          # what SIGKILL leaves behind
    assert load(str(path))["step"] == 1                 # the old file is intact (and load
    assert os.listdir(tmp_path) == ["ckpt.npz"]         # cleaned up the dead writer's file)
    save({"step": 2}, str(path))
    assert os.listdir(tmp_path) == ["ckpt.npz"]
