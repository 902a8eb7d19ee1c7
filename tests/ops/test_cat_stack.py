"""cat and stack as one launch for N inputs (kernels/indexing/concat.py) against PyTorch: every dtype,
mixed dtypes (promotion, more source dtypes than one launch reads), empty inputs, non-contiguous and
expanded inputs, negative dims, PyTorch's errors, gradients under a random upstream gradient in
float64, the launch count, and repeated calls (the CPU replay of the recorded launch)."""
import pytest
import torch

import tgrad
from support.reference import assert_close, make_pair, raises, upstream

ALL_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
              torch.float32, torch.float64]


def _values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 50
    return (x > 0) if dtype == torch.bool else x.to(dtype)


def _same(got, ref):
    assert got.dtype.torch == ref.dtype and tuple(got.shape) == tuple(ref.shape)
    assert torch.equal(got._data, ref), (got._data, ref)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cat_and_stack_of_each_dtype_are_exact_and_one_launch(dtype):
    parts = [_values((3, n, 2), dtype, seed=n) for n in (1, 4, 2)]
    with tgrad.count_launches() as counts:
        out = tgrad.cat([tgrad.from_torch(p) for p in parts], 1)
    assert counts == {"cat_kernel": 1}
    _same(out, torch.cat(parts, 1))
    same = [_values((3, 2), dtype, seed=i) for i in range(5)]
    with tgrad.count_launches() as counts:
        out = tgrad.stack([tgrad.from_torch(p) for p in same], 1)
    assert counts == {"cat_kernel": 1}
    _same(out, torch.stack(same, 1))


@pytest.mark.parametrize("dtypes", [(torch.bool, torch.int8), (torch.uint8, torch.int8), (torch.int64, torch.float32),
                                    (torch.float16, torch.float32, torch.int32),
                                    (torch.bool, torch.int16, torch.float16, torch.float64),
                                    (torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool, torch.int8)],
                         ids=lambda d: "-".join(str(x).split(".")[1] for x in d))
def test_mixed_dtypes_promote_as_pytorch(dtypes):
    parts = [_values((2, i + 1), d, seed=i) for i, d in enumerate(dtypes)]
    with tgrad.count_launches() as counts:
        out = tgrad.cat([tgrad.from_torch(p) for p in parts], -1)
    _same(out, torch.cat(parts, -1))
    # up to four source dtypes in the launch; past that, the extra inputs are converted first
    assert counts["cat_kernel"] == 1 and (len(set(dtypes)) > 4 or sum(counts.values()) == 1)
    rows = [_values((3,), d, seed=i) for i, d in enumerate(dtypes)]
    _same(tgrad.stack([tgrad.from_torch(r) for r in rows]), torch.stack(rows))


def test_empty_inputs():
    a, b = _values((2, 3), torch.float32, 0), _values((2, 0), torch.float32, 1)
    cases = [([a, b, a], 1), ([b, a, b, b], 1), ([b, b], 1), ([a, torch.zeros(0)], 0), ([torch.zeros(0)] * 2, 0),
             ([torch.zeros(0, dtype=torch.float64), a.int()], 1)]
    for parts, dim in cases:
        _same(tgrad.cat([tgrad.from_torch(p) for p in parts], dim), torch.cat(parts, dim))
    _same(tgrad.stack([tgrad.from_torch(b)] * 3, 1), torch.stack([b] * 3, 1))
    with tgrad.count_launches() as counts:
        tgrad.cat([tgrad.from_torch(b)] * 3, 1)
    assert not counts


def test_non_contiguous_and_expanded_inputs():
    base = _values((6, 8, 5), torch.float64, 0)
    parts = [base.transpose(0, 2)[:, ::2], base.permute(2, 1, 0)[:, 1::2],  # (5, 4, 6)
             torch.arange(5.0, dtype=torch.float64)[:, None, None].expand(5, 3, 6),  # stride 0
             _values((6, 4, 5), torch.float32, 1).permute(2, 1, 0)[:, :3]]  # (5, 3, 6)
    _same(tgrad.cat([tgrad.from_torch(p) for p in parts], 1), torch.cat(parts, 1))
    _same(tgrad.cat([tgrad.from_torch(p) for p in parts], -2), torch.cat(parts, -2))
    same = [p[:, :3] for p in parts]
    for dim in (0, 2, -1, -3):
        _same(tgrad.cat([tgrad.from_torch(p) for p in same], dim), torch.cat(same, dim))
    for dim in (0, 2, 3, -1, -4):
        _same(tgrad.stack([tgrad.from_torch(p) for p in same], dim), torch.stack(same, dim))


@pytest.mark.parametrize("n", [1, 2, 3, 17, 32, 33])
def test_many_inputs_of_different_sizes_repeated(n):
    """The second and later calls replay the recorded launch: new data, new addresses, same results
    (from the fourth, through the planned site: the addresses filled into the plan's table)."""
    for seed in range(5):
        parts = [_values((k % 4, 3), torch.float32, seed * 100 + k) for k in range(n)]
        _same(tgrad.cat([tgrad.from_torch(p) for p in parts]), torch.cat(parts))
        rows = [_values((7,), torch.int64, seed * 100 + k) for k in range(n)]
        _same(tgrad.stack([tgrad.from_torch(r) for r in rows], -1), torch.stack(rows, -1))


