"""Movement ops and basic indexing against PyTorch autograd: values, shapes, grad_fn names, storage sharing, input gradients under a random upstream gradient, setitem (CopySlices) and
PyTorch's error types and messages.

Data is built in float64 and cast (tests/support/reference.py); the torch reference runs in float64 on the
cast numbers. Views cost no kernel, so most cases are cheap; gradients mostly cost one.
"""
import pytest
import torch

import tgrad
from support.reference import assert_close, make_pair, upstream

DTYPES = [tgrad.float32, tgrad.float64]


def shares_storage(a, b):
    return a.torch().untyped_storage().data_ptr() == b.torch().untyped_storage().data_ptr()


# id -> (leaf shape, op applied alike to a tgrad and a torch tensor)
MOVES = {
    "view": ((2, 3, 4), lambda x: x.view(4, 6)),
    "view_infer": ((2, 3, 4), lambda x: x.view(-1, 4)),
    "view_tuple": ((2, 3, 4), lambda x: x.view((3, 8))),
    "view_0d_to_1": ((), lambda x: x.view(1)),
    "view_as": ((2, 6), lambda x: x.view_as(x.reshape(3, 4))),
    "reshape_to_0d": ((1,), lambda x: x.reshape(())),
    "reshape_zero_size": ((0, 3), lambda x: x.reshape(3, -1)),
    "reshape_transposed_copies": ((3, 5), lambda x: x.t().reshape(-1)),
    "reshape_sliced_views": ((4, 6), lambda x: x[:, ::2].reshape(-1)),
    "reshape_rows_step_copies": ((4, 6), lambda x: x[::2].reshape(2, 2, 3)),
    "permute": ((2, 1, 4, 3), lambda x: x.permute(3, 0, 2, 1)),
    "permute_neg_tuple": ((2, 3, 4), lambda x: x.permute((-1, 0, 1))),
    "transpose": ((2, 3, 4), lambda x: x.transpose(0, -1)),
    "transpose_same": ((2, 3), lambda x: x.transpose(1, 1)),
    "swapaxes": ((2, 3, 4), lambda x: x.swapaxes(1, 2)),
    "t": ((3, 5), lambda x: x.t()),
    "t_1d": ((7,), lambda x: x.t()),
    "T_2d": ((3, 5), lambda x: x.T),
    "mT": ((2, 3, 4), lambda x: x.mT),
    "squeeze_all": ((2, 1, 4, 1), lambda x: x.squeeze()),
    "squeeze_dim": ((2, 1, 4, 3), lambda x: x.squeeze(1)),
    "squeeze_dim_not_1": ((2, 1, 4, 3), lambda x: x.squeeze(0)),
    "squeeze_dims": ((1, 3, 1, 2), lambda x: x.squeeze((0, -2))),
    "squeeze_0d": ((), lambda x: x.squeeze()),
    "unsqueeze": ((2, 3), lambda x: x.unsqueeze(1)),
    "unsqueeze_neg": ((2, 3), lambda x: x.unsqueeze(-1)),
    "unsqueeze_0d": ((), lambda x: x.unsqueeze(0)),
    "expand": ((3, 1), lambda x: x.expand(2, 3, 4)),
    "expand_minus1": ((2, 1, 4, 1), lambda x: x.expand(-1, 5, -1, 3)),
    "expand_list": ((1,), lambda x: x.expand([7])),
    "expand_0d": ((), lambda x: x.expand(2, 3)),
    "expand_as": ((4, 1), lambda x: x.expand_as(x.new_zeros(3, 4, 5))),
    "broadcast_to": ((1, 3), lambda x: x.broadcast_to((2, 3))),
    "flatten": ((2, 3, 4), lambda x: x.flatten()),
    "flatten_range": ((2, 1, 4, 3), lambda x: x.flatten(1, 2)),
    "flatten_neg": ((2, 3, 4), lambda x: x.flatten(-2)),
    "flatten_0d": ((), lambda x: x.flatten()),
    "unflatten": ((2, 12), lambda x: x.unflatten(1, (3, -1))),
    "unflatten_neg": ((2, 12), lambda x: x.unflatten(-1, (2, 2, 3))),
    "contiguous_of_transposed": ((3, 5), lambda x: x.t().contiguous()),
    "narrow": ((5, 7), lambda x: x.narrow(1, 2, 3)),
    "narrow_neg_start": ((5, 7), lambda x: x.narrow(-2, -3, 2)),
    "narrow_empty": ((5, 7), lambda x: x.narrow(0, 5, 0)),
    "movedim": ((2, 3, 4), lambda x: x.movedim(0, -1)),
    "movedim_many": ((2, 1, 4, 3), lambda x: x.movedim((0, 3), (2, 0))),
    "select": ((2, 3, 4), lambda x: x.select(1, -1)),
    # basic indexing
    "idx_0": ((3, 4, 5), lambda x: x[0]),
    "idx_neg1": ((3, 4, 5), lambda x: x[-1]),
    "idx_slice": ((3, 4, 5), lambda x: x[1:3]),
    "idx_step": ((7, 4), lambda x: x[::2]),
    "idx_none": ((3, 4), lambda x: x[None]),
    "idx_ellipsis_int": ((3, 4, 5), lambda x: x[..., 1]),
    "idx_int_full_step": ((3, 4, 7), lambda x: x[0, :, ::3]),
    "idx_int_then_none": ((3, 4, 5), lambda x: x[1, None, 2:]),
    "idx_ellipsis_none": ((3, 4), lambda x: x[..., None]),
    "idx_full_slices_alias": ((3, 4), lambda x: x[:, 0:4]),
    "idx_ellipsis_alone": ((3, 4), lambda x: x[...]),
    "idx_colon_alone": ((3, 4), lambda x: x[:]),
    "idx_to_0d": ((3, 4, 5), lambda x: x[-1, 2, -5]),
    "idx_empty_slice": ((3, 4), lambda x: x[2:2]),
    "idx_stop_past_end": ((3, 4), lambda x: x[1:10, 3:]),
    "idx_0d_none": ((), lambda x: x[None, ...]),
    "idx_size1_dim": ((1, 5), lambda x: x[0]),
    # ops on non-contiguous inputs
    "transposed_then_index": ((4, 6), lambda x: x.t()[1:5:2, -1]),
    "stepped_then_permute": ((6, 4, 3), lambda x: x[::2].permute(2, 0, 1)),
    "stepped_then_expand": ((3, 8), lambda x: x[:, ::4].unsqueeze(0).expand(2, 3, 2)),
    "transposed_then_unflatten": ((6, 4), lambda x: x.t().unflatten(1, (3, 2))),
    "expanded_then_reshape": ((3, 1), lambda x: x.expand(3, 4).reshape(12)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(MOVES))
def test_movement_op_matches_torch(case, dtype):
    shape, op = MOVES[case]
    x, xr = make_pair(shape, dtype)
    out, ref = op(x), op(xr)
    assert tuple(out.shape) == tuple(ref.shape) and out.dtype is dtype
    assert_close(out, ref, dtype)
    assert type(out.grad_fn).__name__ == type(ref.grad_fn).__name__, case
    assert out.grad_fn.name() == type(out.grad_fn).__name__
    # a view in torch is a view here: same memory as the leaf
    assert (out._base is x) == (ref._base is xr), case
    if ref._base is xr:
        assert shares_storage(out, x) and out.is_contiguous() == ref.is_contiguous()
    g, gr = upstream(tuple(ref.shape), dtype)
    out.backward(g)
    ref.backward(gr)
    assert_close(x.grad, xr.grad, dtype)


def test_view_and_join_grad_fn_names_and_edges():
    x = make_pair((2, 3), tgrad.float32)[0] * 1.0
    x1 = x.unsqueeze(0)
    names = [(x.view(3, 2), "ViewBackward0"), (x.reshape(6), "ViewBackward0"), (x.t(), "TBackward0"),
             (x.transpose(0, 1), "TransposeBackward0"), (x.permute(1, 0), "PermuteBackward0"),
             (x.unsqueeze(0), "UnsqueezeBackward0"), (x[0], "SelectBackward0"), (x[1:], "SliceBackward0"),
             (x[:, ::2], "SliceBackward0"), (x.split(1)[1], "SplitBackward0"), (x.expand(4, 2, 3), "ExpandBackward0")]
    for out, name in names:
        assert out.grad_fn.name() == name
        assert out.grad_fn.next_functions == ((x.grad_fn, 0),)  # x's MulBackward0
    assert x1.squeeze().grad_fn.name() == "SqueezeBackward0"
    assert x1.squeeze(0).grad_fn.next_functions == ((x1.grad_fn, 0),)
    assert x1.squeeze(0).grad_fn.name() == "SqueezeBackward1"
    assert x.t().contiguous().grad_fn.name() == "CloneBackward0"
    for out, name in ((tgrad.cat([x, x1[0]]), "CatBackward0"), (tgrad.stack([x, x1[0]]), "StackBackward0")):
        assert out.grad_fn.name() == name
        (first, nr0), (second, nr1) = out.grad_fn.next_functions  # one edge per input tensor
        assert first is x.grad_fn and second.name() == "SelectBackward0" and nr0 == nr1 == 0


def test_contiguous_returns_self_when_contiguous():
    x, _ = make_pair((3, 4), tgrad.float32)
    assert x.contiguous() is x
    y = x * 2.0
    assert y.contiguous() is y and y[1:].contiguous() is not None
    t = y.t()
    c = t.contiguous()
    assert c is not t and c.is_contiguous() and not shares_storage(c, y)
    assert_close(c, y.torch().double().t())


def test_reshape_views_when_it_can_and_copies_when_it_must():
    x, _ = make_pair((4, 6), tgrad.float32, requires_grad=False)
    assert shares_storage(x.reshape(2, 12), x) and x.reshape(2, 12)._base is x
    assert shares_storage(x[:, ::2].reshape(-1), x)
    copied = x.t().reshape(-1)
    assert not shares_storage(copied, x) and copied.is_contiguous()
    assert copied.tolist() == x.torch().t().reshape(-1).tolist()



def test_reshape_views_exactly_where_torch_can_view():
    """reshape decides view-or-copy without asking torch's view to fail (shape.py ``_viewable``):
    over strided, sliced, permuted and size-1 layouts it views exactly where torch's view works."""
    import math
    import random
    rng = random.Random(0)
    for _ in range(400):
        shape = [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 4))]
        base = torch.arange(float(math.prod(2 * s for s in shape))).reshape([2 * s for s in shape])
        t = base[tuple(slice(0, 2 * s, rng.choice([1, 2])) for s in shape)][tuple(slice(0, s) for s in shape)]
        t = t.permute(rng.sample(range(len(shape)), len(shape)))
        new, rem = [], t.numel()
        while rem > 1 and len(new) < 4:
            d = rng.choice([d for d in range(1, rem + 1) if rem % d == 0])
            new.append(d)
            rem //= d
        new += [rem] if rem > 1 else []
        new.insert(rng.randint(0, len(new)), 1)
        x = tgrad.from_torch(base).as_strided(t.shape, t.stride(), t.storage_offset())  # the same view, in tgrad
        try:
            t.view(new)
            views = True
        except RuntimeError:
            views = False
        out = x.reshape(new)
        assert shares_storage(out, x) == views
        assert out.grad_fn is None and out.tolist() == t.reshape(new).tolist()


