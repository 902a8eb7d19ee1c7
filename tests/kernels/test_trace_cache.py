"""The trace cache (kernels/runtime/trace_cache.py): recorded CPU traces kept on disk across runs.

``clear_replay_cache()`` empties the executor's memory as a new process starts with, so a launch
after it finds only what the disk holds. Verify mode is on (each replay, a loaded one included, is
also interpreted and the bytes compared) except where a test says otherwise."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime import trace_cache, trace_codec
from tgrad.kernels.runtime.launch import launch



@pytest.fixture(autouse=True)
def cache(tmp_path):
    """An empty cache directory of this test's, the cache on, verify mode on, memory empty."""
    saved, enabled, verify = dict(trace_cache._config), K.replay_enabled(), K.replay_verify()
    K.set_trace_cache(True, directory=str(tmp_path / "cache"))
    K.set_replay(True, verify=True)
    K.clear_replay_cache()
    yield str(tmp_path / "cache")
    trace_cache._config.update(saved)
    K.set_replay(enabled, verify=verify)
    K.clear_replay_cache()


@triton.jit
def _scaled_sums(out_ptr, x_ptr, flag_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if tl.load(flag_ptr) > 0:  # a decision on loaded data: a guard
        x = x * 2
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0) * scale, mask=offs < n)
    tl.store(out_ptr + BLOCK, tl.sum(x, axis=0))


def _run(x, flag, n=6, scale=0.5, block=8):
    out = torch.zeros(block + 1, dtype=torch.float32)
    launch(_scaled_sums, (1,), out, x, torch.tensor([flag], dtype=torch.int32), n, scale, BLOCK=block)
    return out


def _want(x, flag, n=6, scale=0.5, block=8):
    v = x[:n].double() * (2 if flag > 0 else 1)
    want = torch.zeros(block + 1, dtype=torch.float64)
    want[:n], want[block] = torch.cumsum(v, 0) * scale, v.sum()
    return want


def _new_process():
    """What a new process starts with: nothing in memory, nothing read from the disk yet."""
    K.clear_replay_cache()


def _traces(directory):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(directory) for f in files if f.endswith(".trace"))


@pytest.mark.executor_replay
def test_a_stored_trace_replays_at_once_in_a_new_process_with_the_interpreters_bytes(cache):
    x = torch.randn(8)
    with K.count_replays() as counts:
        for flag in (1, 1):
            assert torch.allclose(_run(x, flag).double(), _want(x, flag), atol=1e-5)
    assert counts["interpreted"] == 1 and counts["recorded"] == 1
    assert len(_traces(cache)) == 1
    K.set_replay(False)
    interpreted = _run(x, 1)
    K.set_replay(True, verify=True)
    _new_process()
    loaded_before = K.trace_cache_counts["loaded"]
    with K.count_replays() as counts:
        replayed = _run(x, 1)  # verify mode: also interpreted, the bytes compared
    assert counts["replayed"] == 1 and counts["interpreted"] == 0 and counts["recorded"] == 0
    assert K.trace_cache_counts["loaded"] == loaded_before + 1
    assert torch.equal(replayed.view(torch.int32), interpreted.view(torch.int32))
    K.set_replay(verify=False)
    for flag in (0, 1):  # the other guard outcome records a variant, stored beside the first
        for _ in range(2):
            assert torch.allclose(_run(x, flag).double(), _want(x, flag), atol=1e-5)
    _new_process()
    with K.count_replays() as counts:
        for flag in (0, 1):
            assert torch.allclose(_run(x, flag).double(), _want(x, flag), atol=1e-5)
    assert counts["replayed"] == 2 and counts["interpreted"] == 0 and counts["recorded"] == 0


def _workload():
    """tgrad ops whose traces hold views, gathers, reductions, scans, BLAS dots and casts."""
    g = np.random.default_rng(0)
    a = tgrad.tensor(g.standard_normal((5, 7)).astype(np.float32), requires_grad=True)
    b = tgrad.tensor(g.standard_normal((7, 3)).astype(np.float32))
    y = (a @ b).relu().softmax(-1)
    z = a.tanh().mean(0) + a.detach().cumsum(1).sum() + a.sum(0) + a.t().contiguous().mean()
    loss = y.sum() + z.sum() + a.double().pow(2).sum().float() + (a > 0).float().sum()
    loss.backward()
    return [loss.detach().numpy(), a.grad.numpy(), y.detach().numpy()]


