"""Reductions and the softmax family against PyTorch autograd: forward values, result dtypes and
shapes, grad_fn names, and input gradients under a random upstream gradient.

Every case builds its data in float64, casts it to the dtype under test, and compares with torch
run in float64 on the cast numbers (tests/support/reference.py). Inputs cover 0-d, (1,), odd sizes, size-1
dims, zero-size dims and non-contiguous views (transposed, sliced with a step); a few large cases
make the kernels run many programs.
"""
import math

import pytest
import torch

import tgrad
from support.reference import assert_close, make_pair, to_torch, upstream

INF = math.inf
DTYPES = [tgrad.float32, tgrad.float64]
# var/std with no degrees of freedom left is checked on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")


def pair_of(values, dtype=tgrad.float64):
    """(tgrad leaf, torch float64 leaf) holding exactly ``values``."""
    cast = torch.tensor(values, dtype=torch.float64).to(dtype.torch)
    return tgrad.from_torch(cast.clone()).requires_grad_(), cast.double().requires_grad_()


def check_grad(out, ref, inputs, dtype, tol=None, seed=7):
    """Backprop a random gradient through ``out`` and ``ref``; compare the inputs' gradients.
    ``inputs`` is a list of (tgrad leaf, torch leaf)."""
    g, gr = upstream(tuple(ref.shape), out.dtype if out.dtype.is_floating_point else dtype, seed)
    out.backward(g)
    ref.backward(gr)
    for x, xr in inputs:
        assert_close(x.grad, xr.grad, dtype, **(tol or {}))
        assert x.grad.dtype is x.dtype


def run_case(fn, torch_fn, shape, dtype, prep=None, low=-2.0, high=2.0, tol=None):
    """fn(tgrad x) vs torch_fn(torch x), forward and backward; ``prep`` makes a view of both
    leaves first (a transpose, a stepped slice)."""
    x, xr = make_pair(shape, dtype, low, high)
    xv, xrv = (prep(x), prep(xr)) if prep else (x, xr)
    out, ref = fn(xv), torch_fn(xrv)
    assert_close(out, ref, dtype, **(tol or {}))
    assert out.dtype is dtype
    assert out.grad_fn.name() == type(ref.grad_fn).__name__
    check_grad(out, ref, [(x, xr)], dtype, tol)
    return out


# ------------------------------------------------------------------------------------------
# sum / mean / amax / amin / logsumexp / var / std / norm over any dims

# id -> (leaf shape, view applied to the leaf or None, dim, keepdim)
CASES = {
    "0d": ((), None, None, False),
    "0d_dim0_keep": ((), None, 0, True),
    "1": ((1,), None, 0, False),
    "7_all": ((7,), None, None, False),
    "7_neg_keep": ((7,), None, -1, True),
    "3x5_dim1": ((3, 5), None, 1, False),
    "3x5_tuple_neg_keep": ((3, 5), None, (-1, -2), True),
    "234_dims02": ((2, 3, 4), None, (0, 2), False),
    "2143_size1_dim_keep": ((2, 1, 4, 3), None, 1, True),
    "2143_dims13": ((2, 1, 4, 3), None, (1, 3), False),
    "transposed": ((5, 3), lambda t: t.t(), 0, False),
    "sliced_step_keep": ((4, 11), lambda t: t[::2, ::3], -1, True),
}


def _full(dim, ndim):
    return tuple(range(ndim)) if dim is None else dim