# ------------------------------------------------------------------------------------------
# joins and splits


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat_along_each_dim_with_different_sizes(dtype):
    for dim, shapes in ((0, [(2, 3), (1, 3), (4, 3)]), (1, [(2, 3), (2, 5), (2, 1)]), (-1, [(2, 1, 3), (2, 1, 2)]),
                        (-2, [(3, 0, 2), (3, 2, 2)])):
        pairs = [make_pair(s, dtype, seed=i) for i, s in enumerate(shapes)]
        out = tgrad.cat([p[0] for p in pairs], dim)
        ref = torch.cat([p[1] for p in pairs], dim)
        assert_close(out, ref, dtype)
        assert out.grad_fn.name() == "CatBackward0"
        assert len(out.grad_fn.next_functions) == len(pairs)
        g, gr = upstream(tuple(ref.shape), dtype)
        out.backward(g)
        ref.backward(gr)
        for x, xr in pairs:
            assert_close(x.grad, xr.grad, dtype)


def test_cat_non_contiguous_inputs_and_mixed_grad():
    a, ar = make_pair((5, 3), tgrad.float32)
    b, br = make_pair((3, 7), tgrad.float32, requires_grad=False, seed=1)
    out, ref = tgrad.cat((a.t(), b[:, ::2]), 1), torch.cat((ar.t(), br[:, ::2]), 1)
    assert_close(out, ref)
    assert out.grad_fn.next_functions[1] == (None, 0)
    g, gr = upstream(tuple(ref.shape), tgrad.float32)
    out.backward(g)
    ref.backward(gr)
    assert_close(a.grad, ar.grad)
    assert b.grad is None


