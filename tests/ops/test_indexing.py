"""Integer-tensor and boolean-mask indexing, index_select/gather/scatter_add, masked ops, sort.

Every case runs tgrad and torch (float64, on the same cast-down numbers) side by side: the forward
values, then the gradient of the input (and of assigned values) for a random upstream gradient.
Indices follow PyTorch: tensors, lists and masks mix with ints/slices/None/...; adjacent index
tensors broadcast in place, separated ones put their broadcast dims first; negative indices wrap;
an out-of-range index raises IndexError before any indexing kernel runs.
"""
import pytest
import torch

import tgrad
import tgrad.kernels.reductions.sort as KS
from support.reference import assert_close, uniform64
from tgrad.kernels import count_launches

I = lambda *v, dtype=torch.int64: torch.tensor(list(v), dtype=dtype)  # noqa: E731
B = lambda *v: torch.tensor(list(v), dtype=torch.bool)  # noqa: E731
DTYPES = [torch.float32, torch.float64]


def _tg(index):
    """The same index for tgrad: torch tensors become tgrad tensors (copies), the rest is kept."""
    if isinstance(index, tuple):
        return tuple(_tg(i) for i in index)
    return tgrad.from_torch(index.clone()) if isinstance(index, torch.Tensor) else index


def _reversed_strides(t):
    """t's values, stored with reversed strides (transposed memory order)."""
    order = tuple(reversed(range(t.dim())))
    return t.permute(order).contiguous().permute(order)


def _leaf(shape, dtype, layout="contiguous", seed=0, low=-2.0, high=2.0):
    """(tgrad leaf, torch float64 leaf) with equal values; 'transposed' stores x with reversed strides."""
    data = uniform64(shape, low, high, seed).to(dtype)
    if layout == "transposed":
        data = _reversed_strides(data)
    x = tgrad.from_torch(data).requires_grad_()
    return x, data.double().requires_grad_()


def _upstream(shape, dtype, seed=7):
    g = uniform64(shape, seed=seed).to(dtype)
    return tgrad.from_torch(g.clone()), g.double()


def _check_forward_backward(y, r, x, ref, dtype, node):
    assert_close(y, r)
    assert type(y.grad_fn).__name__ == node
    g, gr = _upstream(r.shape, dtype)
    y.backward(g)
    r.backward(gr)
    assert_close(x.grad, ref.grad)


# ----------------------------------------------------------------------------- getitem

GETITEM = {
    "tensor": ((5, 3), (I(4, 0, 2),)),
    "list_with_duplicates": ((3, 4), ([0, 2, 2],)),
    "columns": ((4, 5), (slice(None), I(4, 1, 1, 0))),
    "broadcast_pair": ((4, 5), (I(0, 3, 2).reshape(3, 1), I(1, 4))),
    "non_adjacent": ((3, 4, 5), (I(0, 2, 2), slice(None), I(4, 0, 1))),
    "non_adjacent_with_none": ((3, 4, 5), (None, I(1, 2), slice(1, 3), I(0, 4).reshape(2, 1))),
    "non_adjacent_late": ((2, 3, 4, 5), (slice(None), I(0, 2), slice(None), I(4, 1))),
    "int_then_tensor": ((3, 4, 5), (1, slice(None), I(0, 4))),  # the int is a select, as in PyTorch
    "ellipsis": ((2, 3, 4), (Ellipsis, I(3, 0))),
    "step_slice": ((6, 5), (slice(None, None, 2), I(1, 3))),
    "negative": ((6,), (I(-1, -6, 0, -1),)),
    "int32": ((4, 3), (I(3, 1, -2, dtype=torch.int32),)),
    "mask": ((5, 3), (B(True, False, True, True, False),)),
    "mask_2d_on_3d": ((3, 4, 2), (uniform64((3, 4), seed=3) > 0,)),
    "mask_trailing_dims": ((3, 4, 2), (slice(None), uniform64((4, 2), seed=4) > 0)),
    "mask_with_tensor": ((3, 4), (B(True, False, True), I(1, 3))),
    "mask_all_false": ((4,), (B(False, False, False, False),)),
    "bool_scalar_true": ((3,), (torch.tensor(True),)),
    "bool_scalar_false": ((2, 3), (torch.tensor(False),)),
    "0d_input_true": ((), (torch.tensor(True),)),
    "empty_index": ((4, 3), (torch.zeros(0, dtype=torch.int64),)),
    "zero_size_input": ((0, 3), (slice(None), I(2, 0))),
}