# name -> (tgrad call, torch call); torch's own default for dim=None where it has one
REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum() if d is None else x.sum(d, keepdim=k),
            lambda x, d, k: x.sum() if d is None else x.sum(d, keepdim=k)),
    "mean": (lambda x, d, k: x.mean() if d is None else x.mean(d, keepdim=k),
             lambda x, d, k: x.mean() if d is None else x.mean(d, keepdim=k)),
    "amax": (lambda x, d, k: x.amax(() if d is None else d, k), lambda x, d, k: x.amax(() if d is None else d, k)),
    "amin": (lambda x, d, k: x.amin(() if d is None else d, k), lambda x, d, k: x.amin(() if d is None else d, k)),
    "logsumexp": (lambda x, d, k: tgrad.logsumexp(x, _full(d, x.ndim), k),
                  lambda x, d, k: torch.logsumexp(x, _full(d, x.ndim), k)),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda x, d, k: x.var(d, keepdim=k)),
    "std_correction0": (lambda x, d, k: x.std(d, keepdim=k, correction=0),
                        lambda x, d, k: x.std(d, keepdim=k, correction=0)),
    "norm_fro": (lambda x, d, k: x.norm(dim=d, keepdim=k), lambda x, d, k: x.norm(dim=d, keepdim=k)),
    "norm_1": (lambda x, d, k: x.norm(1, d, k), lambda x, d, k: x.norm(1, d, k)),
    "norm_inf": (lambda x, d, k: x.norm(INF, d, k), lambda x, d, k: x.norm(INF, d, k)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reduction_matches_torch(op, case, dtype):
    shape, prep, dim, keepdim = CASES[case]
    fn, torch_fn = REDUCTIONS[op]
    run_case(lambda x: fn(x, dim, keepdim), lambda x: torch_fn(x, dim, keepdim), shape, dtype, prep)


# id -> (shape, view, int dim or None, keepdim): ops that take one int dim
INT_DIM_CASES = {
    "0d": ((), None, None, False),
    "0d_dim0": ((), None, 0, False),
    "7_keep": ((7,), None, 0, True),
    "3x5_neg": ((3, 5), None, -1, False),
    "2143_size1_dim": ((2, 1, 4, 3), None, 1, False),
    "2143_dim2_keep": ((2, 1, 4, 3), None, 2, True),
    "transposed": ((5, 3), lambda t: t.t(), 1, False),
    "sliced_step": ((4, 11), lambda t: t[::2, ::3], 0, True),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(INT_DIM_CASES))
@pytest.mark.parametrize("op", ["prod", "max", "min"])
def test_int_dim_reduction_matches_torch(op, case, dtype):
    shape, prep, dim, keepdim = INT_DIM_CASES[case]
    if dim is None:  # prod(): ProdBackward0, max(): MaxBackward1 (a scalar)
        fn = lambda x: getattr(x, op)()  # noqa: E731
    elif op == "prod":
        fn = lambda x: x.prod(dim, keepdim)  # noqa: E731
    else:  # values of the (values, indices) pair
        fn = lambda x: getattr(x, op)(dim, keepdim)[0]  # noqa: E731
    # prod of values near +-1 stays far from overflow and underflow
    low, high = (0.5, 1.5) if op == "prod" else (-2.0, 2.0)
    run_case(fn, fn, shape, dtype, prep, low, high)


def test_grad_fn_names_and_next_functions():
    x, _ = make_pair((3, 4), tgrad.float32)
    names = {
        "SumBackward0": x.sum(), "SumBackward1": x.sum(0), "MeanBackward0": x.mean(), "MeanBackward1": x.mean(1),
        "ProdBackward0": x.prod(), "ProdBackward1": x.prod(1), "MaxBackward1": x.max(), "MinBackward1": x.min(),
        "MaxBackward0": x.max(0).values, "MinBackward0": x.min(1)[0], "AmaxBackward0": x.amax(0),
        "AminBackward0": x.amin(), "VarBackward0": x.var(0), "StdBackward0": x.std(),
        "LinalgVectorNormBackward0": x.norm(), "LogsumexpBackward0": x.logsumexp(1),
        "SoftmaxBackward0": x.softmax(0), "LogSoftmaxBackward0": x.log_softmax(-1),
    }
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name == out.grad_fn.name()
        (node, nr), = out.grad_fn.next_functions
        assert nr == 0 and type(node).__name__ == "AccumulateGrad" and node.variable is x
    assert repr(x.sum()).startswith("tensor(") and "grad_fn=<SumBackward0>" in repr(x.sum())
    # any dim argument, even None, picks PyTorch's dim overload
    for out, name in ((x.sum(None), "SumBackward1"), (x.sum(dim=None, keepdim=True), "SumBackward1"),
                      (x.sum(dtype=tgrad.float64), "SumBackward0"), (x.mean(None), "MeanBackward1"),
                      (x.sum(()), "SumBackward1")):
        assert out.grad_fn.name() == name
    assert tuple(x.sum(None, True).shape) == (1, 1) and tuple(x.sum(()).shape) == ()


# ------------------------------------------------------------------------------------------
# subgradients: ties, zeros, -inf


@pytest.mark.parametrize("op", ["max", "min", "amax", "amin"])
def test_full_extreme_splits_gradient_between_ties(op):
    # max() of [1,3,3] splits the gradient between ties: [0, .5, .5]
    values = [1.0, 3.0, 3.0] if op in ("max", "amax") else [3.0, 1.0, 1.0]
    x, _ = pair_of(values)
    getattr(x, op)().backward()
    expected = [0.0, 0.5, 0.5]
    assert x.grad.tolist() == expected


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_amax_amin_over_dim_split_ties_like_torch(dtype):
    data = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0], [-1.0, 0.0, -1.0, 0.0]]
    for op in ("amax", "amin"):
        for dim in (0, 1, (0, 1)):
            x, xr = pair_of(data, dtype)
            out, ref = getattr(x, op)(dim, True), getattr(xr, op)(dim, True)
            assert_close(out, ref, dtype)
            check_grad(out, ref, [(x, xr)], dtype)


