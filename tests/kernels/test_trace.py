"""How recorded traces reach memory (kernels/trace.py): views of argument memory, runs of memory
at addresses read from a table, and which computed values a trace may skip.

Each test launches enough times to interpret, record and replay, in verify mode (every replay is
also interpreted from the same memory and the bytes compared) and against a plain reference."""
import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.kernels as K
from tgrad.kernels.elementwise.pointwise import pointwise_kernel
from tgrad.kernels.runtime import memory
from tgrad.kernels.runtime.launch import launch


pytestmark = pytest.mark.usefixtures("replay_verify_mode")


def _sources(kernel):
    state = kernel.__dict__["_tgrad_replay"]
    return [v.source for e in state.entries.values() for v in e.variants]


@triton.jit
def _scale_rows(table, n_rows, EVEN_ONLY: tl.constexpr, BLOCK: tl.constexpr):
    # row r of the table: (address of x, address of out, n); out[i] = 3 x[i] for the live lanes
    for r in range(n_rows):
        x = tl.load(table + 3 * r).to(tl.pointer_type(tl.float32))
        out = tl.load(table + 3 * r + 1).to(tl.pointer_type(tl.float32))
        n = tl.load(table + 3 * r + 2)
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        if EVEN_ONLY:
            mask = mask & (offs % 2 == 0)
        tl.store(out + offs, tl.load(x + offs, mask=mask, other=-1.0) * 3.0, mask=mask)


@pytest.mark.executor_replay
@pytest.mark.parametrize("even_only", [False, True])
def test_loads_and_stores_through_table_addresses_replay_as_the_interpreter(even_only):
    sizes = (5, 16, 1, 11)
    with K.count_replays() as counts:
        for step in range(5):
            xs = [torch.randn(n) for n in sizes]
            outs = [torch.full((n,), 7.0) for n in sizes]
            counts_now = [n - (step % 2) if n > 1 else n for n in sizes]  # n read from the table changes
            table = torch.tensor([v for x, o, n in zip(xs, outs, counts_now) for v in (x.data_ptr(), o.data_ptr(), n)],
                                 dtype=torch.int64)
            launch(_scale_rows, (1,), table, len(sizes), EVEN_ONLY=even_only, BLOCK=16, keep_alive=xs + outs)
            for x, o, n in zip(xs, outs, counts_now):
                want = torch.full_like(x, 7.0)
                live = torch.arange(x.numel()) < n
                if even_only:
                    live &= torch.arange(x.numel()) % 2 == 0
                want[live] = 3 * x[live]
                assert torch.equal(o, want)
    assert counts["replayed"] >= 3
    assert all("_run_load" in s and "_run_store" in s for s in _sources(_scale_rows))