def test_cat_promotes_and_skips_legacy_empty_1d():
    out = tgrad.cat([tgrad.tensor([1, 2]), tgrad.tensor([0.5])])
    assert out.dtype is tgrad.float32 and out.tolist() == [1.0, 2.0, 0.5]
    kept = tgrad.cat([tgrad.ones(2, 3), tgrad.zeros(0)], 1)
    assert tuple(kept.shape) == (2, 3)


def test_large_cat_and_stack():
    # more elements than one program holds: the copy kernel runs many programs
    a, ar = make_pair((300, 700), tgrad.float32)
    b, br = make_pair((300, 333), tgrad.float32, seed=1)
    out, ref = tgrad.cat([a, b.t().t()], 1), torch.cat([ar, br], 1)
    assert_close(out, ref)
    g, gr = upstream(tuple(ref.shape), tgrad.float32)
    out.backward(g)
    ref.backward(gr)
    assert_close(a.grad, ar.grad)
    assert_close(b.grad, br.grad)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_stack(dim):
    pairs = [make_pair((2, 3), tgrad.float64, seed=i) for i in range(3)]
    out, ref = tgrad.stack([p[0] for p in pairs], dim), torch.stack([p[1] for p in pairs], dim)
    assert_close(out, ref)
    assert out.grad_fn.name() == "StackBackward0"
    g, gr = upstream(tuple(ref.shape), tgrad.float64)
    out.backward(g)
    ref.backward(gr)
    for x, xr in pairs:
        assert_close(x.grad, xr.grad)


