"""64-bit offsets: the kernels run on views whose elements lie more than 2^32 elements apart inside
one huge buffer that is never touched (a sparse file mapped into memory, so it costs neither RAM nor
disk), under ``kernel_guard``'s address checks (see tests/kernels/test_kernel_bounds.py). A 32-bit
offset anywhere would wrap and land outside every tensor, which the address check catches, or read
the wrong element, which the comparison with torch catches."""
import re
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.nn.functional as F
from support.kernel_guard import F64, MemoryViolation, backprop, close, memory_checked, poisoned_allocations
from tgrad.kernels import elementwise as M
from tgrad.kernels.elementwise.pointwise import pointwise
from tgrad.kernels.runtime.launch import launch
from tgrad.kernels.runtime.target import as_cuda

FAR = (1 << 32) + 3  # elements between neighbours: beyond int32 and uint32


@pytest.fixture
def huge(tmp_path):
    """A float32 buffer of 4 * FAR + 64 elements (16 GiB) mapped from a sparse file: only the pages
    the tests touch are ever materialised."""
    path = tmp_path / "sparse.bin"
    n = 4 * FAR + 64
    with open(path, "wb") as f:
        f.truncate(n * 4)
    try:
        return torch.from_file(str(path), shared=True, size=n, dtype=torch.float32)
    except (RuntimeError, OSError) as e:  # pragma: no cover - a platform without sparse files
        pytest.skip(f"cannot map a sparse 16 GiB file: {e}")


def far_view(buf, shape, strides, offset=5, seed=0):
    v = buf.as_strided(shape, strides, offset)
    v.copy_(torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=F64) * 4 - 2)
    return v


def test_offsets_beyond_2_32_elements(huge):
    with memory_checked() as violations, poisoned_allocations():
        a = far_view(huge, (2, 3), (FAR, 1))                      # rows 2^32 apart
        b = far_view(huge, (3,), (FAR,), offset=17, seed=1)        # neighbours 2^32 apart
        out = huge.as_strided((2, 3), (1, FAR), 29)                # a destination 2^32 apart too
        pointwise(M.mul, [a, b], (2, 3), [torch.float32], outs=[out])
        close(out, a.to(F64) * b.to(F64))
        x, xr = tgrad.from_torch(a).requires_grad_(), a.to(F64).requires_grad_()
        close(x.sum(0), xr.sum(0))
        close(x.softmax(0), xr.softmax(0))
        close(x.t() @ tgrad.from_torch(a), xr.t() @ a.to(F64))
        close(x[tgrad.tensor([1, 0, 1])], xr[torch.tensor([1, 0, 1])])
        close(F.layer_norm(x.t(), (2,)), torch.nn.functional.layer_norm(xr.t(), (2,)))
        t = torch.tensor([2, 0])
        y, yr = F.cross_entropy(x, tgrad.from_torch(t)), torch.nn.functional.cross_entropy(xr, t)
        close(y, yr)
        backprop(y, yr, [(x, xr)])
        w = far_view(huge, (3, 2), (FAR, 1), offset=41, seed=2)  # embedding rows 2^32 apart
        close(F.embedding(tgrad.tensor([2, 0, 2]), tgrad.from_torch(w)), w[torch.tensor([2, 0, 2])])
    assert not violations


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "as_cuda"])
def test_conv_pool_losses_and_copies_beyond_2_32_elements(huge, gpu):
    """The families the test above leaves out: convolution (forward, the input's and the weight's
    gradients; as_cuda() takes the GPU's gather and split kernels), pooling, an elementwise loss,
    cat and a strided copy, each on views whose batch or channel neighbours lie 2^32 apart."""
    with memory_checked() as violations, poisoned_allocations(), as_cuda() if gpu else nullcontext():
        xt = far_view(huge, (2, 2, 3, 3), (2 * FAR, FAR, 3, 1))             # batch and channels apart
        wt = far_view(huge, (3, 2, 2, 2), (FAR, 4, 2, 1), offset=30, seed=1)  # output channels apart
        x, xr = tgrad.from_torch(xt).requires_grad_(), xt.to(F64).requires_grad_()
        w, wr = tgrad.from_torch(wt).requires_grad_(), wt.to(F64).requires_grad_()
        y, yr = F.conv2d(x, w, padding=1), torch.nn.functional.conv2d(xr, wr, padding=1)
        close(y, yr)
        backprop(y, yr, [(x, xr), (w, wr)])
        x.grad = xr.grad = None
        y, yr = F.max_pool2d(x, 2, 1), torch.nn.functional.max_pool2d(xr, 2, 1)
        close(y, yr)
        backprop(y, yr, [(x, xr)])
        a, ar = x[:, 0], xr[:, 0]
        close(F.mse_loss(a, x[:, 1]), torch.nn.functional.mse_loss(ar, xr[:, 1]))
        close(tgrad.cat([a, x[:, 1]], 1), torch.cat([ar, xr[:, 1]], 1))
        close(x.contiguous(), xr)
    assert not violations


@triton.jit
def _int32_offsets_kernel(src, dst, stride, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    off = (i * stride).to(tl.int32)  # the bug this file looks for
    tl.store(dst + i, tl.load(src + off, mask=i < n), mask=i < n)


def test_a_32_bit_offset_is_caught(huge):
    src, dst = far_view(huge, (3,), (FAR,)), torch.empty(3)
    with memory_checked() as violations, pytest.raises(MemoryViolation, match="load of 2 lane"):
        launch(_int32_offsets_kernel, (1,), src, dst, FAR, 3, BLOCK=4)
    assert len(violations) == 1


KERNELS = Path(__file__).resolve().parents[2] / "kernels"
# program ids used without widening, and why no offset product of theirs can reach 2^31
NARROW_PROGRAM_IDS = {
    ("spatial/conv.py", "pid = tl.program_id(0)"): "split into group and tile; rows are widened before use",
    ("spatial/conv.py", "split = tl.program_id(1)"): "a split number, multiplied by a widened K_PER_SPLIT",
    ("indexing/index.py", "pid = tl.program_id(0)"): "nonzero: a block number; lin is widened, counts index a small table",
    ("linalg/matmul.py", "pid = tl.program_id(0)"): "batch and tile; rows and batch are widened before use",
}


def test_program_ids_are_widened_before_address_arithmetic():
    """Offsets are products of a program's position and strides: every ``tl.program_id`` is
    converted to int64 on the spot, or is listed above with the reason it needs no widening."""
    found = set()
    for path in sorted(KERNELS.rglob("*.py")):
        for line in path.read_text().splitlines():
            code = line.split("#")[0].strip()
            if "tl.program_id(" in code and not re.search(r"tl\.program_id\(\d\)\.to\(tl\.int64\)", code):
                found.add((path.relative_to(KERNELS).as_posix(), code))
    unexplained = found - set(NARROW_PROGRAM_IDS)
    assert not unexplained, f"program ids used in 32 bits: {sorted(unexplained)}"
