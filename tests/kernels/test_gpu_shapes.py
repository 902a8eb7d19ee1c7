"""Launches at GPU-sized shapes, planned as a GPU run would make them (``as_cuda()``) without running
them (tests/support/gpu_shapes.py): their grids stay within CUDA's limits, and the worst shapes the
spill probe found compile for sm_90 without spilling. ``python tests/support/gpu_shapes.py`` is the
probe itself (docs/gpu.md: "Without a GPU")."""
import torch

import tgrad
from support.gpu_shapes import GRID_CASES, planned, plan_grids
from tgrad.kernels.reductions.sort import sort
from tgrad.kernels.runtime.cuda_compile import GRID_LIMITS
from tgrad.kernels.runtime.target import as_cuda


def _over(grids):
    return [(case, kernel, grid) for case, launches in grids.items() for kernel, grid in launches
            if any(g > limit for g, limit in zip(grid, GRID_LIMITS))]


def test_the_benchmarks_largest_shapes_launch_within_cudas_grid_limits():
    """gpu_check.py's GPU sizes (matmul 4096^3, 2^26-element pointwise and reductions, row ops at
    8192 x 32768, the MLP, LSTM, attention and transformer steps) and the examples' models."""
    grids = plan_grids(GRID_CASES)
    assert len(grids) == len(GRID_CASES) and all(grids.values())
    assert not _over(grids), _over(grids)
    kernels = {kernel for launches in grids.values() for kernel, _ in launches}
    assert {"matmul_kernel", "reduce_kernel", "softmax_kernel", "layer_norm_fwd_kernel", "cross_entropy_fwd_kernel",
            "attn_bwd_dkv_kernel", "conv_wgrad_kernel", "optim_step_kernel"} <= kernels


def test_a_sort_of_2_27_elements_keeps_its_blocks_on_grid_axis_0():
    """Sort's column blocks (2^11 columns each) sat on axis 1, which CUDA stops at 65,535: a row of
    2^27 elements (an index backward of 32K tokens x 4096 features sorts that many offsets) needed
    65,536. Row and column blocks share axis 0 now."""
    grids = []
    x = torch.empty(1 << 27, dtype=torch.float16)
    with planned(lambda kernel, grid, args, meta: grids.append((kernel.__name__, tuple(grid)))):
        sort(x, 0)
    assert {name for name, _ in grids} == {"_sort_block_kernel", "_sort_exchange_kernel"}
    assert all(len(grid) == 1 and grid[0] <= GRID_LIMITS[0] for _, grid in grids)
    assert ("_sort_block_kernel", (1 << 16,)) in grids


def test_sort_past_one_block_as_a_gpu_launches_it_matches_torch():
    """The GPU's blocks (2^11 columns, exchanges between them) interpreted: several rows of 5000."""
    x = torch.randn(3, 5000, generator=torch.Generator().manual_seed(0))
    x[1, ::7] = x[1, 3]  # ties: the sort is stable
    with as_cuda():
        values, indices = tgrad.from_torch(x).sort(1, descending=True)
    want = torch.sort(x, stable=True, dim=1, descending=True)
    assert torch.equal(values.torch(), want.values) and torch.equal(indices.torch(), want.indices)