SPLITS = {  # id -> (shape, op)
    "split_int_uneven": ((7, 3), lambda x: x.split(3)),
    "split_sizes_dim1": ((2, 6), lambda x: x.split([1, 0, 5], 1)),
    "split_neg_dim": ((2, 3, 5), lambda x: x.split(2, -1)),
    "chunk": ((7, 3), lambda x: x.chunk(3)),
    "chunk_more_than_size": ((3, 2), lambda x: x.chunk(5)),
    "chunk_dim1": ((2, 6), lambda x: torch.chunk(x, 4, 1) if isinstance(x, torch.Tensor) else tgrad.chunk(x, 4, 1)),
    "chunk_empty_dim": ((0, 2), lambda x: x.chunk(3)),
    "unbind": ((3, 4), lambda x: x.unbind()),
    "unbind_dim1": ((2, 3, 2), lambda x: x.unbind(1)),
}


@pytest.mark.parametrize("case", list(SPLITS))
def test_split_chunk_unbind(case):
    shape, op = SPLITS[case]
    x, xr = make_pair(shape, tgrad.float64)
    outs, refs = op(x), op(xr)
    assert isinstance(outs, tuple) and len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(o, r)
        assert o.grad_fn.name() == type(r.grad_fn).__name__ and o.grad_fn is outs[0].grad_fn
        assert o.output_nr == r.output_nr == i
        assert o._base is x and shares_storage(o, x)
    # gradients from all but the first piece; the unused one gets zeros
    grads = [upstream(tuple(r.shape), tgrad.float64, seed=i) for i, r in enumerate(refs)]
    tgrad.autograd.backward(list(outs[1:]), [g for g, _ in grads[1:]])
    torch.autograd.backward(list(refs[1:]), [gr for _, gr in grads[1:]])
    assert_close(x.grad, xr.grad)


