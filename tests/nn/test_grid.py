"""``affine_grid`` and ``grid_sample`` against PyTorch in float64: every mode (bilinear, nearest),
padding mode (zeros, border, reflection) and ``align_corners``, grids reaching well outside [-1, 1],
odd sizes; values, the gradients of input and grid for a random upstream gradient, second
derivatives where PyTorch has them, PyTorch's warnings and errors."""
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.spatial import grid_sample as KG
from support.reference import compare_double_backward, compare_second_order, make_pair, raises, run, uniform64

MODES = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))


@pytest.mark.parametrize("mode,padding_mode,align", MODES)
@pytest.mark.parametrize("shape,out", [((2, 3, 5, 7), (4, 6)), ((1, 1, 1, 3), (3, 1)), ((1, 2, 4, 1), (2, 5))])
def test_grid_sample_matches_torch(mode, padding_mode, align, shape, out):
    x = uniform64(shape, seed=1)
    grid = uniform64((shape[0],) + out + (2,), -2.7, 2.7, seed=2)  # out of range: every padding mode matters
    got, ref = run(lambda x, g: TF.grid_sample(x, g, mode, padding_mode, align),
                   lambda x, g: F.grid_sample(x, g, mode, padding_mode, align), [x, grid])
    assert got.grad_fn.name() == ref.grad_fn.name()


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_float32_strided_and_many_programs(mode, monkeypatch):
    monkeypatch.setattr(KG, "block_for", lambda n, device: 16)  # many programs, the last one partial
    x = uniform64((2, 3, 7, 9), seed=8).float()
    grid = uniform64((2, 5, 3, 2), -1.4, 1.4, seed=9).float()
    xt = tgrad.from_torch(x.transpose(2, 3).contiguous()).transpose(2, 3).requires_grad_()  # a strided input
    gt = tgrad.from_torch(grid.clone()).requires_grad_()
    out = F.grid_sample(xt, gt, mode, "border", align_corners=False)
    xr, gr = x.double().requires_grad_(), grid.double().requires_grad_()
    ref = TF.grid_sample(xr, gr, mode, "border", align_corners=False)
    assert out.dtype is tgrad.float32
    torch.testing.assert_close(out.torch().double(), ref, rtol=2e-5, atol=2e-6)
    up = uniform64(tuple(ref.shape), -1, 1, seed=10)
    out.backward(tgrad.from_torch(up.float()))
    ref.backward(up)
    torch.testing.assert_close(xt.grad.torch().double(), xr.grad, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(gt.grad.torch().double(), gr.grad, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_of_an_affine_grid(align):
    x, theta = uniform64((2, 3, 6, 5), seed=3), uniform64((2, 2, 3), -1, 1, seed=4)
    run(lambda x, th: TF.grid_sample(x, TF.affine_grid(th, (2, 3, 4, 7), align), align_corners=align),
        lambda x, th: F.grid_sample(x, F.affine_grid(th, (2, 3, 4, 7), align), align_corners=align), [x, theta])


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 3, 2, 4)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(size, align):
    theta = uniform64((size[0], len(size) - 2, len(size) - 1), seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unit-size warning, checked below)
        run(lambda th: TF.affine_grid(th, size, align), lambda th: F.affine_grid(th, size, align), [theta])
        compare_second_order(lambda th: F.affine_grid(th, size, align) ** 2,
                             lambda th: TF.affine_grid(th, size, align) ** 2, [tuple(theta.shape)])


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_second_derivatives(padding_mode, align):
    pairs = [make_pair((1, 2, 3, 4), tgrad.float64, seed=6), make_pair((1, 2, 3, 2), tgrad.float64, -1.8, 1.8, seed=7)]
    compare_double_backward(lambda x, g: F.grid_sample(x, g, "bilinear", padding_mode, align) ** 2,
                            lambda x, g: TF.grid_sample(x, g, "bilinear", padding_mode, align) ** 2, pairs)


def test_grid_warnings_and_errors_are_torchs():
    x, grid = tgrad.ones(2, 3, 4, 5), tgrad.zeros(2, 3, 2, 2)
    for fn_t, fn_r, args_t, args_r in ((F.grid_sample, TF.grid_sample, (x, grid), (torch.ones(2, 3, 4, 5),
                                                                                     torch.zeros(2, 3, 2, 2))),
                                       (F.affine_grid, TF.affine_grid, (tgrad.zeros(1, 2, 3), (1, 1, 2, 2)),
                                        (torch.zeros(1, 2, 3), (1, 1, 2, 2)))):
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            fn_t(*args_t)
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            fn_r(*args_r)
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    with raises(RuntimeError, "grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                              "input with sizes [2, 3, 4, 5] and grid with sizes [2, 3, 2]"):
        F.grid_sample(x, tgrad.zeros(2, 3, 2), align_corners=False)
    with raises(RuntimeError, "grid_sampler(): expected grid and input to have same batch size, but got input with "
                              "sizes [2, 3, 4, 5] and grid with sizes [3, 3, 2, 2]"):
        F.grid_sample(x, tgrad.zeros(3, 3, 2, 2), align_corners=False)
    with raises(RuntimeError, "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
                              "sizes [2, 3, 2, 3]"):
        F.grid_sample(x, tgrad.zeros(2, 3, 2, 3), align_corners=False)
    with raises(RuntimeError, "expected scalar type Float but found Double"):
        F.grid_sample(x, grid.double(), align_corners=False)
    with raises(ValueError, "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                            "but got: 'area'"):
        F.grid_sample(x, grid, "area", align_corners=False)
    with raises(ValueError, "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                            "'reflection', but got: 'wrap'"):
        F.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with raises(ValueError, "Expected a batch of 2D affine matrices of shape Nx2x3 for size [1, 1, 2, 2]. Got "
                            "tgrad.Size([1, 3, 3])."):
        F.affine_grid(tgrad.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)
    with raises(ValueError, "Expected non-zero, positive output size. Got [1, 1, 0, 2]"):
        F.affine_grid(tgrad.zeros(1, 2, 3), (1, 1, 0, 2), align_corners=False)
    with raises(ValueError, "Expected theta to have floating point type, but got tgrad.int64"):
        F.affine_grid(tgrad.zeros(1, 2, 3, dtype=tgrad.int64), (1, 1, 2, 2), align_corners=False)
