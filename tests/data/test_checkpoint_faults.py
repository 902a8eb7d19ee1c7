"""Checkpoints under faults: a save killed half-way, damaged files, and the wrong model.

- ``tgrad.save`` writes a temporary file and renames it over the target, so a process killed
  (SIGKILL: no cleanup runs) in the middle of a save leaves the previous checkpoint as it was.
  The child is forked from the test process (it inherits tgrad already imported), and killed for
  real: once while paused half-way through the temporary file (the child patches ``os.write``, which
  ``tgrad.save`` writes with, to write half the file, fsync it and wait), and at random moments of
  back-to-back large saves.
- Every truncation of a checkpoint, and a flipped bit at every byte of it, is reported as a
  truncated or corrupted checkpoint (the checksum in the header covers the data and the rest of the
  header) -- or, where the bit renames the checksum entry itself (the file then reads as one from
  another safetensors writer, unchecked), loads the very same values. Never a silently different
  value, never another exception type.
- Loading into a model of another shape lists every missing, unexpected and mis-shaped key, with
  PyTorch's text for the same pair of models.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import random
import signal
import stat
import time

import pytest
import torch

import tgrad
import tgrad.nn as nn
from support.checkpoints import same_tree as _same, saved_bytes as _encoded

FORK = multiprocessing.get_context("fork")


def _state(value: float, n: int = 1000) -> dict:
    """A checkpoint whose every number is ``value`` (so a mix of two saves would show)."""
    return {"model": {"w": tgrad.full((n,), value), "b": tgrad.full((3, 2), value, dtype=tgrad.float64)},
            "step": int(value), "tag": f"v{value}"}


def _assert_is(ckpt: dict, value: float):
    assert ckpt["step"] == int(value) and ckpt["tag"] == f"v{value}"
    for t in ckpt["model"].values():
        assert torch.all(t.torch() == value), f"a tensor mixes two checkpoints: {t.torch().unique()}"


def _temp_files(directory, name):
    return [f for f in os.listdir(directory) if f.startswith(f".tmp-{name}-")]


def _save_paused(state, path, pause_bytes):
    """In the child: ``tgrad.save`` whose first write to a regular file (the temporary file) puts
    ``pause_bytes`` bytes on disk and then waits to be killed. The pause is this process's patch of
    ``os.write``; the library has no test hook."""
    real_write = os.write

    def paused_write(fd, data):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            head = memoryview(data)[:pause_bytes]
            while head:
                head = head[real_write(fd, head):]
            os.fsync(fd)
            time.sleep(3600)
        return real_write(fd, data)

    os.write = paused_write
    tgrad.save(state, path)
    os._exit(0)  # not reached: the parent kills us while paused


def test_kill_in_the_middle_of_a_save_leaves_the_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    tgrad.save(_state(1.0), path)
    before = path.read_bytes()
    new = _state(2.0)
    total = len(_encoded(new))
    half = total // 2
    child = FORK.Process(target=_save_paused, args=(new, str(path), half))
    child.start()
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until half of the new file is on disk
            tmp = _temp_files(tmp_path, path.name)
            if tmp and os.path.getsize(tmp_path / tmp[0]) >= half:
                break
            assert child.is_alive() and time.monotonic() < deadline, "the child never paused mid-save"
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.join(30)
    assert child.exitcode == -signal.SIGKILL
    # the half-written new checkpoint is there, unfinished, and the old one is untouched
    assert os.path.getsize(tmp_path / tmp[0]) == half < total
    assert path.read_bytes() == before
    _assert_is(tgrad.load(path), 1.0)
    with pytest.raises(RuntimeError, match="not a valid tgrad/safetensors checkpoint .*truncated"):
        tgrad.load(tmp_path / tmp[0])
    tgrad.save(new, path)  # a later save goes through
    _assert_is(tgrad.load(path), 2.0)


def _save_forever(path, states):
    for i in range(10 ** 6):
        tgrad.save(states[i % 2], path)


def test_kills_at_random_moments_leave_one_whole_checkpoint(tmp_path):
    """Back-to-back saves of two 8 MB checkpoints, killed at random moments: whatever the moment
    (encoding, writing, fsync, rename), the file holds one of the two, whole."""
    path = tmp_path / "ckpt.safetensors"
    states = [_state(3.0, 1 << 21), _state(4.0, 1 << 21)]
    tgrad.save(states[0], path)
    rng = random.Random(0)
    for _ in range(4):
        child = FORK.Process(target=_save_forever, args=(str(path), states))
        child.start()
        time.sleep(rng.uniform(0.05, 0.4))
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
        assert child.exitcode == -signal.SIGKILL
        ckpt = tgrad.load(path)
        _assert_is(ckpt, ckpt["step"] * 1.0)
        assert ckpt["step"] in (3, 4)
        for f in _temp_files(tmp_path, path.name):  # a killed save cannot clean up after itself
            os.unlink(tmp_path / f)


# ----------------------------------------------------------------------------- damaged files

def _small_checkpoint():
    return {"model": {"w": tgrad.tensor([[1.5, -2.0], [0.25, 3.0]]), "n": tgrad.tensor([7, 8])},
            "epoch": 3, "names": ["a", "b"]}


@pytest.mark.parametrize("flat", [False, True], ids=["tree", "flat"])
def test_every_truncation_is_reported(flat):
    obj = _small_checkpoint()["model"] if flat else _small_checkpoint()
    raw = _encoded(obj)
    assert _same(tgrad.load(io.BytesIO(raw)), obj)
    for cut in range(len(raw)):
        with pytest.raises(RuntimeError, match=r"^<file object>: not a valid tgrad/safetensors checkpoint \(the file "
                                               r"is (truncated|corrupted)"):
            tgrad.load(io.BytesIO(raw[:cut]))


@pytest.mark.parametrize("flat", [False, True], ids=["tree", "flat"])
def test_a_flipped_bit_anywhere_is_reported_or_harmless(flat):
    obj = _small_checkpoint()["model"] if flat else _small_checkpoint()
    raw = _encoded(obj)
    harmless = []
    for pos in range(len(raw)):
        damaged = bytearray(raw)
        damaged[pos] ^= 1 << (pos % 8)
        try:
            back = tgrad.load(io.BytesIO(bytes(damaged)))
        except RuntimeError as e:
            assert "not a valid tgrad/safetensors checkpoint" in str(e), str(e)
            continue
        assert _same(back, obj), f"a flipped bit at byte {pos} loaded different values"
        harmless.append(pos)
    key = raw.index(b'"tgrad.crc32"')
    assert all(key < pos < key + len(b'"tgrad.crc32"') for pos in harmless), harmless


def test_appended_garbage_is_reported():
    raw = _encoded(_small_checkpoint())
    with pytest.raises(RuntimeError, match=r"the file is corrupted: its checksum is [0-9a-f]{8}, but the header "
                                           r"records [0-9a-f]{8}"):
        tgrad.load(io.BytesIO(raw + b"\0"))


# ----------------------------------------------------------------------------- the wrong model

def _models(T):
    saved = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 3), T.nn.LayerNorm(3))
    other = T.nn.Sequential(T.nn.Linear(4, 6), T.nn.ReLU(), T.nn.Linear(6, 3), T.nn.ReLU(), T.nn.Linear(3, 2))
    return saved, other


def test_loading_into_a_mismatched_model_lists_every_key(tmp_path):
    saved, other = _models(tgrad)
    path = tmp_path / "m.safetensors"
    tgrad.save(saved.state_dict(), path)
    with pytest.raises(RuntimeError) as err:
        other.load_state_dict(tgrad.load(path))
    msg = str(err.value)
    assert 'Missing key(s) in state_dict: "4.weight", "4.bias". ' in msg
    assert 'Unexpected key(s) in state_dict: "3.weight", "3.bias". ' in msg
    for key, got, want in [("0.weight", [8, 4], [6, 4]), ("0.bias", [8], [6]), ("2.weight", [3, 8], [3, 6])]:
        assert (f"size mismatch for {key}: copying a param with shape tgrad.Size({got}) from checkpoint, the shape "
                f"in current model is tgrad.Size({want}).") in msg
    # the same pair of models in PyTorch gives the same report
    t_saved, t_other = _models(torch)
    with pytest.raises(RuntimeError) as t_err:
        t_other.load_state_dict(t_saved.state_dict())
    assert msg == str(t_err.value).replace("torch.", "tgrad.")


def test_missing_and_unexpected_keys_are_listed_by_name(tmp_path):
    path = tmp_path / "m.safetensors"
    tgrad.save(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).state_dict(), path)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    with pytest.raises(RuntimeError) as err:
        model.load_state_dict(tgrad.load(path))
    assert str(err.value) == ('Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: '
                              '"2.weight", "2.bias". \n\tUnexpected key(s) in state_dict: "1.weight", "1.bias". ')
    result = model.load_state_dict(tgrad.load(path), strict=False)
    assert result.missing_keys == ["2.weight", "2.bias"] and result.unexpected_keys == ["1.weight", "1.bias"]