@pytest.mark.parametrize("case", list(GETITEM))
@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem_matches_torch(case, dtype):
    shape, index = GETITEM[case]
    x, ref = _leaf(shape, dtype, layout="transposed" if dtype is torch.float64 else "contiguous")
    _check_forward_backward(x[_tg(index)], ref[index], x, ref, dtype, "IndexBackward0")


def test_duplicate_indices_accumulate_in_backward():
    x = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 2, 2, 2]].backward(tgrad.tensor([1.0, 10.0, 100.0, 1000.0]))
    assert x.grad.tolist() == [1.0, 0.0, 1110.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_from_the_tensor_itself(dtype):
    x, ref = _leaf((4, 5, 3), dtype, layout="transposed")
    y = x[x > 0]
    _check_forward_backward(y, ref[ref > 0], x, ref, dtype, "IndexBackward0")


def test_result_is_a_copy_and_half_precision_accumulates_in_float():
    x = tgrad.from_torch(torch.ones(3, dtype=torch.float16)).requires_grad_()
    y = x[[1, 1]]
    y._data.fill_(5.0)
    assert x.tolist() == [1.0, 1.0, 1.0]
    y.backward(tgrad.from_torch(torch.tensor([1024.0, 1.0], dtype=torch.float16)))
    assert x.grad.dtype is tgrad.float16 and x.grad.tolist() == [0.0, 1025.0, 0.0]


@pytest.mark.parametrize("index, message", [
    ((I(0, 5),), "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), I(-5)), "index -5 is out of bounds for dimension 1 with size 4"),  # PyTorch says 0
    ((I(1), I(7)), "index 7 is out of bounds for dimension 1 with size 4"),
    (([0, 3],), "index 3 is out of bounds for dimension 0 with size 3"),
    ((I(4, 3, 9),), "index 4 is out of bounds for dimension 0 with size 3"),
])
def test_out_of_range_raises_before_indexing(index, message):
    x = tgrad.zeros(3, 4)
    with count_launches() as launches, pytest.raises(IndexError) as err:
        x[_tg(index)]
    assert str(err.value) == message
    assert launches["index_kernel"] == 0
    with pytest.raises(IndexError, match="out of bounds"):
        x[_tg(index)] = 1.0


@pytest.mark.parametrize("index, error, message", [
    ((B(True, False),), IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ((slice(None), B(True, False, True)), IndexError,
     "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [3, 4] at index 1"),
    ((torch.tensor([0.0, 1.0]),), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ((I(0, 1), I(0, 1, 2)), IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ((I(0), 0, 0), IndexError, "too many indices for tensor of dimension 2"),
])
def test_bad_indices_raise_torch_errors(index, error, message):
    with pytest.raises(error) as err:
        tgrad.zeros(3, 4)[_tg(index)]
    assert str(err.value) == message


# ----------------------------------------------------------------------------- setitem

SETITEM = {
    "tensor_rows": ((4, 3), (I(3, 0),), (2, 3)),
    "broadcast_value": ((4, 3), (I(-1, 1),), (1, 3)),
    "scalar_value": ((4, 3), (slice(None), I(2, 0)), None),
    "pair": ((4, 5), (I(0, 3, 2), I(1, 4, 0)), (3,)),
    "non_adjacent": ((3, 4, 5), (I(0, 2), slice(None), I(4, 1)), (2, 4)),
    "mask": ((5, 3), (B(True, False, True, True, False),), (3, 3)),
    "mask_scalar_value": ((3, 4), (uniform64((3, 4), seed=5) > 0,), None),
    "mask_2d_row_value": ((3, 4, 2), (uniform64((3, 4), seed=6) > 0,), (2,)),
}


def _setitem_pair(case, dtype):
    shape, index, vshape = SETITEM[case]
    if vshape is None:
        return 2.5, 2.5
    v = uniform64(vshape, seed=11).to(dtype)
    return tgrad.from_torch(v.clone()), v.double()


@pytest.mark.parametrize("case", list(SETITEM))
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_values(case, dtype):
    shape, index, _ = SETITEM[case]
    data = uniform64(shape).to(dtype)
    x, ref = tgrad.from_torch(data.clone()), data.double()
    value, rvalue = _setitem_pair(case, dtype)
    before = x._version
    x[_tg(index)] = value
    ref[index] = rvalue
    assert_close(x, ref)
    assert x._version == before + 1


@pytest.mark.parametrize("case", list(SETITEM))
@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_gradients(case, dtype):
    shape, index, _ = SETITEM[case]
    a, ra = _leaf(shape, dtype)
    value, rvalue = _setitem_pair(case, dtype)
    if isinstance(value, tgrad.Tensor):
        value.requires_grad_()
        rvalue.requires_grad_()
    y, r = a * 2.0, ra * 2.0
    y[_tg(index)] = value
    r[index] = rvalue
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    assert_close(y, r)
    g, gr = _upstream(shape, dtype)
    y.backward(g)
    r.backward(gr)
    assert_close(a.grad, ra.grad)
    if isinstance(value, tgrad.Tensor):
        assert_close(value.grad, rvalue.grad)


def test_setitem_through_a_view_of_a_non_leaf_and_on_a_plain_leaf_with_grad_value():
    a, ra = _leaf((3, 4), torch.float64)
    v = tgrad.tensor([5.0, 6.0], dtype=tgrad.float64, requires_grad=True)
    rv = torch.tensor([5.0, 6.0], dtype=torch.float64, requires_grad=True)
    y, r = a * 1.0, ra * 1.0
    y[1][_tg(I(0, 3))] = v  # an in-place op on a view rebases y's history (CopySlices)
    r[1][I(0, 3)] = rv
    g, gr = _upstream((3, 4), torch.float64)
    y.backward(g)
    r.backward(gr)
    assert_close(a.grad, ra.grad)
    assert_close(v.grad, rv.grad)
    # a leaf that does not require grad takes the value's history
    z, rz = tgrad.zeros(4, dtype=tgrad.float64), torch.zeros(4, dtype=torch.float64)
    z[_tg(B(True, False, False, True))] = v
    rz[B(True, False, False, True)] = rv
    assert z.requires_grad and type(z.grad_fn).__name__ == "IndexPutBackward0"
    z.backward(tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64))
    rz.backward(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))
    assert_close(v.grad, rv.grad)


def test_setitem_errors():
    leaf = tgrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        leaf[_tg(I(0))] = 1.0
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        tgrad.zeros(2, 3, requires_grad=True)[0][_tg(I(0))] = 1.0
    with tgrad.no_grad():
        leaf[_tg(I(0, 2))] = 1.0
    assert leaf.tolist() == [1.0, 0.0, 1.0] and leaf.is_leaf
    x = tgrad.zeros(3)
    with pytest.raises(RuntimeError) as err:
        x[_tg(I(0, 1))] = tgrad.ones(3)
    assert str(err.value) == ("shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of "
                              "shape [2]")
    with pytest.raises(RuntimeError) as err:
        x[_tg(I(0))] = tgrad.ones(1, dtype=tgrad.float64)
    assert str(err.value) == ("Index put requires the source and destination dtypes match, got Float for the "
                              "destination and Double for the source.")


# ----------------------------------------------------------------------------- masked_fill, masked_select

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_broadcast_mask_and_tensor_value(dtype):
    x, ref = _leaf((3, 4), dtype, layout="transposed")
    mask = uniform64((4,), seed=2) > 0
    _check_forward_backward(x.masked_fill(_tg(mask), -1.5), ref.masked_fill(mask, -1.5), x, ref, dtype,
                            "MaskedFillBackward0")
    v = tgrad.tensor(3.0, dtype=tgrad.float64, requires_grad=True)
    rv = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    x2, ref2 = _leaf((2, 4), torch.float64)
    y, r = tgrad.masked_fill(x2, _tg(mask), v), torch.masked_fill(ref2, mask, rv)
    _check_forward_backward(y, r, x2, ref2, torch.float64, "MaskedFillBackward0")
    assert_close(v.grad, rv.grad)


def test_masked_fill_in_place():
    a, ra = _leaf((3, 5), torch.float32)
    mask = uniform64((3, 5), seed=9) > 0.5
    y, r = a * 3.0, ra * 3.0
    y.masked_fill_(_tg(mask), 0.25)
    r.masked_fill_(mask, 0.25)
    assert type(y.grad_fn).__name__ == "MaskedFillBackward0"
    g, gr = _upstream((3, 5), torch.float32)
    y.backward(g)
    r.backward(gr)
    assert_close(a.grad, ra.grad)
    plain = tgrad.zeros(3)
    plain.masked_fill_(tgrad.tensor([True, False, True]), 7.0)
    assert plain.tolist() == [7.0, 0.0, 7.0] and plain._version == 1
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
        a.masked_fill_(_tg(mask), 1.0)
    with pytest.raises(RuntimeError) as err:
        plain.masked_fill(tgrad.ones(3), 1.0)
    assert str(err.value) == "masked_fill_ only supports boolean masks, but got mask with dtype float"
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        plain.masked_fill_(tgrad.ones(2, 3, dtype=tgrad.bool), 1.0)


@pytest.mark.parametrize("xshape, mshape", [((3, 4), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 4)), ((), ())])
def test_masked_select(xshape, mshape):
    x, ref = _leaf(xshape, torch.float64)
    mask = uniform64(mshape, seed=12) > 0 if mshape else torch.tensor(True)
    _check_forward_backward(x.masked_select(_tg(mask)), ref.masked_select(mask), x, ref, torch.float64,
                            "MaskedSelectBackward0")


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (), (0, 3)])
def test_nonzero(shape):
    data = uniform64(shape, seed=1) > 0.3 if shape else torch.tensor(0.5)
    x = _tg(data)
    assert torch.equal(tgrad.nonzero(x).torch(), torch.nonzero(data))
    for got, want in zip(x.nonzero(as_tuple=True), torch.nonzero(data, as_tuple=True)):
        assert torch.equal(got.torch(), want)


