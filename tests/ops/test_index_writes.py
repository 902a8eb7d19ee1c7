"""Writes through an index, against PyTorch in float64: ``index_put``/``index_put_`` (values and
the gradients of x and of the values for a random upstream gradient, accumulate or not, repeated
positions, masks, PyTorch's errors), ``x[idx] = v`` with v sharing the memory written, and
``Tensor.fill_diagonal_`` (layouts, wrap, gradients, errors)."""
import warnings

import pytest
import torch

import tgrad
from support.reference import run


def _both(fn):
    """fn(L) in torch and tgrad: the same list, or the same exception type and message."""
    out = []
    for L in (torch, tgrad):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(L)
            out.append((r if L is torch else r.torch()).tolist())
        except (RuntimeError, IndexError, TypeError) as err:
            out.append((type(err).__name__, str(err)))
    assert out[0] == out[1]


INDEX_PUTS = {  # name: (x shape, indices of L, values shape)
    "rows": ((4, 3), lambda L: (L.tensor([2, 0]),), (2, 3)),
    "repeated": ((4, 3), lambda L: (L.tensor([1, 3, 1]), L.tensor([0, 2, 0])), (3,)),
    "broadcast_value": ((4, 3), lambda L: (L.tensor([1, 1, 2]),), (3,)),
    "scalar_value": ((4, 3), lambda L: (L.tensor([[0], [3]]), L.tensor([1, 2])), ()),
    "mask": ((4, 3), lambda L: (L.tensor([[True, False, True]] * 2 + [[False] * 3] * 2),), (4,)),
    "row_mask": ((4, 3), lambda L: (L.tensor([True, False, False, True]),), (1, 3)),
    "int32_negative": ((2, 3, 4), lambda L: (L.tensor([-1, 0], dtype=L.int32), L.tensor([2, -3])), (4,)),
    "zero_dim": ((4, 3), lambda L: (L.tensor(2), L.tensor(1)), ()),
    "empty": ((4, 3), lambda L: (L.tensor([], dtype=L.int64),), (3,)),
}


@pytest.mark.parametrize("name", list(INDEX_PUTS))
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("in_place", [False, True])
def test_index_put_values_and_gradients(name, accumulate, in_place):
    shape, indices, vshape = INDEX_PUTS[name]
    x = torch.rand(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    v = torch.rand(vshape, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) - 2

    def fn(L):
        def call(x, v):
            if in_place:
                return (x * 1).index_put_(indices(L), v, accumulate=accumulate)
            return L.index_put(x, indices(L), v, accumulate)
        return call
    run(fn(torch), fn(tgrad), [x, v])


def test_index_put_of_integers_and_bools():
    _both(lambda L: L.arange(12).reshape(3, 4).index_put_((L.tensor([1, 1]),), L.tensor([5, 6, 7, 8]), accumulate=True))
    _both(lambda L: L.zeros(3, dtype=L.bool).index_put_((L.tensor([1]),), L.tensor(True)))
    _both(lambda L: L.arange(6).reshape(2, 3).index_put((L.tensor([0, 0]), L.tensor([1, 1])), L.tensor(4), True))
    for dtype in ("int8", "int16", "uint8", "bool"):  # (added in int32, cast back: wrapping, or any)
        _both(lambda L: L.tensor([[100, 0, 1], [1, 1, 0]], dtype=getattr(L, dtype)).t().index_put_(
            (L.tensor([0, 0, 2]),), L.tensor([100, 0], dtype=getattr(L, dtype)), accumulate=True))


@pytest.mark.parametrize("call", [
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]),), 1.0),
    lambda L: L.zeros(3, 4).index_put_(L.tensor([0]), L.tensor(1.0)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]), None), L.tensor(1.0)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]),), L.tensor(1.0), accumulate=1),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]), L.tensor([1]), L.tensor([0])), L.tensor(1.0)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0.0]),), L.tensor(1.0)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([5]),), L.tensor(1.0)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([-4]),), L.tensor(1.0), accumulate=True),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]),), L.tensor(1.0, dtype=L.float64)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]),), L.ones(3)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([0]),), L.ones(1, 1, 4)),  # (x[idx] = v drops the leading 1s)
    lambda L: L.zeros(3, 4).index_put_((L.tensor(1), L.tensor(2)), L.ones(1)),
    lambda L: L.zeros(3, 4).index_put_((L.tensor([True, False]),), L.tensor(1.0)),
    lambda L: L.zeros(3, 4, requires_grad=True).index_put_((L.tensor([0]),), L.tensor(1.0)),
    lambda L: L.index_put(L.zeros(3, 4), (L.tensor([0]),), L.ones(2, 4)),
    # PyTorch's order: memory shared, an index into a dim of size 0, the shapes, the dtypes, the range
    lambda L: L.ones(4, 3).index_put_((L.tensor([9]),), L.ones(4, 3)[1]),
    lambda L: (lambda x: x.index_put_((L.tensor([0]),), x[1:3]))(L.ones(4, 3)),
    lambda L: (lambda x: x.index_put_((L.tensor([9]),), x[1]))(L.ones(4, 3)),
    lambda L: L.zeros(0, 3).index_put_((L.tensor([0]),), L.ones(2, dtype=L.int16)),
    lambda L: L.zeros(4, 3).index_put_((L.tensor([0]),), L.ones(2, dtype=L.int32)),
    lambda L: L.zeros(4, 3).index_put_((L.tensor([9]),), L.ones((), dtype=L.int32)),
    # one mask and one value is PyTorch's masked_fill_: any dtype, memory shared allowed
    lambda L: L.zeros(3, 4).index_put_((L.tensor([True, False, True]),), L.tensor(2, dtype=L.int16)),
    lambda L: (lambda x: x.index_put_((L.tensor([True, False, True]),), x[1, 2]))(L.arange(12.).reshape(3, 4)),
])
def test_index_put_errors(call):
    _both(call)