# ------------------------------------------------------------------------------------------
# views share storage


def test_writing_through_a_view_changes_the_base():
    x = tgrad.from_torch(torch.arange(12.0).reshape(3, 4))
    ref = torch.arange(12.0).reshape(3, 4)
    for op in (lambda t: t[1], lambda t: t.t(), lambda t: t.view(-1), lambda t: t[:, ::2], lambda t: t.narrow(1, 1, 2),
               lambda t: t.unsqueeze(0), lambda t: t.permute(1, 0)[2], lambda t: t.split(2)[1],
               lambda t: t.unbind(1)[3], lambda t: t[..., None]):
        v, vr = op(x), op(ref)
        v.mul_(2.0)
        vr.mul_(2.0)
        assert x.tolist() == ref.tolist()
    v = x[2]
    v[1] = 100.0
    assert x[2, 1].item() == 100.0
    x.view(12)[0] = -1.0
    assert x[0, 0].item() == -1.0


# ------------------------------------------------------------------------------------------
# setitem


def test_setitem_on_plain_tensors():
    base = torch.arange(20.0).reshape(4, 5)
    cases = [
        (0, 5.0), ((slice(1, 3),), torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])),
        ((slice(None), 1), torch.tensor([7.0, 8.0, 9.0, 10.0])),
        ((Ellipsis, slice(None, None, 2)), torch.tensor([[1.0], [2.0], [3.0], [4.0]])),  # broadcast value
        ((-1,), torch.ones(1, 1, 5) * 3),  # leading size-1 dims dropped
        ((1, 2), 3), ((slice(0, 4, 3), slice(1, None, 2)), torch.tensor(-1.0)),
        ((None, 2), torch.tensor([4, 5, 6, 7, 8])),  # int values into a float tensor
    ]
    for index, value in cases:
        x, ref = tgrad.from_torch(base.clone()), base.clone()
        x[index] = tgrad.from_torch(value.clone()) if isinstance(value, torch.Tensor) else value
        ref[index] = value
        assert x.tolist() == ref.tolist() and x.dtype is tgrad.float32, index


def test_setitem_value_shape_errors_match_torch():
    x = tgrad.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match the existing size \(3\) "
                                           r"at non-singleton dimension 0\.  Target sizes: \[4\]\.  Tensor sizes: "
                                           r"\[3\]$"):
        x[0] = tgrad.ones(3)
    with pytest.raises(RuntimeError, match=r"^expand\(tgrad\.FloatTensor\{\[2, 4\]\}, size=\[4\]\): the number of "
                                           r"sizes provided \(1\) must be greater or equal to the number of "
                                           r"dimensions in the tensor \(2\)$"):
        x[0] = tgrad.ones(1, 2, 4)
    assert x.tolist() == [[0.0] * 4] * 3  # nothing written


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_setitem_on_non_leaf_gives_copyslices_and_torch_gradients(dtype):
    index_values = [((slice(None), 1), (3,)), ((0,), (4,)), ((slice(1, 3), slice(None, None, 2)), (1, 2)),
                    ((Ellipsis, -1), ())]
    for index, vshape in index_values:
        x, xr = make_pair((3, 4), dtype)
        v, vr = make_pair(vshape, dtype, seed=3)
        z, zr = x * 2.0, xr * 2.0
        z[index] = v * 3.0
        zr[index] = vr * 3.0
        assert type(z.grad_fn).__name__ == "CopySlices" and not z.is_leaf
        assert_close(z, zr, dtype)
        g, gr = upstream((3, 4), dtype)
        (z * g).sum().backward()
        (zr * gr).sum().backward()
        assert_close(x.grad, xr.grad, dtype)
        assert_close(v.grad, vr.grad, dtype)