# ----------------------------------------------------------------------------- index_select, gather, scatter_add

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dtype, dim):
    x, ref = _leaf((3, 5), dtype, layout="transposed")
    idx = I(2, 0, 2) if dim == 0 else I(4, 0, 4, 1)
    _check_forward_backward(x.index_select(dim, _tg(idx)), ref.index_select(dim, idx), x, ref, dtype,
                            "IndexSelectBackward0")


def test_index_select_errors():
    x = tgrad.zeros(3, 4)
    with pytest.raises(IndexError, match=r"^index out of range in self \(index 3 for dimension 0 with size 3\)$"):
        x.index_select(0, tgrad.tensor([3]))
    with pytest.raises(RuntimeError, match=r"^INDICES element is out of DATA bounds, id=4 axis_dim=4 \(dimension 1\)$"):
        x.index_select(1, tgrad.tensor([4]))  # (PyTorch's fast path for dim 1 raises this)
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(1, tgrad.tensor([[1]]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim, index", [
    (1, [[0, 4, 4, 1], [2, 2, 2, 2], [3, 0, 1, 4]]),
    (0, [[2, 0, 1, 1, 0], [0, 0, 2, 2, 1]]),
    (1, [[1], [0]]),  # smaller than x apart from dim
])
def test_gather(dtype, dim, index):
    x, ref = _leaf((3, 5), dtype, layout="transposed")
    idx = torch.tensor(index)
    _check_forward_backward(x.gather(dim, _tg(idx)), torch.gather(ref, dim, idx), x, ref, dtype, "GatherBackward0")