def test_max_dim_gives_gradient_to_the_returned_index_only():
    # max(0).values gives the whole gradient to one index
    x, _ = pair_of([1.0, 3.0, 3.0])
    values, indices = x.max(0)
    values.backward()
    assert indices.item() == 1 and x.grad.tolist() == [0.0, 1.0, 0.0]
    data = [[0.0, 1.0, 1.0], [2.0, 2.0, 0.0], [5.0, -1.0, 5.0]]
    for op in ("max", "min"):
        for dim in (0, 1):
            x, xr = pair_of(data)
            out, ref = getattr(x, op)(dim), getattr(xr, op)(dim)
            assert out.indices.tolist() == ref.indices.tolist()  # first index on ties
            check_grad(out.values, ref.values, [(x, xr)], tgrad.float64)


def test_max_dim_returns_a_named_pair():
    x, xr = make_pair((3, 4), tgrad.float32)
    out = x.max(1, keepdim=True)
    assert isinstance(out, tgrad.return_types.max) and isinstance(out, tuple) and len(out) == 2
    values, indices = out
    assert values is out.values and indices is out.indices and out[0] is values
    assert tuple(values.shape) == tuple(indices.shape) == (3, 1)
    assert indices.dtype is tgrad.int64 and not indices.requires_grad and indices.grad_fn is None
    assert indices.tolist() == xr.max(1, keepdim=True).indices.tolist()
    low = tgrad.min(x, 0)
    assert isinstance(low, tgrad.return_types.min) and low.indices.tolist() == xr.min(0).indices.tolist()
    assert repr(out).startswith("tgrad.return_types.max(\nvalues=tensor(")
    assert "\nindices=tensor([[" in repr(out)


def test_argmax_argmin_first_index_on_ties_int64_no_grad():
    x, xr = pair_of([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -4.0, 7.0, -4.0]])
    for op in ("argmax", "argmin"):
        for kw in ({}, {"dim": 0}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": None, "keepdim": True}):
            got, ref = getattr(x, op)(**kw), getattr(xr, op)(**kw)
            assert got.dtype is tgrad.int64 and not got.requires_grad and got.grad_fn is None
            assert tuple(got.shape) == tuple(ref.shape) and got.tolist() == ref.tolist(), (op, kw)
    assert tgrad.argmax(tgrad.tensor(2.5)).item() == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_prod_gradient_with_zeros(dtype):
    # rows: no zero, one zero, two zeros in a row, all zeros
    data = [[2.0, 0.5, -3.0, 1.5], [2.0, 0.0, -3.0, 1.5], [0.0, 0.0, -3.0, 1.5], [0.0, 0.0, 0.0, 0.0]]
    for dim in (None, 0, 1):
        x, xr = pair_of(data, dtype)
        out = x.prod() if dim is None else x.prod(dim, True)
        ref = xr.prod() if dim is None else xr.prod(dim, True)
        assert_close(out, ref, dtype)
        check_grad(out, ref, [(x, xr)], dtype)
    x, _ = pair_of([1.0, 0.0, 3.0, 2.0])  # one zero: its gradient is the product of the others
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 6.0, 0.0, 0.0]


def test_logsumexp_with_minus_inf_entries():
    x, xr = pair_of([[-INF, 0.0, 1.0], [-INF, -INF, -INF], [2.0, -INF, 2.0]])
    out, ref = x.logsumexp(1), xr.logsumexp(1)
    assert_close(out, ref)
    assert out.tolist()[1] == -INF
    check_grad(out, ref, [(x, xr)], tgrad.float64)  # the all -inf row: nan, as torch


