"""Comparing what two libraries' hooks recorded: nested tuples, lists and dicts of torch tensors,
floats and plain values, equal up to float64 rounding."""
import pytest
import torch


def assert_nested_close(got, ref, rtol=1e-10, atol=1e-12):
    """``got`` has ``ref``'s structure; tensors and floats agree to rounding, everything else exactly."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.shape == ref.shape, (got, ref)
        assert torch.allclose(got, ref, rtol=rtol, atol=atol), (got, ref)
    elif isinstance(ref, float):
        assert got == pytest.approx(ref, rel=rtol, abs=atol), (got, ref)
    elif isinstance(ref, (tuple, list)):
        assert type(got) is type(ref) and len(got) == len(ref), (got, ref)
        for a, b in zip(got, ref):
            assert_nested_close(a, b, rtol, atol)
    elif isinstance(ref, dict):
        assert got.keys() == ref.keys(), (got, ref)
        for k in ref:
            assert_nested_close(got[k], ref[k], rtol, atol)
    else:
        assert got == ref, (got, ref)
