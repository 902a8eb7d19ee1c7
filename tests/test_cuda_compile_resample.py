"""The convolution / resampling workload (conv_transpose's bias epilogue, pad, adaptive pools,
interpolate, im2col/col2im) that tests/test_compile_as_cuda.py compiles as a GPU launches it, and
interpolate's size-1 specialisation."""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.runtime.launch import launch_observers
from test_cuda_compile import _arg_type

def _workload():
    tgrad.manual_seed(0)
    for dtype in (tgrad.float32,):
        x = tgrad.randn(2, 3, 5, 6, dtype=dtype, requires_grad=True)
        w = tgrad.randn(3, 2, 3, 3, dtype=dtype, requires_grad=True)
        b = tgrad.randn(2, dtype=dtype, requires_grad=True)
        y = F.conv_transpose2d(x, w, b, stride=2).sum() + F.conv_transpose2d(x[:, :2], w[:2], stride=2, groups=2).sum()
        for mode in ("constant", "reflect", "replicate", "circular"):
            y = y + F.pad(x, (1, 2, 2, 1), mode=mode).sum()
        y = y + F.adaptive_avg_pool2d(x, (2, 4)).sum() + F.adaptive_max_pool2d(x, (4, 3)).sum()
        for kw in (dict(scale_factor=2), dict(scale_factor=1.5, mode="nearest-exact"),
                   dict(size=(7, 4), mode="bilinear"), dict(scale_factor=2, mode="bilinear", align_corners=True)):
            y = y + F.interpolate(x, **kw).sum()
        y = y + F.fold(F.unfold(x, 2, padding=1), (5, 6), 2, padding=1).sum()
        y.backward()
    # fp64 only changes the linear modes' index arithmetic (fp64 there, as in torch)
    x = tgrad.randn(2, 3, 5, 6, dtype=tgrad.float64, requires_grad=True)
    F.interpolate(x, size=(7, 4), mode="bilinear").sum().backward()


def test_interpolate_of_size_one_compiles_as_a_gpu_launch_specialises_it():
    """A GPU launch turns every int argument equal to 1 into a compile-time constant: an input or
    output of height or width 1 must still compile (``.to()`` on such a constant failed)."""
    seen = {}

    def observe(kernel, grid, args, meta):
        if kernel.__name__.startswith("interp_"):
            names = kernel.arg_names
            params = dict(zip(names, args), **{k: v for k, v in meta.items() if k in names})
            constexprs = {names[i] for i in kernel.constexprs}
            signature, constants = {}, {}
            for name, value in params.items():
                if name in constexprs or (type(value) is int and value == 1):  # as a GPU launch specialises
                    signature[name], constants[name] = "constexpr", value
                else:
                    signature[name] = _arg_type(value)
            options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages")}
            seen.setdefault(repr((kernel.__name__, sorted(constants.items()))), (kernel, signature, constants, options))
    launch_observers.append(observe)
    try:
        for shape in ((1, 2, 1, 5), (1, 2, 4, 1), (1, 1, 1, 1)):
            x = tgrad.randn(*shape, requires_grad=True)
            for kw in (dict(size=(1, 3)), dict(size=(3, 1), mode="bilinear"),
                       dict(size=(1, 1), mode="bilinear", align_corners=True),
                       dict(scale_factor=1, mode="nearest-exact")):
                F.interpolate(x, **kw).sum().backward()
    finally:
        launch_observers.remove(observe)
    target = GPUTarget("cuda", 90, 32)
    failures = []
    for kernel, signature, constants, options in seen.values():
        try:
            assert triton.compile(ASTSource(kernel, signature, constants), target=target, options=options).asm["cubin"]
        except Exception as e:
            failures.append(f"{kernel.__name__} {sorted(constants.items())}: {type(e).__name__}: {str(e)[:300]}")
    assert len(seen) >= 4
    assert not failures, "\n".join(failures)