@pytest.mark.parametrize("correction", [0, 1, 2, 3, 5])
def test_var_std_correction_including_no_degrees_of_freedom(correction):
    data = [[1.0, -2.0, 4.0], [0.5, 0.5, 0.5]]  # the second row is constant: std 0
    for op in ("var", "std"):
        for dim in (None, 1, (0, 1)):
            x, xr = pair_of(data)
            out, ref = getattr(x, op)(dim, correction=correction), getattr(xr, op)(dim, correction=correction)
            assert_close(out, ref, tgrad.float64)
            check_grad(out, ref, [(x, xr)], tgrad.float64)


def test_var_std_unbiased_and_positional_forms():
    x, xr = make_pair((4, 6), tgrad.float64)
    pairs = [(x.var(), xr.var()), (x.var(unbiased=False), xr.var(unbiased=False)),
             (x.std(1, False), xr.std(1, False)), (x.var(0, True, True), xr.var(0, True, True)),
             (x.std(dim=1, unbiased=True, keepdim=True), xr.std(dim=1, unbiased=True, keepdim=True)),
             (tgrad.var(x, 0, correction=2), torch.var(xr, 0, correction=2))]
    for got, ref in pairs:
        assert_close(got, ref)
    v, m = tgrad.var_mean(x, 1, correction=0)
    assert_close(v, xr.var(1, correction=0))
    assert_close(m, xr.mean(1))


def test_norm_at_zero_and_with_ties():
    # p=2 at the zero vector: gradient 0 (not nan); p=inf: ties share, sign kept
    for p, values in ((2, [0.0, 0.0, 0.0]), (1, [0.0, -1.0, 2.0]), (INF, [1.0, -3.0, 3.0]), ("fro", [0.0, 3.0, -4.0])):
        x, xr = pair_of(values)
        out, ref = x.norm(p), xr.norm(p)
        assert_close(out, ref)
        check_grad(out, ref, [(x, xr)], tgrad.float64)


def test_norm_dtype_argument_and_integer_inputs():
    x, xr = make_pair((3, 4), tgrad.float32)
    out, ref = x.norm(dim=1, dtype=tgrad.float64), xr.float().norm(dim=1, dtype=torch.float64)
    assert out.dtype is tgrad.float64 and out.grad_fn.name() == "LinalgVectorNormBackward0"
    assert_close(out, ref, tgrad.float64)
    check_grad(out, ref, [(x, xr)], tgrad.float32)
    ints = tgrad.tensor([3, 4])
    with pytest.raises(RuntimeError, match=r"^linalg\.vector_norm: Expected a floating point or complex tensor as "
                                           r"input\. Got Long$"):
        ints.norm()
    for op in ("var", "std"):
        with pytest.raises(RuntimeError, match=r"^std and var only support floating point and complex dtypes$"):
            getattr(ints, op)()


