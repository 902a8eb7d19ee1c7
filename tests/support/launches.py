"""Recording launches for the tests that compile a family's configurations for a GPU.

CI has no GPU, and Triton's interpreter accepts code the compiler rejects (e.g. a tuple indexed by
a non-constant). ``record_launches`` makes a launch observer that records each distinct launch
(kernel, argument types, compile-time constants, options), ready for ``triton.compile``."""
import torch
from triton.runtime.jit import mangle_type

_TORCH_TO_TRITON = {torch.float32: "fp32", torch.float64: "fp64", torch.float16: "fp16", torch.bfloat16: "bf16",
                    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
                    torch.uint8: "u8", torch.bool: "i1"}


def arg_type(a):
    if isinstance(a, torch.Tensor):
        return "*" + _TORCH_TO_TRITON[a.dtype]
    if isinstance(a, tuple):
        return tuple(arg_type(x) for x in a)
    if isinstance(a, bool):
        return "i1"
    if isinstance(a, int):
        return mangle_type(a)
    if isinstance(a, float):
        return "fp32"
    raise TypeError(f"unexpected kernel argument {a!r}")


def record_launches(launches):
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
                signature[name] = arg_type(params[name])
        key = (kernel.__name__, repr(sorted(signature.items())), repr(sorted((k, repr(v)) for k, v in constants.items())))
        options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages")}
        launches.setdefault(key, (kernel, signature, constants, options))
    return observe