@pytest.mark.executor_replay
def test_a_planned_join_of_mixed_dtypes_bools_and_strides_replays_on_each_calls_inputs():
    for seed in range(6):
        base = _values((6, 4), torch.float64, seed)
        parts = [base[:, :3], (base > 0)[1:4, 1:], base.t()[:3, :2].float().t(), base[::2, 1:].to(torch.int32)]
        with tgrad.kernels.count_replays() as counts:
            got = tgrad.cat([tgrad.from_torch(p) for p in parts], 0)
        _same(got, torch.cat(parts, 0))
    assert counts["replayed"] == 1 and counts["recorded"] == 0 and counts["interpreted"] == 0


def test_more_elements_than_one_program():
    parts = [_values((300, 70 * (k + 1)), torch.float32, k) for k in range(3)]
    _same(tgrad.cat([tgrad.from_torch(p) for p in parts], 1), torch.cat(parts, 1))
    big = [_values((200, 400), torch.float16, k) for k in range(2)]
    _same(tgrad.stack([tgrad.from_torch(p.t()) for p in big], 1), torch.stack([p.t() for p in big], 1))


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_gradients_with_mixed_float_dtypes(dim):
    shapes = [(2, 3), (2, 3), (2, 3)]
    shapes = [tuple(s[d] + k if d == dim % 2 else s[d] for d in range(2)) for k, s in enumerate(shapes)]
    dtypes = [tgrad.float64, tgrad.float32, tgrad.float64]
    pairs = [make_pair(s, d, seed=k) for k, (s, d) in enumerate(zip(shapes, dtypes))]
    frozen = tgrad.from_torch(torch.ones(shapes[0], dtype=torch.float64))
    out = tgrad.cat([pairs[0][0].t().t(), frozen, pairs[1][0], pairs[2][0]], dim)
    ref = torch.cat([pairs[0][1], torch.ones(shapes[0], dtype=torch.float64), pairs[1][1], pairs[2][1]], dim)
    assert out.dtype is tgrad.float64 and out.grad_fn.name() == "CatBackward0"
    assert_close(out, ref)
    g, gr = upstream(tuple(ref.shape), tgrad.float64)
    out.backward(g)
    ref.backward(gr)
    for (x, xr), d in zip(pairs, dtypes):
        assert x.grad.dtype is d
        assert_close(x.grad, xr.grad, d)


@pytest.mark.parametrize("dim", [0, 2, -1, -3])
def test_stack_gradients(dim):
    pairs = [make_pair((2, 3), tgrad.float64, seed=k) for k in range(4)]
    out = tgrad.stack([pairs[0][0][:, [2, 0, 1]]] + [p[0] for p in pairs[1:]], dim)
    ref = torch.stack([pairs[0][1][:, [2, 0, 1]]] + [p[1] for p in pairs[1:]], dim)
    assert out.grad_fn.name() == "StackBackward0"
    assert_close(out, ref)
    g, gr = upstream(tuple(ref.shape), tgrad.float64)
    with tgrad.count_launches() as counts:
        out.backward(g)
    ref.backward(gr)
    for x, xr in pairs:
        assert_close(x.grad, xr.grad)
    assert counts.get("cat_kernel", 0) == 0  # the backward is views of the upstream gradient


def test_errors_are_pytorchs():
    x = tgrad.ones(2, 3)
    with raises(TypeError, "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"):
        tgrad.cat(x)
    with raises(TypeError, "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not int"):
        tgrad.stack(5)
    with raises(TypeError, "expected Tensor as element 1 in argument 0, but got int"):
        tgrad.cat([x, 3])
    with raises(TypeError, "expected Tensor as element 1 in argument 0, but got NoneType"):
        tgrad.stack([x, None])
    with raises(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"):
        tgrad.cat([x, x], -3)
    with raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"):
        tgrad.stack([x, x], 3)
    with raises(RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"):
        tgrad.cat([x, tgrad.ones(3)])
    with raises(RuntimeError, "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 "
                              "for tensor number 2 in the list."):
        tgrad.cat([x, x, tgrad.ones(3, 3)], 1)


def test_a_captured_cat_replays_on_new_values():
    """The table holds the inputs' addresses: a CPU graph replays it on whatever they hold now."""
    a, b = tgrad.zeros(4, 3), tgrad.zeros(2, 3, dtype=tgrad.float64)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        out = tgrad.cat([a, b, a.t().t()[:, [2, 1, 0]]])
    for seed in range(2):
        a.copy_(tgrad.from_torch(_values((4, 3), torch.float32, seed)))
        b.copy_(tgrad.from_torch(_values((2, 3), torch.float64, seed + 10)))
        g.replay()
        _same(out, torch.cat([a.torch(), b.torch(), a.torch()[:, [2, 1, 0]]]))


@pytest.mark.usefixtures("replay_verify_mode")
def test_a_sequence_growing_by_one_plans_no_launch_site_and_a_repeated_cat_plans_one():
    # generate's idx = cat((idx, next)): a shape seen once launches as a plain launch (a site planned
    # for it would never replay); a cat of shapes repeated (get_batch's stacks) replays its site
    from tgrad.kernels.indexing.concat import cat_kernel
    g = torch.Generator().manual_seed(0)
    ref = torch.zeros(1, 1, dtype=torch.long)
    idx = tgrad.zeros((1, 1), dtype=tgrad.long)
    for _ in range(12):
        nxt = torch.randint(0, 9, (1, 1), generator=g)
        ref, idx = torch.cat((ref, nxt), 1), tgrad.cat((idx, tgrad.from_torch(nxt)), 1)
        assert torch.equal(idx.torch(), ref)
    sites = cat_kernel.__dict__["_tgrad_replay"].sites
    assert not sites
    rows = [torch.randn(8, generator=g) for _ in range(5)]
    for _ in range(5):
        assert torch.equal(tgrad.stack([tgrad.from_torch(r) for r in rows]).torch(), torch.stack(rows))
    assert len(sites) == 1