def test_norm_other_p():
    for p in (3, 1.5, 0.5, -INF):
        x, xr = pair_of([[0.5, -1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [-3.0, 1.0, 1.0, 0.25]])
        out, ref = x.norm(p, 1), xr.norm(p, 1)
        assert_close(out, ref, msg=f"p={p}")
        check_grad(out, ref, [(x, xr)], tgrad.float64)
    x, xr = pair_of([[0.5, 0.0, 2.0], [0.0, 0.0, 0.0]])
    out = x.norm(0, 1)  # counts non-zeros; the gradient is left undefined, as in PyTorch
    assert out.tolist() == [2.0, 0.0]
    out.sum().backward()
    assert x.grad is None


# ------------------------------------------------------------------------------------------
# softmax / log_softmax

SOFTMAX_CASES = {  # id -> (leaf shape, view)
    "0d": ((), None),
    "1": ((1,), None),
    "7": ((7,), None),
    "234": ((2, 3, 4), None),
    "2143": ((2, 1, 4, 3), None),
    "transposed": ((5, 3), lambda t: t.t()),
    "sliced_step": ((4, 11), lambda t: t[::2, ::3]),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(SOFTMAX_CASES))
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_over_each_dim(op, case, dtype):
    shape, prep = SOFTMAX_CASES[case]
    ndim = max(len(shape), 1)
    for dim in range(-1, ndim) if ndim > 1 else (0, -1):
        run_case(lambda x: getattr(x, op)(dim), lambda x: getattr(x, op)(dim), shape, dtype, prep, -4.0, 4.0)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_dtype_argument(op):
    x, xr = make_pair((3, 5), tgrad.float32)
    out = getattr(tgrad, op)(x, 1, dtype=tgrad.float64)
    ref = getattr(torch, op)(xr.float(), 1, dtype=torch.float64)
    assert out.dtype is tgrad.float64
    assert_close(out, ref, tgrad.float64)
    assert out.grad_fn.name() == ("SoftmaxBackward0" if op == "softmax" else "LogSoftmaxBackward0")
    check_grad(out, ref, [(x, xr)], tgrad.float32)


def test_softmax_rows_with_minus_inf():
    x, xr = pair_of([[-INF, 0.0, 1.0], [3.0, -INF, -INF]])
    for op in ("softmax", "log_softmax"):
        out, ref = getattr(x, op)(1), getattr(xr, op)(1)
        assert_close(out, ref)
        x.grad = xr.grad = None
        check_grad(out, ref, [(x, xr)], tgrad.float64)


def test_softmax_needs_a_floating_input_and_a_dim():
    with pytest.raises((RuntimeError, NotImplementedError), match="not implemented for 'Long'"):
        tgrad.tensor([1, 2]).softmax(0)
    with pytest.raises(TypeError):
        tgrad.ones(3).softmax()
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.ones(3).softmax(1)


# ------------------------------------------------------------------------------------------
# dtypes, empty inputs, all/any


def test_integer_and_bool_sums_give_int64():
    i = tgrad.tensor([[1, 2, 3], [4, 5, -6]], dtype=tgrad.int32)
    b = tgrad.tensor([True, False, True])
    assert i.sum().dtype is tgrad.int64 and i.sum().item() == 9
    assert i.sum(1).tolist() == [6, 3] and i.sum(1).dtype is tgrad.int64
    assert b.sum().dtype is tgrad.int64 and b.sum().item() == 2
    assert i.prod(0).tolist() == [4, 10, -18] and i.prod().dtype is tgrad.int64
    assert i.sum(dtype=tgrad.float64).dtype is tgrad.float64
    assert i.max().item() == 5 and i.max().dtype is tgrad.int32


def test_mean_of_integers_raises_torch_error():
    with pytest.raises(RuntimeError, match=r"^mean\(\): could not infer output dtype\. Input dtype must be either "
                                           r"a floating point or complex dtype\. Got: Long$"):
        tgrad.tensor([1, 2, 3]).mean()
    assert tgrad.tensor([1, 2, 4]).mean(dtype=tgrad.float64).item() == pytest.approx(7 / 3)


def test_sum_and_mean_dtype_argument():
    x, xr = make_pair((3, 4), tgrad.float32)
    for got, ref in ((x.sum(dtype=tgrad.float64), xr.float().sum(dtype=torch.float64)),
                     (x.mean(1, dtype=tgrad.float64), xr.float().mean(1, dtype=torch.float64))):
        assert got.dtype is tgrad.float64
        assert_close(got, ref, tgrad.float64)
        x.grad = xr.grad = None
        check_grad(got, ref, [(x, xr)], tgrad.float32)


def test_zero_size_reductions():
    x, xr = make_pair((0, 3), tgrad.float32)
    for got, ref in ((x.sum(), xr.sum()), (x.sum(0), xr.sum(0)), (x.mean(0), xr.mean(0)),
                     (x.prod(0), xr.prod(0)), (x.logsumexp(0), xr.logsumexp(0)), (x.norm(dim=0), xr.norm(dim=0)),
                     (x.amax(1), xr.amax(1)), (x.sum(1, keepdim=True), xr.sum(1, keepdim=True))):
        assert_close(got, ref)
    assert x.sum().item() == 0.0 and tgrad.zeros(0).sum().item() == 0.0
    x.sum(0).backward(tgrad.ones(3))
    assert tuple(x.grad.shape) == (0, 3)
    # reducing an empty dim of (3, 0): sum 0, mean nan, prod 1, logsumexp -inf, norm 0; empty gradients
    for op in ("sum", "mean", "prod", "logsumexp", "norm"):
        fn = (lambda t: t.norm(dim=1)) if op == "norm" else (lambda t: getattr(t, op)(1))
        run_case(fn, fn, (3, 0), tgrad.float32)


def test_empty_max_raises_like_torch():
    for op in ("max", "min"):
        with pytest.raises(RuntimeError, match=rf"^{op}\(\): Expected reduction dim to be specified for "
                                               r"input\.numel\(\) == 0\. Specify the reduction dim with the 'dim' "
                                               r"argument\.$"):
            getattr(tgrad.zeros(0), op)()
        with pytest.raises(IndexError, match=rf"^{op}\(\): Expected reduction dim 0 to have non-zero size\.$"):
            getattr(tgrad.zeros(0, 3), op)(0)
        empty = getattr(tgrad.zeros(0, 3), op)(1)
        assert tuple(empty.values.shape) == (0,) and tuple(empty.indices.shape) == (0,)
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified for "
                                         r"input\.numel\(\) == 0\.$"):
        tgrad.zeros(0).argmax()
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim 0 to have non-zero size\.$"):
        tgrad.zeros(0, 2).amax(0)


