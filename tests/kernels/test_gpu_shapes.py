"""Launches at GPU-sized shapes, planned as a GPU run would make them (``as_cuda()``) without running
them (tests/support/gpu_shapes.py): their grids stay within CUDA's limits, and the worst shapes the
spill probe found compile for sm_90 without spilling. ``python tests/support/gpu_shapes.py`` is the
probe itself (docs/gpu.md: "Without a GPU")."""
import pytest
import torch

import tgrad
from support.gpu_shapes import GRID_CASES, attention_case, conv_case, planned, plan_grids
from tgrad.kernels.reductions.sort import sort
from tgrad.kernels.runtime.cuda_compile import GRID_LIMITS, compile_launch, resource_usage
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


# The worst the probe found (docs/gpu.md): attention's dk/dv program at 64 x 64 tiles over 4 warps
# spilled 7.8 KB a thread (head dim 64, fp32; 24 bytes causal at 32 x 32), and at head dim 128
# (32 x 32 tiles) 368 bytes; conv's
# input gradient of a 3-channel 7x7 stride-2 stem at 64 x 16 tiles 152 bytes.
WORST = [(attention_case(1024, 64, torch.float32, True), "attn_bwd_dkv_kernel", (16, 16, 8)),
         (attention_case(1024, 128, torch.float32, False), "attn_bwd_dkv_kernel", (16, 16, 8)),
         (conv_case(3, 64, 7, 224, torch.float32, stride=2), "conv_dgrad_kernel", (32, 16, 4))]


@pytest.mark.parametrize("case, kernel, tiles", WORST, ids=[c[0][0] for c in WORST])
def test_the_worst_gpu_shapes_compile_for_sm90_without_spilling(case, kernel, tiles):
    launches = []
    with planned(lambda k, grid, args, meta: launches.append((k, args, meta))):
        case[1]()
    ((k, args, meta),) = [launch for launch in launches if launch[0].__name__ == kernel]
    assert (meta["BLOCK_M"], meta["BLOCK_N"], meta["num_warps"]) == tiles
    usage = resource_usage(compile_launch(k, args, meta, 90))
    assert usage["spill_bytes"] == 0, usage