def test_setitem_constant_and_into_tensor_without_grad():
    x, xr = make_pair((3, 4), tgrad.float64)
    z, zr = x.sin(), xr.sin()  # sin saves its input, which the write leaves alone
    z[1] = 5.0
    zr[1] = 5.0
    g, gr = upstream((3, 4), tgrad.float64)
    z.backward(g)
    zr.backward(gr)
    assert_close(x.grad, xr.grad)
    assert x.grad[1].tolist() == [0.0] * 4
    # a plain tensor takes the history of a value that needs grad
    v, vr = make_pair((4,), tgrad.float64, seed=5)
    y, yr = tgrad.zeros(3, 4, dtype=tgrad.float64), torch.zeros(3, 4, dtype=torch.float64)
    y[2] = v
    yr[2] = vr
    assert y.requires_grad and type(y.grad_fn).__name__ == "CopySlices"
    y.backward(g)
    yr.backward(gr)
    assert_close(v.grad, vr.grad)


def test_views_taken_before_an_in_place_write_see_it_in_their_gradients():
    # a and b alias z; writing z[0, 1] = w[1] must reach w through them (PyTorch regenerates their
    # grad_fn as AsStridedBackward0 of z's new history)
    x, xr = make_pair((2, 3), tgrad.float64)
    w, wr = make_pair((2,), tgrad.float64, seed=2)
    z, zr = x * 2.0, xr * 2.0
    a, b, v = z[0], z[:, 1], z[1]
    ar, br, vr = zr[0], zr[:, 1], zr[1]
    z[0, 1] = w[1]
    zr[0, 1] = wr[1]
    v[2] = w[0] * 3.0  # a write through one view
    vr[2] = wr[0] * 3.0
    assert a.grad_fn.name() == b.grad_fn.name() == type(ar.grad_fn).__name__ == "AsStridedBackward0"
    assert_close(a, ar)
    assert_close(v, vr)
    ga, gar = upstream((3,), tgrad.float64, seed=4)
    gb, gbr = upstream((2,), tgrad.float64, seed=5)
    tgrad.autograd.backward([a, b, v], [ga, gb, ga])
    torch.autograd.backward([ar, br, vr], [gar, gbr, gar])
    assert_close(x.grad, xr.grad)
    assert_close(w.grad, wr.grad)


def test_setitem_on_a_leaf_that_requires_grad():
    x, _ = make_pair((3,), tgrad.float32)
    with pytest.raises(RuntimeError, match=r"^a view of a leaf Variable that requires grad is being used in an "
                                           r"in-place operation\.$"):
        x[0] = 5.0
    with tgrad.no_grad():
        x[0] = 5.0
    assert x[0].item() == 5.0 and x.is_leaf and x.requires_grad


# ------------------------------------------------------------------------------------------
# errors


def _raises(exc, message, fn):
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value) == message


def test_view_and_reshape_errors():
    x = tgrad.ones(2, 3, 4)
    _raises(RuntimeError, "shape '[5, 5]' is invalid for input of size 24", lambda: x.view(5, 5))
    _raises(RuntimeError, "shape '[-1, 5]' is invalid for input of size 24", lambda: x.reshape(-1, 5))
    _raises(RuntimeError, "only one dimension can be inferred", lambda: x.view(-1, -1))
    _raises(RuntimeError, "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension "
                          "size -1 can be any value and is ambiguous", lambda: tgrad.zeros(0, 3).view(-1, 0))
    _raises(RuntimeError, "view size is not compatible with input tensor's size and stride (at least one dimension "
                          "spans across two contiguous subspaces). Use .reshape(...) instead.",
            lambda: x.transpose(0, 1).view(-1))
    _raises(RuntimeError, "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4) in the input "
                          "tensor", lambda: x.unflatten(2, (3, 2)))
    _raises(RuntimeError, "unflatten: sizes must be non-empty", lambda: x.unflatten(2, ()))
    _raises(RuntimeError, "flatten() has invalid args: start_dim cannot come after end_dim", lambda: x.flatten(2, 1))


def test_expand_errors():
    x = tgrad.ones(2, 3, 4, dtype=tgrad.float64)
    _raises(RuntimeError, "The expanded size of the tensor (5) must match the existing size (3) at non-singleton "
                          "dimension 1.  Target sizes: [2, 5, 4].  Tensor sizes: [2, 3, 4]", lambda: x.expand(2, 5, 4))
    _raises(RuntimeError, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0",
            lambda: x.expand(-1, 2, 3, 4))
    _raises(RuntimeError, "expand(tgrad.DoubleTensor{[2, 3, 4]}, size=[3, 4]): the number of sizes provided (2) must "
                          "be greater or equal to the number of dimensions in the tensor (3)", lambda: x.expand(3, 4))


