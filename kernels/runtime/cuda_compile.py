"""Compiling launches for a CUDA target as ``kernel[grid](...)`` would on a GPU, with no GPU.

A GPU launch binds its arguments through Triton's JIT specialisation: an int equal to 1 becomes a
compile-time constant, ints divisible by 16 and 16-aligned pointers are marked so, and the options
(``num_warps``, ``num_stages``, ...) are parsed by the backend. ``compile_launch`` takes that same
path with the CUDA backend of a chosen architecture, then compiles with Triton's bundled ptxas, so
a configuration that would fail to compile on a GPU fails here. ``CompileObserver`` is a
``launch_observers`` entry: it compiles every distinct launch it sees (inside
``tgrad.kernels.runtime.target.as_cuda()`` these are the GPU's configurations) and collects the failures
and grid-limit violations with whatever ``context()`` names (the running test).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field

import torch
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import create_function_from_signature

__all__ = ["specialise", "compile_launch", "resource_usage", "CompileObserver", "compile_report", "GRID_LIMITS"]

GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)  # CUDA's x, y, z grid dimensions
_backends: dict = {}
_binders: dict = {}


def _backend(arch: int):
    backend = _backends.get(arch)
    if backend is None:
        target = GPUTarget("cuda", arch, 32)
        backend = _backends[arch] = (target, make_backend(target))
    return backend


def specialise(kernel, args, meta, arch: int):
    """``(key, ASTSource, options)`` of ``kernel[grid](*args, **meta)`` on sm_``arch``: the binding
    a GPU launch makes (``JITFunction.run``), ``key`` naming the compiled variant."""
    key, binding = _bind(kernel, args, meta, arch)
    return (key, *_source(kernel, binding, arch))


def _bind(kernel, args, meta, arch: int):
    """(key, binding): the key from the binding alone, so a launch of a known variant skips packing
    (Triton's ``find_paths_if`` leaves two reference cycles a call: garbage while the collector is off)."""
    target, backend = _backend(arch)
    binder = _binders.get((kernel, arch))
    if binder is None:
        binder = _binders[(kernel, arch)] = create_function_from_signature(kernel.signature, kernel.params, backend)
    meta = dict(meta, debug=meta.get("debug", kernel.debug) or knobs.runtime.debug,
                instrumentation_mode=knobs.compilation.instrumentation_mode,
                fpsan_homomorphic_casts=knobs.compilation.fpsan_homomorphic_casts)
    bound_args, specialization, options = binder(*args, **meta)
    return (kernel.__name__, arch, str(specialization), str(options)), (meta, bound_args, specialization, options)


def _source(kernel, binding, arch: int):
    """(ASTSource, options) of a ``_bind`` binding."""
    options, signature, constexprs, attrs = kernel._pack_args(_backend(arch)[1], *binding)
    return ASTSource(kernel, signature, constexprs, attrs), options


def compile_launch(kernel, args, meta, arch: int = 90):
    """The ``CompiledKernel`` a GPU of compute capability ``arch`` would build for this launch."""
    _, src, options = specialise(kernel, args, meta, arch)
    return _compile(src, options, arch)


def _compile(src, options, arch: int):
    return triton.compile(src, target=_backend(arch)[0], options=options.__dict__)


def resource_usage(compiled) -> dict:
    """{'registers', 'spill_bytes', 'local_arrays', 'shared' (static and Triton's dynamic bytes)}
    of a compiled kernel, read from its cubin with the cuobjdump Triton bundles, its PTX and its
    metadata. ``spill_bytes`` is the local memory a thread uses beyond the arrays its PTX declares
    (``local_arrays``: libdevice's fp64 sin/cos/tan argument reduction keeps a 40-byte one, which
    no tile size changes), its stack frame included: where ptxas gives up on a kernel's register
    pressure it reports few registers and puts the spills on the stack (attention's backward at
    64 x 64 fp32 tiles: 32 registers, a 7,808-byte stack frame)."""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(compiled.asm["cubin"])
        text = subprocess.run([tool, "--dump-resource-usage", path], capture_output=True, text=True,
                              check=True).stdout
    fields = dict(item.split(":", 1) for item in text.split() if ":" in item and item.split(":", 1)[1].isdigit())
    arrays = sum(int(n) for n in _LOCAL_ARRAY.findall(compiled.asm.get("ptx", "")))
    return {"registers": int(fields.get("REG", 0)),
            "spill_bytes": max(0, int(fields.get("LOCAL", 0)) + int(fields.get("STACK", 0)) - arrays),
            "local_arrays": arrays,
            "shared": int(fields.get("SHARED", 0)) + int(getattr(compiled.metadata, "shared", 0))}


_LOCAL_ARRAY = re.compile(r"\.local\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]")


@dataclass
class CompileObserver:
    """Compiles each distinct launch for ``archs``. ``coverage``: compile one launch per kernel,
    dtypes and path (its constexpr flags, formulas and dtypes, not its block sizes) instead of
    every distinct specialisation. ``usage``: also read each compiled kernel's registers and
    spills. ``context``: names the launch's origin in the records (the test)."""
    archs: tuple = (90, 80)
    coverage: bool = False
    usage: bool = False
    context: object = None
    compiled: dict = field(default_factory=dict)  # key -> {"kernel", "arch", "context", and usage}
    failures: list = field(default_factory=list)  # (context, kernel, arch, message)

    def __call__(self, kernel, grid, args, meta):
        where = self.context() if self.context else None
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        if any(g > limit for g, limit in zip(grid, GRID_LIMITS)):
            self.failures.append((where, kernel.__name__, None, f"grid {grid} exceeds CUDA's {GRID_LIMITS}"))
        for arch in self.archs:
            key = (kernel.__name__, arch, _path(kernel, args, meta)) if self.coverage else None
            if key in self.compiled:
                continue
            record = {"kernel": kernel.__name__, "arch": arch, "context": where}
            try:
                exact, binding = _bind(kernel, args, meta, arch)
                key = key or exact
                if key in self.compiled:
                    continue
                compiled = _compile(*_source(kernel, binding, arch), arch)
                if self.usage:
                    record.update(resource_usage(compiled))
            except Exception as e:  # every failure is collected, with what launched it
                key = key or (kernel.__name__, arch, repr(sorted(meta.items())))
                record["failed"] = True
                self.failures.append((where, kernel.__name__, arch, f"{type(e).__name__}: {str(e)[:400]}"))
            self.compiled[key] = record


def _path(kernel, args, meta):
    """What makes a launch another path of its kernel: dtypes of its tensors and the non-int
    compile-time values (flags, formulas, dtypes); block sizes and other ints are not."""
    names = kernel.arg_names
    dtypes = tuple(str(a.dtype) for a in args if isinstance(a, torch.Tensor))
    flags = tuple(sorted((k, v if isinstance(v, (bool, str)) else getattr(v, "__name__", str(v)))
                         for k, v in meta.items() if k in names and not (isinstance(v, int) and not isinstance(v, bool))))
    return dtypes, flags


def compile_report(observer: CompileObserver) -> dict:
    """(kernel, arch) -> {'configurations', 'failures', 'first' (what launched it first), and with
    usage: the most 'registers', 'spill_bytes' and 'shared' of its configurations, and
    'most_spill', what launched the configuration that spills most (where one spills)}."""
    report: dict = {}
    for record in observer.compiled.values():
        row = report.setdefault((record["kernel"], record["arch"]),
                                {"configurations": 0, "failures": 0, "first": record["context"]})
        row["configurations"] += 1
        row["failures"] += bool(record.get("failed"))
        if record.get("spill_bytes", 0) > row.get("spill_bytes", 0):
            row["most_spill"] = record["context"]
        for name in ("registers", "spill_bytes", "shared"):
            if name in record:
                row[name] = max(row.get(name, 0), record[name])
    return report
