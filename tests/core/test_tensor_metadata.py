"""Tensor metadata against PyTorch: shape and Size, dtype, device, ndim, numel, strides and
contiguity, len() and iteration, Python scalars of one-element tensors, and repr.

Every case builds the same thing with ``torch`` and with ``tgrad`` and compares values, dtypes and
text (``torch.`` read as ``tgrad.``). Values that tgrad computes come from Triton kernels; torch is
only the reference here."""
import pytest
import torch

import tgrad


def as_torch_text(s: str) -> str:
    return s.replace("torch.", "tgrad.")


# ============================================================================== metadata

def test_shape_size_and_size_repr():
    t = tgrad.zeros(2, 3)
    assert type(t.shape) is tgrad.Size and type(t.size()) is tgrad.Size
    assert t.shape == (2, 3) and t.size() == torch.Size([2, 3]) and t.size(1) == 3 and t.size(-2) == 2
    assert repr(t.shape) == "tgrad.Size([2, 3])" and str(t.size()) == "tgrad.Size([2, 3])"
    assert repr(tgrad.tensor(1.0).shape) == "tgrad.Size([])"
    assert type(t.shape[1:]) is tgrad.Size and t.shape[1:] == (3,)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        t.size(5)


def test_dtype_device_ndim_numel_stride():
    t = tgrad.zeros(2, 3, 4, dtype=tgrad.float64)
    assert repr(tgrad.zeros(1).dtype) == "tgrad.float32" and repr(t.dtype) == "tgrad.float64"
    assert t.dtype == tgrad.double and tgrad.float is tgrad.float32 and tgrad.long is tgrad.int64
    assert t.device == torch.device("cpu") and t.device.type == "cpu" and not t.is_cuda
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24 and tgrad.zeros(2, 0).numel() == 0
    assert t.stride() == (12, 4, 1) and t.stride(1) == 4 and t.element_size() == 8
    assert tgrad.tensor(5.0).ndim == 0 and tgrad.tensor(5.0).stride() == ()
    assert t.is_floating_point() and not tgrad.zeros(1, dtype=tgrad.int64).is_floating_point()


def test_is_contiguous_after_transpose_and_T():
    t = tgrad.zeros(2, 3)
    assert t.is_contiguous()
    tt = t.t()
    assert not tt.is_contiguous() and tt.shape == (3, 2) and tt.stride() == (1, 3)
    assert not t.transpose(0, 1).is_contiguous()
    assert tt.contiguous().is_contiguous() and t.contiguous() is t
    T = t.T
    assert T.shape == (3, 2) and T.stride() == (1, 3)
    assert tgrad.zeros(2, 3, 4).permute(2, 0, 1).stride() == torch.zeros(2, 3, 4).permute(2, 0, 1).stride()
    assert not tgrad.zeros(4, 6)[:, ::2].is_contiguous()


def test_len_and_iteration():
    t = tgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, tgrad.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert [x.item() for x in tgrad.tensor([7, 8])] == [7, 8]
    with pytest.raises(TypeError, match="0-d tensor"):
        len(tgrad.tensor(1.0))
    with pytest.raises(TypeError, match="0-d tensor"):
        iter(tgrad.tensor(1.0))


def test_iteration_is_one_unbind_as_pytorchs():
    """``iter(t)`` is ``t.unbind(0)``, as PyTorch's: the rows share one UnbindBackward0 node, the
    gradient flows back as PyTorch's does, and an in-place write to a row is refused the same way."""
    torch.manual_seed(0)
    x0 = torch.randn(4, 3, dtype=torch.float64)
    up = [torch.randn(3, dtype=torch.float64) for _ in range(4)]
    grads, names, nodes = {}, {}, {}
    for lib in (torch, tgrad):
        x = lib.tensor(x0.numpy(), requires_grad=True)
        rows = list(x)
        names[lib] = [type(r.grad_fn).__name__ if lib is torch else r.grad_fn.name() for r in rows]
        nodes[lib] = len({id(r.grad_fn) for r in rows})
        sum((r * lib.tensor(u.numpy())).sum() for r, u in zip(rows, up)).backward()
        grads[lib] = x.grad.numpy()
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            list(lib.tensor(x0.numpy(), requires_grad=True).clone())[0].add_(1.0)
    assert names[tgrad] == names[torch] == ["UnbindBackward0"] * 4
    assert nodes[tgrad] == nodes[torch] == 1
    assert (grads[tgrad] == grads[torch]).all()


def test_python_scalars_of_one_element_tensors():
    assert bool(tgrad.tensor([0.5])) is True and bool(tgrad.tensor(0.0)) is False and bool(tgrad.tensor([[0]])) is False
    assert float(tgrad.tensor([3])) == 3.0 and int(tgrad.tensor([[-2.7]])) == -2
    assert int(tgrad.tensor(2.9)) == 2
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(tgrad.tensor([1.0, 2.0]))


REPR_CASES = {
    "0-d float": lambda L: L.tensor(3.0),
    "0-d int": lambda L: L.tensor(-4),
    "0-d bool": lambda L: L.tensor(True),
    "1-d decimals": lambda L: L.tensor([3.0, 4.5]),
    "2-d": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "float64": lambda L: L.tensor([2.0, 4.0], dtype=L.float64),
    "float16 0-d": lambda L: L.tensor(1.25, dtype=L.float16),
    "int64 2-d": lambda L: L.tensor([[1, -20], [300, 4]]),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "bool": lambda L: L.tensor([True, False]),
    "empty float64": lambda L: L.zeros(0, 3, dtype=L.float64),
    "sci": lambda L: L.tensor([1e-5, 1e5, 3.0]),
    "large summarised": lambda L: L.ones(100, 100),
    "large 1-d": lambda L: L.tensor([float(i) for i in range(2000)]),
    "leaf requires grad": lambda L: L.ones(2, 2, requires_grad=True),
    "0-d leaf": lambda L: L.tensor(3.0, requires_grad=True),
    "non-leaf": lambda L: L.ones(2, 2, requires_grad=True) + 2,
    "0-d result": lambda L: (L.ones(2, 2, requires_grad=True) * 1).sum(),
    "0-d quotient": lambda L: (L.ones(2, 2, requires_grad=True) + 1).sum() / 2,
    "dtype then grad_fn": lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True) * 2,
    "decimals with grad_fn": lambda L: L.tensor([2.0, 3.0], requires_grad=True) * 1.5,
    "detached": lambda L: (L.ones(2, requires_grad=True) * 2).detach(),
    "float64 leaf": lambda L: L.zeros(2, dtype=L.float64, requires_grad=True),
}


@pytest.mark.parametrize("case", list(REPR_CASES))
def test_repr_matches_torch(case):
    t, ref = REPR_CASES[case](tgrad), REPR_CASES[case](torch)
    assert repr(t) == as_torch_text(repr(ref))
    assert str(t) == repr(t)


def test_repr_under_no_grad_has_no_suffix():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.no_grad():
        assert repr(x * 2) == "tensor([2., 2.])"