def _indexing():
    """Index kernels given tuples of index tensors (advanced indexing, index_select, flip)."""
    g = np.random.default_rng(1)
    x = tgrad.tensor(g.standard_normal((6, 5)), requires_grad=True)
    rows, cols = tgrad.tensor(np.array([0, -1, 3, 3])), tgrad.tensor(np.array([4, 0, 2, 1], dtype=np.int32))
    y = x[rows, cols].sum() + tgrad.index_select(x, 1, cols).sum() + tgrad.flip(x, (0, 1))[0].sum()
    y.backward()
    return [y.detach().numpy(), x.grad.numpy()]


@pytest.mark.executor_replay
@pytest.mark.parametrize("workload", [_workload, _indexing], ids=["ops", "tuples of index tensors"])
def test_real_kernels_stored_and_loaded_replay_without_interpreting(workload):
    not_stored = sum(v for k, v in K.trace_cache_counts.items() if k.startswith("not stored"))
    first = workload()
    second = workload()  # records
    _new_process()
    with K.count_replays() as counts:  # nothing in memory: every launch replays what was stored
        third = workload()
    assert counts["interpreted"] == 0 and counts["recorded"] == 0 and counts["replayed"] > 5
    for got, want in zip(third + second, first + first):
        assert np.array_equal(got, want)
    assert sum(v for k, v in K.trace_cache_counts.items() if k.startswith("not stored")) == not_stored


@pytest.mark.executor_replay
def test_a_scalar_found_varying_is_keyed_so_from_the_first_sighting_of_a_new_process():
    x = torch.randn(8)
    for n in (3, 4, 5):  # n=4: n varies; n=5: that signature records
        assert torch.allclose(_run(x, 1, n=n).double(), _want(x, 1, n=n), atol=1e-5)
    _new_process()
    with K.count_replays() as counts:
        assert torch.allclose(_run(x, 1, n=7).double(), _want(x, 1, n=7), atol=1e-5)
    assert counts["replayed"] == 1 and counts["interpreted"] == 0
    with K.count_replays() as counts:  # a value of another width: another signature of a site known to vary
        assert torch.allclose(_run(x, 1, n=2**40).double(), _want(x, 1, n=8), atol=1e-5)
    assert counts["recorded"] == 1 and counts["interpreted"] == 0


@triton.jit
def _scaled_copy(out_ptr, args, BLOCK: tl.constexpr):  # args: (x, (scale,))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(args[0] + offs) * args[1][0])


@pytest.mark.executor_replay
def test_a_scalar_inside_nested_tuples_found_varying_is_keyed_so_in_a_new_process():
    x = torch.randn(8)

    def run(scale):
        out = torch.empty(8)
        launch(_scaled_copy, (1,), out, (x, (scale,)), BLOCK=8)
        torch.testing.assert_close(out, x * scale)
    for scale in (3, 4, 5):  # 4: the scale at position (1, 1, 0) varies; 5: that signature records
        run(scale)
    _new_process()
    with K.count_replays() as counts:
        run(7)
    assert counts == {"replayed": 1}, counts


@pytest.mark.executor_replay
def test_a_signature_seen_once_by_an_earlier_run_records_at_its_first_sighting():
    x = torch.randn(8)
    _run(x, 1)
    _new_process()
    with K.count_replays() as counts:
        _run(x, 1)
    assert counts["recorded"] == 1 and counts["interpreted"] == 0


