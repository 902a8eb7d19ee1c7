"""The core's compile workload and the launch recorder the per-family compile tests share.

CI has no GPU, and Triton's interpreter accepts code the compiler rejects (e.g. a tuple indexed by
a non-constant). ``_workload`` runs the core ops; tests/test_compile_as_cuda.py runs it configured
as on a GPU and compiles each launch for sm_90 and sm_80 as a GPU launch binds it. ``_record``
records each distinct launch (kernel, argument types, compile-time constants) for the tests that
compile a family's recorded configurations themselves."""
import torch
from triton.runtime.jit import mangle_type

import tgrad

_TORCH_TO_TRITON = {torch.float32: "fp32", torch.float64: "fp64", torch.float16: "fp16", torch.bfloat16: "bf16",
                    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
                    torch.uint8: "u8", torch.bool: "i1"}


def _arg_type(a):
    if isinstance(a, torch.Tensor):
        return "*" + _TORCH_TO_TRITON[a.dtype]
    if isinstance(a, tuple):
        return tuple(_arg_type(x) for x in a)
    if isinstance(a, bool):
        return "i1"
    if isinstance(a, int):
        return mangle_type(a)
    if isinstance(a, float):
        return "fp32"
    raise TypeError(f"unexpected kernel argument {a!r}")


def _record(launches):
    def observe(kernel, grid, args, meta):
        names = kernel.arg_names
        params = dict(zip(names, args))
        params.update({k: v for k, v in meta.items() if k in names})
        constexprs = {names[i] for i in kernel.constexprs}
        signature, constants = {}, {}
        for name in names:
            if name not in params:
                continue  # a constexpr left at its default
            if name in constexprs:
                signature[name], constants[name] = "constexpr", params[name]
            else:
                signature[name] = _arg_type(params[name])
        key = (kernel.__name__, repr(sorted(signature.items())), repr(sorted((k, repr(v)) for k, v in constants.items())))
        options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages")}
        launches.setdefault(key, (kernel, signature, constants, options))
    return observe


def _workload():
    tgrad.manual_seed(0)
    for dtype in (tgrad.float32, tgrad.float64, tgrad.float16):
        x = tgrad.randn(5, 7, dtype=dtype, requires_grad=dtype is not tgrad.float16)
        w = tgrad.randn(7, 3, dtype=dtype, requires_grad=dtype is not tgrad.float16)
        b = tgrad.randn(3, dtype=dtype)
        y = (x @ w + b).relu()
        loss = (y.softmax(-1) * y.log_softmax(-1)).sum() + y.t().exp().mean() + (x[:, ::2] ** 2).amax()
        loss = loss + x.var(0).sum() + x.max(1).values.sum() + x.tanh().logsumexp(1).sum()
        if loss.requires_grad:
            loss.backward()
    ints = tgrad.arange(10)
    (ints > 3) & (ints < 8)
    tgrad.linspace(0, 1, 7), tgrad.eye(3), tgrad.rand(4), tgrad.randint(0, 5, (6,))