def test_gather_errors():
    x = tgrad.zeros(3, 4)
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 1 with size 4$"):
        x.gather(1, tgrad.tensor([[5]]))
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds for dimension 1 with size 4$"):
        x.gather(1, tgrad.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, tgrad.tensor([1]))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.gather(1, tgrad.tensor([[1.0]]))


def test_scatter_add():
    x, ref = _leaf((3, 5), torch.float64)
    src, rsrc = _leaf((2, 4), torch.float64, seed=3)
    idx = torch.tensor([[0, 4, 4, 1], [2, 2, 2, 2]])
    y, r = x.scatter_add(1, _tg(idx), src), ref.scatter_add(1, idx, rsrc)
    _check_forward_backward(y, r, x, ref, torch.float64, "ScatterAddBackward0")
    assert_close(src.grad, rsrc.grad)
    # a src larger than index: the elements past index's extent are unused and get zero gradient
    big = tgrad.from_torch(uniform64((2, 6), seed=4)).requires_grad_()
    g, gr = _upstream((3, 5), torch.float64)
    x.detach().scatter_add(1, _tg(idx), big).backward(g)
    expected = torch.zeros(2, 6, dtype=torch.float64)
    expected[:, :4] = gr.gather(1, idx)
    assert_close(big.grad, expected)


# ----------------------------------------------------------------------------- sort, argsort, randperm