def _damage(path, how, other):
    data = open(path, "rb").read()
    if how == "truncated":
        data = data[:len(data) // 2]
    elif how == "a flipped byte":
        data = bytearray(data)
        data[len(data) // 2] ^= 0x10
        data = bytes(data)
    elif how == "another environment":
        name = os.path.basename(path)[:-6]
        header, blob = trace_codec.unpack_entry(name, trace_cache.environment(), data)
        data = trace_codec.pack_entry(name, "0" * 16, header, bytes(blob))
    elif how == "another signature's entry":
        data = open(other, "rb").read()
    elif how == "a foreign file":
        data = b"PK\x03\x04 not a trace at all"
    with open(path, "wb") as f:
        f.write(data)
    if how == "writable by others":
        os.chmod(path, 0o666)


@pytest.mark.parametrize("how", ["truncated", "a flipped byte", "another environment", "another signature's entry",
                                 "a foreign file", "writable by others"])
@pytest.mark.executor_replay
def test_a_damaged_or_foreign_entry_is_ignored_and_rewritten(cache, how):
    if how == "writable by others" and not hasattr(os, "getuid"):
        pytest.skip("no file ownership on this platform")
    x = torch.randn(8)
    for block in (8, 16):
        for _ in range(2):
            _run(x, 1, block=block)
    path, other = _traces(cache)
    _damage(path, how, other)
    rejected = sum(v for k, v in K.trace_cache_counts.items() if k.startswith("rejected"))
    _new_process()
    with K.count_replays() as counts:
        for block in (8, 16):
            assert torch.allclose(_run(x, 1, block=block).double(), _want(x, 1, block=block), atol=1e-5)
    assert sum(v for k, v in K.trace_cache_counts.items() if k.startswith("rejected")) == rejected + 1
    assert counts["recorded"] == 1 and counts["replayed"] == 1 and counts["interpreted"] == 0  # re-recorded
    _new_process()
    with K.count_replays() as counts:  # and rewritten: both load now
        for block in (8, 16):
            _run(x, 1, block=block)
    assert counts["replayed"] == 2 and counts["recorded"] == 0


@pytest.mark.executor_replay
def test_verify_mode_checks_a_loaded_trace_against_the_interpreter(cache):
    x = torch.randn(8)
    for _ in range(2):
        _run(x, 1)
    (path,) = _traces(cache)
    name = os.path.basename(path)[:-6]
    header, blob = trace_codec.unpack_entry(name, trace_cache.environment(), open(path, "rb").read())
    header["variants"][0]["source"] = "def _run(A):\n    return None\n"  # intact, but computes nothing
    with open(path, "wb") as f:
        f.write(trace_codec.pack_entry(name, trace_cache.environment(), header, bytes(blob)))
    _new_process()
    with pytest.raises(K.ReplayMismatch, match="_scaled_sums"):
        _run(x, 1)


@pytest.mark.executor_replay
@pytest.mark.cpu_launch_decisions  # the writers are other processes, configured as the CPU
def test_concurrent_writers_of_the_same_entries_leave_a_cache_that_loads(cache):
    script = ("import numpy as np, tgrad\n"
              "for _ in range(2):\n"
              "    for n in range(1, 9):\n"
              "        x = tgrad.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))\n"
              "        ((x * 2).exp().sum(0) + x.mean()).numpy()\n")
    env = dict(os.environ, TGRAD_CACHE_DIR=cache, TGRAD_CACHE="1")
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read().decode()
    _new_process()
    before = {k: v for k, v in K.trace_cache_counts.items() if k.startswith("rejected")}
    with K.count_replays() as counts:
        for n in range(1, 9):
            x = tgrad.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
            got = ((x * 2).exp().sum(0) + x.mean()).numpy()
            want = (torch.from_numpy(np.arange(n * 3, dtype=np.float32).reshape(n, 3)) * 2).exp().sum(0) + \
                torch.arange(n * 3, dtype=torch.float32).mean()
            assert np.allclose(got, want.numpy(), rtol=1e-5)
    assert counts["interpreted"] == 0 and counts["recorded"] == 0
    assert {k: v for k, v in K.trace_cache_counts.items() if k.startswith("rejected")} == before
    assert not [f for _, _, files in os.walk(cache) for f in files if f.startswith(".tmp-")]


@pytest.mark.executor_replay
def test_the_size_bound_keeps_the_most_recently_used(cache):
    x = torch.randn(64)
    for _ in range(2):
        _run(x, 1, n=4, block=8)
    (first,) = _traces(cache)
    size = os.path.getsize(first)
    K.set_trace_cache(max_bytes=4 * size)
    for block in (16, 32, 64, 128):
        for _ in range(2):
            _run(x, 1, n=4, block=block)
        time.sleep(0.02)  # distinct times: the least recently used is the first written
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(cache) for f in files)
    assert total <= 4 * size
    assert not os.path.exists(first) and len(_traces(cache)) >= 1
    assert trace_cache.trim(cache, 0) == 0 and _traces(cache) == []


def test_off_switches_store_and_load_nothing(cache):
    K.set_trace_cache(False)
    assert K.trace_cache_dir() is None
    x = torch.randn(8)
    for _ in range(3):
        _run(x, 1)
    assert not os.path.exists(cache)
    K.set_trace_cache(True, directory="")
    assert K.trace_cache_dir() is None
    with pytest.raises(ValueError, match="max_bytes"):
        K.set_trace_cache(max_bytes=-1)


def _python(code, **env):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TGRAD_CACHE", "XDG_CACHE_HOME"))}
    out = subprocess.run([sys.executable, "-c", code], env=dict(base, **env), capture_output=True,
                         text=True, timeout=120)
    return out


@pytest.mark.parametrize("env, want", [({"TGRAD_CACHE": "0"}, "None"), ({"TGRAD_CACHE_DIR": ""}, "None"),
                                       ({"XDG_CACHE_HOME": "/somewhere"}, "/somewhere/tgrad"),
                                       ({"TGRAD_CACHE_DIR": "/else"}, "/else")])
def test_the_environment_switches(env, want):
    out = _python("import tgrad.kernels as K; print(K.trace_cache_dir())", **env)
    assert out.stdout.strip() == want, out.stderr


def test_a_bad_size_is_a_clear_error():
    out = _python("import tgrad.kernels as K; K.trace_cache_dir()", TGRAD_CACHE_SIZE="lots")
    assert out.returncode != 0 and "ValueError: TGRAD_CACHE_SIZE: 'lots' is not a size" in out.stderr


@pytest.mark.executor_replay
def test_info_and_clear_commands(cache):
    for _ in range(2):
        _run(torch.randn(8), 1)
    keep = os.path.join(cache, "not the cache's.txt")
    with open(keep, "w") as f:
        f.write("kept")
    info = _python(f"from tgrad.kernels.cache import main; main(['info', '--dir', {cache!r}])")
    assert "1 traces" in info.stdout and "(this environment)" in info.stdout, info.stderr
    cleared = _python(f"import runpy, sys; sys.argv = ['cache', 'clear', '--dir', {cache!r}]; "
                      "runpy.run_module('tgrad.kernels.cache', run_name='__main__')")
    assert cleared.returncode == 0 and "cleared" in cleared.stdout, cleared.stderr
    assert _traces(cache) == [] and os.path.exists(keep)
    assert json.loads(json.dumps(trace_cache.info(cache)))["environments"] == {}


@pytest.mark.executor_replay
def test_replays_never_touch_the_disk(monkeypatch):
    K.set_replay(verify=False)
    x = torch.randn(8)
    for _ in range(2):
        _run(x, 1)
    calls = []
    for name in ("first_sighting", "store", "learned_varying", "_read", "_write"):
        original = getattr(trace_cache, name)
        monkeypatch.setattr(trace_cache, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    with K.count_replays() as counts:
        for _ in range(20):
            _run(x, 1)
    assert counts["replayed"] == 20 and calls == []
    _new_process()
    _run(x, 1)  # a first sighting in this process: looked up on disk
    assert "first_sighting" in calls and "_read" in calls


def test_environment_hash_closes_the_sources_it_reads(monkeypatch):
    """The environment's hash reads the runtime's sources; each file is closed at once (an unclosed
    one is a ResourceWarning and a descriptor held until the garbage collector finds it)."""
    import gc
    import warnings
    monkeypatch.setattr(trace_cache, "_env", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        digest = trace_cache.environment()
        gc.collect()
    assert len(digest) == 16
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