@pytest.mark.parametrize("expr", [
    "x[L.tensor([0, 1])] = x[1:3]", "x[L.tensor([0, 1])] = x[2:4]", "x[L.tensor([0, 1, 2, 3])] = x",
    "x[L.tensor([0, 1, 2, 3])] = x.t()", "x[L.tensor([0, 1])] = x[0, 0]", "x[0, L.tensor([0, 1])] = x[0, 2:]",
    "x[L.tensor([0, 1]), L.tensor([1, 2])] = x[0, :2]", "x[L.tensor([True, True, False, False])] = x[1:3]",
    "x[L.tensor([True, False, False, False])] = x[0:1]", "x.index_put_((L.tensor([0, 1]),), x[2:4])",
    "x.index_put_((L.tensor([True, True, False, False]),), x[0, 0], accumulate=True)",
    # allowed: no memory shared, a gapped layout (PyTorch: too hard to tell), one mask and one value
    "x[0, L.tensor([0, 1])] = x[1, :2]", "x[::2, L.tensor([0])] = x[1::2, :1]", "x[:, L.tensor([1])] = x[:, :1]",
    "x[L.tensor([True, True, False, False])] = x[0, 0]", "x[x > 14] = x[0, :1]", "x[x > 5] = x[3, 3]",
    "x.index_put_((L.tensor([True, True, False, False]),), x[0, 0])"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_writes_through_an_index_refuse_a_value_sharing_the_written_memory(expr, requires_grad):
    """x[idx] = v and index_put_ reading memory they write: PyTorch's index_put_ refuses it, the
    same memory too (unlike copy_), unless it fills through one mask with a single value."""
    def fn(L):
        base = L.arange(16.0, dtype=L.float64, requires_grad=requires_grad)
        x = base.reshape(4, 4) * 1 if requires_grad else base.reshape(4, 4)
        exec(expr, {"L": L, "x": x})
        return x.detach()
    _both(fn)


FILL_DIAGONALS = [
    lambda L: L.zeros(7, 3).fill_diagonal_(2.0, wrap=True), lambda L: L.zeros(7, 3).fill_diagonal_(2.0),
    lambda L: L.zeros(8, 2).fill_diagonal_(4, wrap=True), lambda L: L.zeros(4, 3).fill_diagonal_(4, wrap=True),
    lambda L: L.zeros(3, 5).fill_diagonal_(4, wrap=True), lambda L: L.zeros(3, 3, 3).fill_diagonal_(-1.5),
    lambda L: L.zeros(4, 4, 4, 4).fill_diagonal_(4, wrap=True),
    # other layouts: transposed (wrap follows memory, as PyTorch's), sliced, permuted, expanded
    lambda L: L.arange(21.).reshape(3, 7).t().fill_diagonal_(-1., wrap=True),
    lambda L: L.arange(21.).reshape(7, 3)[::2].fill_diagonal_(-1.),
    lambda L: L.arange(48.).reshape(16, 3)[::2].fill_diagonal_(-1., wrap=True),  # one wrapped block
    lambda L: L.arange(30.).reshape(10, 3)[::2].fill_diagonal_(-1., wrap=True),
    lambda L: L.zeros(5, 4, 3).permute(2, 1, 0)[:, :3, :3].fill_diagonal_(4),
    lambda L: L.zeros(1).expand(2, 2).fill_diagonal_(1), lambda L: L.zeros(2, 1).expand(2, 2).fill_diagonal_(1),
    # values: cast to the dtype, a 0-d tensor; empty
    lambda L: L.zeros(2, 2, dtype=L.int64).fill_diagonal_(1.5), lambda L: L.zeros(2, 2).fill_diagonal_(L.tensor(3.)),
    lambda L: L.zeros(2, 2, dtype=L.bool).fill_diagonal_(2), lambda L: L.zeros(0, 3).fill_diagonal_(1),
    # errors
    lambda L: L.zeros(3).fill_diagonal_(1), lambda L: L.zeros(2, 3, 2).fill_diagonal_(1),
    lambda L: L.zeros(2, 2).fill_diagonal_(L.tensor([1.])), lambda L: L.zeros(2, 2, requires_grad=True).fill_diagonal_(1),
    lambda L: L.zeros(2, 2).fill_diagonal_(L.tensor(1., requires_grad=True)),
]


@pytest.mark.parametrize("k", range(len(FILL_DIAGONALS)))
def test_fill_diagonal(k):
    _both(FILL_DIAGONALS[k])


@pytest.mark.parametrize("shape,wrap", [((5, 5), False), ((7, 2), True), ((3, 3, 3), False)])
def test_fill_diagonal_gradient(shape, wrap):
    """The filled elements get no gradient."""
    x = torch.rand(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    run(lambda x: (x * 2).fill_diagonal_(0.5, wrap=wrap), lambda x: (x * 2).fill_diagonal_(0.5, wrap=wrap), [x])


@pytest.mark.parametrize("expr", [
    "L.zeros(1, 0, 0)[T([1])]", "L.zeros(1, 0, 0)[[1]]", "L.zeros(3, 0)[T([5])]", "L.zeros(2, 0)[T([3]), :]",
    "L.zeros(2, 3)[T([5]), T([], dtype=L.int64)]", "L.zeros(1, 0, 0).index_put_((T([1]),), T(1.))",
    "L.zeros(3, 2).index_put_((T([5]), T([], dtype=L.int64)), T(1.))", "L.zeros(0)[T([1])]",
    "L.zeros(0, 0)[:, T([1])]", "L.zeros(0).index_put_((T([-1]),), L.ones(3))", "L.zeros(2, 3)[T([5]), T([0, 1])]"])
def test_an_index_out_of_range_is_refused_only_where_the_result_has_elements(expr):
    """PyTorch's index kernel checks each index as it reads or writes through it, so an empty
    result checks none; an index into a dim of size 0 is refused first, whatever the result."""
    def fn(L):
        x = L.zeros(1)
        exec(f"x = {expr}", {"L": L, "T": L.tensor}, scope := {"x": x})
        return scope["x"]
    _both(fn)


def test_fill_diagonal_wrap_past_the_first_block_of_a_gapped_tensor_is_refused():
    """docs/differences.md: there PyTorch follows storage past the tensor's own elements."""
    with pytest.raises(RuntimeError, match="outside it in storage"):
        tgrad.zeros(24, 3)[::2].fill_diagonal_(1.0, wrap=True)
