"""Spatial transformers: ``affine_grid`` (the sampling grid of a batch of affine maps, composed from
tgrad ops) and ``grid_sample`` (2-d: bilinear or nearest, zeros / border / reflection padding,
``align_corners``), one launch of ``kernels/spatial/grid_sample.py`` forward and one per gradient
backward (the input's a scatter-add, the grid's a gather), with PyTorch's index arithmetic.

Its backward is a ``fused_backward``: under create_graph the gradients are recorded from the
composed form ``_grid_sample_ops``, which maps each grid point to pixel coordinates (unnormalise,
reflect and / or clip), reads the 4 (bilinear) or 1 (nearest) neighbours with a ``gather`` over
the flattened (H W) plane, masked where out of bounds, and sums them weighted (a clipped or rounded
coordinate passes no gradient, as in PyTorch). On CUDA in deterministic mode the input's gradient
comes from that form too (its scatter-add is the deterministic one, not the kernel's atomics).
"""
from __future__ import annotations

import functools
import warnings

from tgrad import ops
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import composed_grads, fused_backward
from tgrad.kernels.reductions import segment
from tgrad.kernels.spatial import grid_sample as KG
from tgrad.ops.common import check_runnable, wrap

from .arguments import check_tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _base(n, align_corners, like):
    """PyTorch's linspace_from_neg_one: n points over [-1, 1], shrunk by (n - 1) / n without
    align_corners; 0 for n = 1."""
    if n <= 1:
        return ops.zeros(max(n, 0), dtype=like.dtype, device=like.device)
    t = ops.linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return t if align_corners else t * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) (or (N, D, H, W, 3)) grid of theta (N, 2, 3) (or (N, 3, 4)) applied to the
    normalised output coordinates (x, y[, z], 1) of ``size``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    check_tensor(theta, "theta", "affine_grid")
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # base[..., :] = (x, y[, z], 1), x varying along the last spatial dim
    axes = [_base(n, align_corners, theta) for n in reversed(spatial)]
    grids = ops.meshgrid(*reversed(axes), indexing="ij")[::-1]
    base = ops.stack([*grids, ops.ones_like(grids[0])], -1).reshape(1, -1, len(spatial) + 1)
    out = base @ theta.transpose(1, 2)  # (N, prod(spatial), dims)
    return out.reshape([size[0], *spatial, len(spatial)])


def _unnormalize(c, size, align_corners):
    return (c + 1) * ((size - 1) / 2) if align_corners else ((c + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    """PyTorch's reflect_coordinates: c reflected at the bounds twice_low / 2 and twice_high / 2."""
    if twice_low == twice_high:
        return c * 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    d = (c - low).abs()
    extra = ops.fmod(d, span)
    flips = (d / span).floor()
    even = ops.remainder(flips, 2.0) == 0
    return ops.where(even, extra + low, span - extra + low)


def _clip(c, size):
    # where, not clamp: a coordinate at or past a border passes no gradient, as PyTorch's clip
    inside = (c > 0) & (c < size - 1)
    return ops.where(inside, c, c.detach().clamp(0, size - 1))


def _source(c, size, padding_mode, align_corners):
    c = _unnormalize(c, size, align_corners)
    if padding_mode == "border":
        c = _clip(c, size)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = _clip(c, size)
    return c


def _read(flat, ix, iy, H, W):
    """input[n, :, iy, ix] for integer coordinate tensors (N, P), 0 where out of bounds: (N, C, P)."""
    inside = ((ix >= 0) & (ix < W) & (iy >= 0) & (iy < H))
    idx = (iy.clamp(0, H - 1) * W + ix.clamp(0, W - 1)).long()
    N, C = flat.shape[:2]
    vals = flat.gather(2, idx.unsqueeze(1).expand(N, C, idx.shape[1]))
    return vals * inside.unsqueeze(1).to(flat.dtype)


@autocast_policy(cpu='fp32')  # (on CPU's float32 list, not on CUDA's)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """out[n, c, h, w] = input[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1] normalised
    coordinates (x along W)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    check_tensor(input, "input", "grid_sample")
    check_tensor(grid, "grid", "grid_sample")
    if input.ndim != 4 or grid.ndim != input.ndim:
        if input.ndim == 5 and grid.ndim == 5:
            raise NotImplementedError("tgrad's grid_sample samples 4-D inputs (2-d) only")
        raise RuntimeError(f"grid_sampler(): expected {input.ndim}D input and grid with same number of dimensions, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    for d in (2, 3):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_type} but found {grid.dtype.scalar_type}")
    if mode == "bicubic":
        raise NotImplementedError("tgrad's grid_sample has no bicubic mode")
    check_runnable(input, grid)
    return _GridSample.apply(input, grid, (mode, padding_mode, bool(align_corners)))


class _GridSample(BuiltinFunction):
    node_name = "GridSampler2DBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, input, grid, cfg):
        ctx.cfg = cfg
        ctx.save_for_backward(input, grid)
        return wrap(KG.grid_sample_forward(input._data, grid._data, *cfg))

    @staticmethod
    def backward(ctx, g):
        input, grid = ctx.saved_tensors
        need = tuple(ctx.needs_input_grad[:2])
        recorded = functools.partial(_grid_sample_grads_ops, ctx.cfg, need)
        return fused_backward(ctx, functools.partial(_grid_sample_grads, ctx.cfg, need, recorded), recorded,
                              g, input, grid) + (None,)


def _grid_sample_grads(cfg, need, recorded, g, input, grid):
    """(d input, d grid) from the kernels; d input from the composed form on CUDA in deterministic mode."""
    atomics_ok = not segment.deterministic(input._data.device)
    dx, dgrid = KG.grid_sample_backward(g._data, input._data, grid._data, *cfg, need[0] and atomics_ok, need[1])
    dx = wrap(dx) if dx is not None else recorded(g, input, grid)[0].detach() if need[0] else None
    return dx, None if dgrid is None else wrap(dgrid)


def _grid_sample_grads_ops(cfg, need, g, input, grid):
    return composed_grads(lambda x, gr: _grid_sample_ops(x, gr, *cfg), (input, grid), need, (g,))


def _grid_sample_ops(input, grid, mode, padding_mode, align_corners):
    """grid_sample composed from tgrad ops (the recorded form of the kernels' gradients)."""
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1:3]
    g = grid.reshape(N, Ho * Wo, 2)
    ix = _source(g[..., 0], W, padding_mode, align_corners)
    iy = _source(g[..., 1], H, padding_mode, align_corners)
    flat = input.reshape(N, C, H * W)
    if mode == "nearest":  # round half to even, as PyTorch's nearbyint
        out = _read(flat, ix.detach().round(), iy.detach().round(), H, W)
    else:
        x0, y0 = ix.detach().floor(), iy.detach().floor()
        wx1, wy1 = (ix - x0).unsqueeze(1), (iy - y0).unsqueeze(1)
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (_read(flat, x0, y0, H, W) * (wx0 * wy0) + _read(flat, x0 + 1, y0, H, W) * (wx1 * wy0)
               + _read(flat, x0, y0 + 1, H, W) * (wx0 * wy1) + _read(flat, x0 + 1, y0 + 1, H, W) * (wx1 * wy1))
    return out.reshape(N, C, Ho, Wo)