@triton.jit
def _count_hits(counter, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(counter + (x > 0).to(tl.int32), 1, mask=offs < n)  # the old values are never read


def test_an_atomic_whose_result_is_unused_still_runs_in_the_trace():
    for _ in range(5):
        x = torch.randn(13)
        counter = torch.zeros(2, dtype=torch.int32)
        launch(_count_hits, (1,), counter, x, 13, BLOCK=16)
        assert counter.tolist() == [int((x <= 0).sum()), int((x > 0).sum())]


@triton.jit
def _gather_scatter_rows(idx_ptr, w_ptr, out_ptr, dw_ptr, g_ptr, put_ptr, pick_ptr, n, D, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    # out[r] = w[idx[r]], dw[idx[r]] += g[r] and put[idx[r]] = g[r]: addresses computed from loaded
    # indices (an embedding's gather and its backward's scatter-add); repeated indices add in lane
    # order, and the last of them stores
    rows = tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    live = (rows < n)[:, None] & (cols < D)[None, :]
    i = tl.load(idx_ptr + rows, mask=rows < n, other=0)
    v = tl.load(w_ptr + i[:, None] * D + cols[None, :], mask=live, other=-2.0)
    tl.store(out_ptr + rows[:, None] * BLOCK_C + cols[None, :], v)
    tl.store(pick_ptr + rows, tl.load(w_ptr + i * D + rows % D, mask=rows < n, other=-3.0))  # not a row gather
    g = tl.load(g_ptr + rows[:, None] * D + cols[None, :], mask=live, other=0.0)
    tl.atomic_add(dw_ptr + i[:, None] * D + cols[None, :], g, mask=live)
    tl.store(put_ptr + i[:, None] * D + cols[None, :], g, mask=live)


@pytest.mark.executor_replay
@pytest.mark.parametrize("window_lanes", [1, 1 << 20])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_loads_and_atomic_adds_at_addresses_from_data_replay_as_the_interpreter(dtype, window_lanes, monkeypatch):
    # a gather (of rows, and of single elements) and a scatter-add whose addresses come from loaded
    # data replay as numpy on a window of the memory those addresses reach (blocks of window_lanes
    # lanes or more), with the interpreter's bits (the adds' order included); smaller blocks through
    # the interpreter's access
    monkeypatch.setattr(memory, "WINDOW_LANES", window_lanes)
    g = torch.Generator().manual_seed(0)
    with K.count_replays() as counts:
        for n in (9, 12, 12, 5, 16, 16):
            idx = torch.randint(0, 4, (16,), generator=g)  # rows repeat: the adds' order decides the bits
            w = (torch.randn(4, 7, generator=g) * 1e3).to(dtype)
            grads = (torch.randn(16, 7, generator=g) * 10.0 ** torch.randint(-4, 4, (16, 7), generator=g)).to(dtype)
            dw = torch.zeros(4, 7, dtype=dtype)
            out = torch.zeros(16, 8, dtype=dtype)
            put, pick = torch.zeros(4, 7, dtype=dtype), torch.zeros(16, dtype=dtype)
            launch(_gather_scatter_rows, (1,), idx, w, out, dw, grads, put, pick, n, 7, BLOCK_R=16, BLOCK_C=8)
            want = torch.full((16, 8), -2.0, dtype=dtype)
            want[:n, :7] = w[idx[:n]]
            assert torch.equal(out, want)
            want_pick = torch.full((16,), -3.0, dtype=dtype)
            want_pick[:n] = w[idx[:n], torch.arange(n) % 7]
            assert torch.equal(pick, want_pick)
            want_dw, want_put = torch.zeros(4, 7, dtype=dtype), torch.zeros(4, 7, dtype=dtype)
            for r in range(n):  # in lane order, as the interpreter adds and stores
                want_dw[idx[r]] += grads[r]
                want_put[idx[r]] = grads[r]
            assert torch.equal(dw, want_dw)
            assert torch.equal(put, want_put)
    assert counts["replayed"] >= 2
    assert all("_load_rows" in s and "_load_addresses" in s and "_atomic_add" in s and "_store_addresses" in s
               for s in _sources(_gather_scatter_rows))


@triton.jit
def _masked_copy(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


@pytest.mark.executor_replay
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_masked_stores_write_through_views_of_the_output(dtype):
    for _ in range(4):
        x = torch.randn(37).to(dtype)
        out = torch.zeros(40, dtype=dtype)
        launch(_masked_copy, (3,), out, x, 37, BLOCK=16)
        assert torch.equal(out[:37], x + 1) and torch.equal(out[37:], torch.zeros(3, dtype=dtype))
    assert any(".__setitem__" in s for s in _sources(_masked_copy))
    assert not any("native.store" in s for s in _sources(_masked_copy))


@triton.jit
def _pick_flagged(out_ptr, x_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    flags = tl.load(flag_ptr + offs, mask=offs < n, other=0)
    live = (offs < n) & (flags > 0)  # a mask from data: lanes past n are never read
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=live, other=-2.0), mask=offs < n)


@pytest.mark.executor_replay
def test_a_load_masked_by_data_reads_only_its_live_lanes():
    for _ in range(5):
        x = torch.randn(21)
        flags = torch.randint(0, 2, (21,), dtype=torch.int32)
        out = torch.empty(21)
        launch(_pick_flagged, (1,), out, x, flags, 21, BLOCK=64)
        assert torch.equal(out, torch.where(flags > 0, x, torch.tensor(-2.0)))
    assert any("_gather" in s for s in _sources(_pick_flagged))


def _builder_calls(kernel):
    state = kernel.__dict__["_tgrad_replay"]
    return {f.spec[1] for e in state.entries.values() for v in e.variants for f in v.namespace.values()
            if getattr(f, "spec", ("",))[0] == "builder"}


@triton.jit
def _random_sums(out_ptr, seed, offset, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    r = tl.randint(seed, offset + offs)  # Philox: 32-bit umulhi rounds, xors and shifts
    live = ((offs < n) & (r % 3 != 0)) | ((offs == 0) ^ (offs >= BLOCK))  # masks combined as bools
    tl.store(out_ptr + offs, r, mask=live)
    tl.store(out_ptr + BLOCK, tl.sum(tl.where(live, r & 255, 0), axis=0))


@pytest.mark.executor_replay
def test_philox_rounds_and_mask_logic_replay_inline_as_the_interpreter():
    """A random kernel's trace computes umulhi and the masks' and/or/xor in numpy, not through the
    interpreter's builder; verify mode compares each replay with a fresh interpretation."""
    with K.count_replays() as counts:
        for seed, offset, n in [(1, 0, 20), (2, 64, 30), (7, 5, 64), (9, 1000, 3), (11, 3, 41)]:
            out = torch.zeros(65, dtype=torch.int32)
            launch(_random_sums, (1,), out, seed, offset, n, BLOCK=64)
            live = out[:64] != 0
            assert int(out[64]) == int((out[:64][live] & 255).sum())
    assert counts["replayed"] >= 2
    assert not _builder_calls(_random_sums) & {"create_umulhi", "create_and", "create_or", "create_xor"}


@triton.jit
def _shifted_copy(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-1.0) * 2.0, mask=offs < n)


@pytest.mark.executor_replay
def test_a_prefix_mask_over_a_varying_size_is_a_slice():
    """``offs < n`` with ``n`` varying between launches: the live lanes are the first n - offs[0]
    (clipped to the block), read and written as slices; lanes past them keep their memory."""
    sizes = [5, 16, 1, 0, 11, 40, 17, 32, 3]
    with K.count_replays() as counts:
        for n in sizes:
            x = torch.randn(48)
            out = torch.full((48,), 7.0)
            launch(_shifted_copy, (2,), out, x, n, BLOCK=16)
            m = min(n, 32)
            assert torch.equal(out[:m], x[:m] * 2) and torch.equal(out[m:], torch.full((48 - m,), 7.0))
    assert counts["replayed"] >= 3
    sources = _sources(_shifted_copy)
    assert any("_prefix_load" in s and "_prefix_store" in s for s in sources)


@triton.jit
def _store_then_reuse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=5.0)
    tl.store(x_ptr + offs, x + 1.0, mask=offs < n)  # x's memory changes: x itself must not
    tl.store(y_ptr + offs, tl.where(x > 0, x * 2.0, -x), mask=offs < n)


@pytest.mark.executor_replay
@pytest.mark.parametrize("n", [1, 21, 63])
def test_a_block_whose_live_lanes_are_a_prefix_computes_on_those_lanes_alone(n):
    """A constant mask whose live lanes are the block's first n, lane-wise ops between: the trace reads
    the n lanes in place, computes on them alone, and keeps a load it reads after a store as loaded."""
    with K.count_replays() as counts:
        for _ in range(5):
            x = torch.randn(n)
            y = torch.full((n,), 7.0)
            want_x, want_y = x + 1, torch.where(x > 0, x * 2, -x)
            launch(_store_then_reuse, (1,), x, y, n, BLOCK=64)
            assert torch.equal(x, want_x) and torch.equal(y, want_y)
    assert counts["replayed"] >= 3
    (source,) = _sources(_store_then_reuse)
    assert "_fill" not in source and "(64,)" not in source and ".copy()" in source


def test_planned_pointwise_ops_on_a_partial_block_run_lane_wise_traces():
    a, b = tgrad.randn(37, dtype=tgrad.float64), tgrad.randn(37, dtype=tgrad.float64)
    for _ in range(4):
        got = (a + b, a.relu(), a * 2.5)
    want = (a.torch() + b.torch(), a.torch().relu(), a.torch() * 2.5)
    assert all(torch.equal(g.torch(), w) for g, w in zip(got, want))
    sources = [s for s in _sources(pointwise_kernel) if "(37,)" in s or "296, " in s]
    assert sources and not any("_fill" in s for s in sources)


@triton.jit
def _transpose_tile(x_ptr, out_ptr, sx0, sx1, M: tl.constexpr, N: tl.constexpr):
    # out (N, M) = x^T: the load reads x through (sx1, sx0), a strided grid, and the store writes out
    # through its own strides transposed back
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    tile = tl.load(x_ptr + rn[:, None] * sx1 + rm[None, :] * sx0)
    tl.store(out_ptr + rm[None, :] + rn[:, None] * M, tile * 2.0)
    tl.store(out_ptr + N * M + rm[:, None] * N + rn[None, :], tl.trans(tile))


@pytest.mark.executor_replay
def test_a_strided_tile_is_a_strided_view_not_a_gather():
    with K.count_replays() as counts:
        for _ in range(4):
            x = torch.randn(8, 16)
            out = torch.empty(2 * 16 * 8)
            launch(_transpose_tile, (1,), x, out, x.stride(0), x.stride(1), M=8, N=16)
            assert torch.equal(out[:128].view(16, 8), 2 * x.t())
            assert torch.equal(out[128:].view(8, 16), x)
    assert counts["replayed"] >= 2
    assert all("np.ndarray((16, 8)" in s for s in _sources(_transpose_tile))


@triton.jit
def _channel_tile(x_ptr, out_ptr, C: tl.constexpr, NB: tl.constexpr, HW: tl.constexpr):
    # a (C, N*HW) tile of an NCHW tensor, as batch norm reads it: its offsets jump where n changes,
    # an affine grid once that dim is split into (N, HW); the store writes it back the same way
    c = tl.arange(0, C)[:, None]
    r = tl.arange(0, NB * HW)[None, :]
    off = c * HW + (r // HW) * (C * HW) + r % HW
    tile = tl.load(x_ptr + off)
    tl.store(out_ptr + off, tile * 3.0 - tl.sum(tile, 1)[:, None])


@pytest.mark.executor_replay
def test_a_tile_affine_once_its_dims_are_split_is_a_strided_view_not_a_gather():
    with K.count_replays() as counts:
        for _ in range(4):
            x = torch.randn(4, 8, 16)
            out = torch.empty_like(x)
            launch(_channel_tile, (1,), x, out, C=8, NB=4, HW=16)
            tile = x.transpose(0, 1).reshape(8, 64)
            want = (tile * 3.0 - tile.sum(1, keepdim=True)).reshape(8, 4, 16).transpose(0, 1)
            assert torch.allclose(out, want, rtol=1e-6, atol=1e-5)
    assert counts["replayed"] >= 2
    (source,) = _sources(_channel_tile)
    assert "np.ndarray((8, 4, 16)" in source and "[i" not in source and "__setitem__(i" not in source


@triton.jit
def _bits_then_store(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    bits = x.to(tl.int32, bitcast=True)  # a view of x's lanes, taken before x's memory changes
    tl.store(x_ptr + offs, tl.where(x > 0, x, 0.0), mask=offs < n)
    tl.store(y_ptr + offs, bits, mask=offs < n)


@pytest.mark.executor_replay
def test_a_live_lane_loads_bitcast_read_after_a_store_keeps_the_loaded_bits():
    for _ in range(5):
        x = torch.randn(21)
        y = torch.zeros(21, dtype=torch.int32)
        want_x, want_y = x.clamp(min=0), x.view(torch.int32).clone()
        launch(_bits_then_store, (1,), x, y, 21, BLOCK=64)
        assert torch.equal(x, want_x) and torch.equal(y, want_y)


@triton.jit
def _scans(x_ptr, out_ptr, n, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, tl.cumsum(x, 0, reverse=REVERSE), mask=offs < n)
    tl.store(out_ptr + BLOCK + offs, tl.cumprod(tl.where(offs < n, x, 1), 0, reverse=REVERSE), mask=offs < n)


@pytest.mark.executor_replay
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_cumulative_sums_and_products_replay_as_the_interpreter(dtype, reverse):
    # tl.cumsum / tl.cumprod replay as numpy's cumsum / cumprod (flipped for reverse), the bits and
    # dtype the interpreter's scan gives (verify mode compares every replay with it)
    g = torch.Generator().manual_seed(0)
    with K.count_replays() as counts:
        for n in (5, 7, 7, 3, 8, 8):
            x = (torch.rand(8, generator=g) * 2 + 0.5).to(dtype) if dtype.is_floating_point else \
                torch.randint(-3, 4, (8,), generator=g, dtype=dtype)
            out = torch.zeros(16, dtype=dtype)
            launch(_scans, (1,), x, out, n, REVERSE=reverse, BLOCK=8)
            live = x[:n].flip(0) if reverse else x[:n]
            sums, prods = live.cumsum(0), live.cumprod(0)
            if reverse:
                sums, prods = sums.flip(0), prods.flip(0)
            if dtype.is_floating_point:
                torch.testing.assert_close(out[:n], sums.to(dtype))
                torch.testing.assert_close(out[8:8 + n], prods.to(dtype))
            else:
                assert torch.equal(out[:n], sums.to(dtype)) and torch.equal(out[8:8 + n], prods.to(dtype))
    assert counts["replayed"] >= 2


@triton.jit
def _bool_xor(out_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    # Triton loads and stores a bool pointer through an int8 pointer (a pointer bitcast)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=offs < n) != tl.load(b_ptr + offs, mask=offs < n),
             mask=offs < n)


@pytest.mark.executor_replay
@pytest.mark.parametrize("n", [16, 13])
def test_bool_loads_and_stores_are_views_of_the_tensors_not_computed_addresses(n):
    with K.count_replays() as counts:
        for _ in range(4):
            a, b = torch.rand(n) > 0.5, torch.rand(n) > 0.5
            out = torch.ones(16, dtype=torch.bool)
            launch(_bool_xor, (1,), out, a, b, n, BLOCK=16)
            assert torch.equal(out[:n], a != b) and out[n:].all()
    assert counts["replayed"] >= 2
    sources = _sources(_bool_xor)
    assert sources and all("memory_view(A[0]" in s and "_addresses" not in s and "native." not in s for s in sources)