def test_all_any():
    data = [[1.0, 0.0, 2.0], [3.0, -1.0, 0.5]]
    for make in (lambda: tgrad.tensor(data), lambda: tgrad.tensor([[1, 0, 2], [3, -1, 7]]),
                 lambda: tgrad.tensor([[True, False, True], [True, True, True]])):
        x = make()
        xr = x.torch().clone()
        for op in ("all", "any"):
            for kw in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": -1}):
                got, ref = getattr(x, op)(**kw), getattr(xr, op)(**kw)
                assert got.dtype is tgrad.bool and got.tolist() == ref.tolist(), (op, kw)
    assert tgrad.zeros(0).all().item() is True and tgrad.zeros(0).any().item() is False
    assert tgrad.zeros(2, 0).all(1).tolist() == [True, True]


def test_reduction_dim_errors():
    x = tgrad.ones(2, 3)
    with pytest.raises(TypeError, match=r"^max\(\) received an invalid combination of arguments"):
        x.max((0, 1))
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but "
                                         r"got 2\)$"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        tgrad.tensor(1.0).mean(1)


# ------------------------------------------------------------------------------------------
# float16, large inputs


def test_float16_forward_sum_and_softmax():
    x, xr = make_pair((37, 129), tgrad.float16, requires_grad=False)
    loose = dict(rtol=1e-2, atol=1e-2)
    assert_close(x.sum(1), xr.sum(1), **loose)
    assert_close(x.sum(), xr.sum(), rtol=1e-2, atol=0.5)
    assert x.sum().dtype is tgrad.float16
    assert_close(x.softmax(1), xr.softmax(1), **loose)
    assert_close(x.log_softmax(0), xr.log_softmax(0), **loose)
    assert x.softmax(0).dtype is tgrad.float16


def test_large_sum_over_dim1():
    # 513 rows: more rows than one program holds, so several programs and a masked tail
    out = run_case(lambda x: x.sum(1), lambda x: x.sum(1), (513, 1000), tgrad.float32,
                   tol=dict(rtol=1e-5, atol=1e-4))
    assert tuple(out.shape) == (513,)


def test_large_softmax_and_max():
    run_case(lambda x: x.softmax(1), lambda x: x.softmax(1), (700, 1500), tgrad.float32, low=-5.0, high=5.0,
             tol=dict(rtol=1e-5, atol=1e-6))
    x, xr = make_pair((300, 517), tgrad.float64)
    out, ref = x.max(0), xr.max(0)
    assert out.indices.tolist() == ref.indices.tolist()
    check_grad(out.values, ref.values, [(x, xr)], tgrad.float64)
    assert int((to_torch(x.grad) != 0).sum()) == 517  # one entry per column


def test_a_full_sums_gradient_expands_the_0d_gradient_as_pytorch():
    """Under create_graph the gradient of x.sum() is the 0-d gradient expanded, with no view between."""
    got = []
    for lib in (tgrad, torch):
        x = lib.randn(3, 4, requires_grad=True)
        y = lib.randn((), requires_grad=True)
        g, = lib.autograd.grad(x.sum() * y, x, create_graph=True)
        got.append((g.grad_fn.name(), [f.name() for f, _ in g.grad_fn.next_functions], tuple(g.shape), g.stride()))
    assert got[0] == got[1]