def _sort_input(shape, dtype, ties=False, seed=0):
    data = uniform64(shape, seed=seed)
    return (data * 2).round().to(dtype) if ties else data.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim", [((4, 7), 1), ((4, 7), 0), ((3, 17), -1), ((5, 1), 1), ((3, 0), 1),
                                        ((0, 4), 1), ((100,), 0), ((), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_values_indices_and_gradient(dtype, shape, dim, descending):
    data = _sort_input(shape, dtype, ties=True)
    x = tgrad.from_torch(_reversed_strides(data)).requires_grad_()
    ref = data.double().requires_grad_()
    values, indices = tgrad.sort(x, dim, descending=descending)
    rv, ri = torch.sort(ref, dim=dim, descending=descending, stable=True)
    assert torch.equal(indices.torch(), ri) and indices.dtype is tgrad.int64 and not indices.requires_grad
    _check_forward_backward(values, rv, x, ref, dtype, "SortBackward0")
    assert torch.equal(x.argsort(dim, descending=descending).torch(), ri)


def test_sort_nan_inf_order_and_other_dtypes():
    data = torch.tensor([1.0, float("nan"), -1.0, float("inf"), float("nan"), float("-inf"), 1.0])
    for descending in (False, True):
        v, i = tgrad.from_torch(data).sort(descending=descending)
        rv, ri = torch.sort(data, descending=descending, stable=True)
        assert torch.equal(i.torch(), ri)
        torch.testing.assert_close(v.torch(), rv, equal_nan=True)
    ints = torch.tensor([[3, -1, 3, 0, 7], [2, 2, 2, 1, 2]])
    assert torch.equal(tgrad.argsort(_tg(ints), 1).torch(), torch.sort(ints, dim=1, stable=True).indices)
    bools = uniform64((9,), seed=2) > 0
    assert torch.equal(tgrad.sort(_tg(bools)).values.torch(), torch.sort(bools).values)


@pytest.mark.parametrize("descending", [False, True])
def test_rows_longer_than_one_block_merge_across_blocks(monkeypatch, descending):
    monkeypatch.setattr(KS, "sort_block_limit", lambda device: 4)
    data = _sort_input((37, 3), torch.float32, ties=True).t()  # rows of 37 -> 64 padded, 16 blocks
    v, i = tgrad.sort(_tg(data), 1, descending=descending)
    rv, ri = torch.sort(data, dim=1, descending=descending, stable=True)
    assert torch.equal(v.torch(), rv) and torch.equal(i.torch(), ri)


@pytest.mark.cpu_launch_decisions
def test_a_row_of_2_to_the_14():
    data = _sort_input((1 << 14,), torch.float64, seed=5)
    with count_launches() as launches:
        i = tgrad.argsort(_tg(data))
    assert torch.equal(i.torch(), torch.argsort(data, stable=True))
    assert launches["_sort_block_kernel"] == 1


def test_randperm_is_a_reproducible_permutation():
    tgrad.manual_seed(123)
    p = tgrad.randperm(50)
    tgrad.manual_seed(123)
    q = tgrad.randperm(50)
    assert p.dtype is tgrad.int64 and sorted(p.tolist()) == list(range(50))
    assert p.tolist() == q.tolist() and p.tolist() != list(range(50))
    assert tgrad.randperm(0).tolist() == [] and tgrad.randperm(1).tolist() == [0]


@pytest.mark.parametrize("indices,shape", [([4, -1, 5, 6, -7], (2, 3)), (4, (2, 3)), ([[1, 2], [0, 5]], 5), ([0], ()),
                                           ([3, 11], (2, 1, 3, 2)), ([], (2, 3)), ([2, 1], [3])])
def test_unravel_index(indices, shape):
    for dtype in (torch.int64, torch.int32):
        i = torch.tensor(indices, dtype=dtype)
        ref, got = torch.unravel_index(i, shape), tgrad.unravel_index(tgrad.from_torch(i), shape)
        assert isinstance(got, tuple) and len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.dtype.torch == r.dtype and g.torch().tolist() == r.tolist()


def test_unravel_index_errors():
    for args, exc in [((torch.tensor([1.0]), (2, 3)), TypeError), ((torch.tensor([True]), (3,)), TypeError),
                      ((torch.tensor([1]), (2, -3)), ValueError)]:
        with pytest.raises(exc) as ref:
            torch.unravel_index(*args)
        with pytest.raises(exc) as got:
            tgrad.unravel_index(tgrad.from_torch(args[0]), args[1])
        assert str(got.value) == str(ref.value).replace("torch.", "tgrad.")  # (tgrad prints its dtypes so)