def test_dim_and_permutation_errors():
    x = tgrad.ones(2, 3, 4)
    _raises(IndexError, "Dimension out of range (expected to be in range of [-4, 3], but got 4)",
            lambda: x.unsqueeze(4))
    _raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
            lambda: x.transpose(0, 3))
    _raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got -4)",
            lambda: x.squeeze(-4))
    _raises(RuntimeError, "permute(): duplicate dims are not allowed.", lambda: x.permute(0, 1, 1))
    _raises(RuntimeError, "permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                          "of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2",
            lambda: x.permute(0, 1))
    _raises(RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D", lambda: x.t())
    _raises(RuntimeError, "movedim: repeated dim in `source` ([0, 0])", lambda: x.movedim((0, 0), (1, 2)))
    _raises(RuntimeError, "dim 0 appears multiple times in the list of dims", lambda: x.squeeze((0, -3)))


def test_join_and_split_errors():
    x = tgrad.ones(2, 3, 4)
    _raises(RuntimeError, "Sizes of tensors must match except in dimension 2. Expected size 3 but got size 2 for "
                          "tensor number 1 in the list.", lambda: tgrad.cat([x, tgrad.ones(2, 2, 1)], -1))
    _raises(RuntimeError, "Tensors must have same number of dimensions: got 3 and 2",
            lambda: tgrad.cat([x, tgrad.ones(2, 3)], 1))
    _raises(RuntimeError, "zero-dimensional tensor (at position 0) cannot be concatenated",
            lambda: tgrad.cat([tgrad.tensor(1.0), tgrad.tensor(2.0)]))
    _raises(ValueError, "tgrad.cat(): expected a non-empty list of Tensors", lambda: tgrad.cat([]))
    _raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
            lambda: tgrad.cat([x, x], 3))
    _raises(RuntimeError, "stack expects each tensor to be equal size, but got [2, 3, 4] at entry 0 and [2, 3, 1] at "
                          "entry 1", lambda: tgrad.stack([x, tgrad.ones(2, 3, 1)]))
    _raises(RuntimeError, "stack expects a non-empty TensorList", lambda: tgrad.stack([]))
    _raises(RuntimeError, "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension "
                          "2), but got split_sizes=[1, 2]", lambda: x.split([1, 2], 2))
    _raises(RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0", lambda: x.chunk(0))
    _raises(RuntimeError, "split expects at least a 1-dimensional tensor", lambda: tgrad.tensor(1.0).split(1))
    _raises(RuntimeError, "chunk expects at least a 1-dimensional tensor", lambda: tgrad.tensor(1.0).chunk(1))
    _raises(RuntimeError, "start (3) + length (2) exceeds dimension size (4).", lambda: x.narrow(2, 3, 2))
    _raises(IndexError, "start out of range (expected to be in range of [-4, 4], but got -5)",
            lambda: x.narrow(2, -5, 1))
    _raises(RuntimeError, "narrow(): length must be non-negative.", lambda: x.narrow(2, 0, -1))


def test_indexing_errors():
    x = tgrad.ones(3)
    _raises(IndexError, "index 5 is out of bounds for dimension 0 with size 3", lambda: x[5])
    _raises(IndexError, "index -4 is out of bounds for dimension 0 with size 3", lambda: x[-4])
    _raises(IndexError, "index 2 is out of bounds for dimension 1 with size 2", lambda: tgrad.ones(3, 2)[1, 2])
    _raises(IndexError, "too many indices for tensor of dimension 1", lambda: x[1, 2])
    _raises(IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
                        "to convert a 0-dim tensor to a number", lambda: tgrad.tensor(1.0)[0])
    _raises(IndexError, "slice() cannot be applied to a 0-dim tensor.", lambda: tgrad.tensor(1.0)[0:1])
    _raises(ValueError, "step must be greater than zero", lambda: x[::-1])
    _raises(IndexError, "index 3 is out of bounds for dimension 0 with size 3", lambda: x.__setitem__(3, 1.0))
