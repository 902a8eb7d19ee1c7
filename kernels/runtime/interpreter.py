"""Running a kernel through Triton's interpreter on the CPU, leanly (see ``kernels/runtime/launch.py``).

Why this is not just ``TRITON_INTERPRET=1``: Triton decides interpreter-or-compiler when a function
is decorated, so with the variable set *nothing* could run compiled, and without it Triton's own
``@jit`` helpers (``tl.cdiv``, ``tl.sum``, ``tl.sigmoid``, ``tl.randn`` ...) were decorated as
compiled functions, whose ``__call__`` refuses to run outside a compiled kernel. So while an
interpreted launch runs, and only then, ``JITFunction.__call__`` runs the helper's interpreted
rewrite instead.

Triton's own GridExecutor re-patches ``triton.language`` (an ``inspect.getmembers`` walk of five
modules) on every launch and on every helper call, never undoes the helper-call patches (which would
leave ``tl.core`` patched for later compiled CUDA kernels), and copies every CPU argument's storage
onto itself after the run. Here the language patch is computed once, applied and undone per launch
with plain ``setattr``, helpers run without re-patching, and the grid loop calls the rewritten
kernel directly on the CPU tensors' memory. ``tl.dot`` is routed to BLAS: the interpreter's own
``np.matmul(a, b, dtype=acc)`` bypasses BLAS and runs ~10x slower. Interpreted ops run without
Triton's integer-overflow sanitizer (its checks end in a device_assert that is a no-op without
debug), binary ops skip the semantic's broadcast work where there is none to do, and arguments
convert from cached types.

This module is imported on the first CPU launch: it needs Triton's private interpreter names
(``kernels/runtime/triton_private.py``, which checks the installed version).
"""
from __future__ import annotations

import dataclasses
import inspect
import threading
import types
from contextlib import contextmanager

import numpy as np
import torch
import triton

from .triton_private import (MISSING as _MISSING, InterpretedFunction, InterpreterError, JITFunction, TensorHandle,
                             get_np_dtype as _get_np_dtype, implicit_cvt as _implicit_cvt, interpreter_builder,
                             interpreter_semantic, module as _interpreter_module, normalize_ty as _normalize_ty,
                             patch_lang as _patch_lang, tuple_create as _tuple_create)

_TENSOR = triton.language.tensor
_lock = threading.RLock()  # the language patch is process-wide: one interpreted launch at a time

def _interpreted_twin(fn: JITFunction) -> InterpretedFunction:
    # Keyed through __dict__, not a dict of JITFunctions: hashing a JITFunction computes its
    # cache key, which walks its globals and chokes on the interpreter's patched builtins.
    twin = fn.__dict__.get("_tgrad_interpreted")
    if twin is None:
        twin = fn.__dict__["_tgrad_interpreted"] = InterpretedFunction(fn.fn)
    return twin


def _call_helper_interpreted(self, *args, **kwargs):
    try:
        return _interpreted_twin(self).rewrite()(*args, **kwargs)
    except InterpreterError:
        raise
    except Exception as e:
        raise InterpreterError(repr(e)) from e


class _LanguageModules:
    """Stands in for a function whose globals see both ``tl`` and ``tl.core``: what ``_patch_lang``
    inspects to decide which modules to patch."""
    __globals__ = {"tl": triton.language, "core": triton.language.core}


_language_patch = None  # a _PatchPlan of (obj, name, original, interpreted), computed on first use


_np_dtypes: dict = {}


def _np_dtype(tt_dtype):
    """The interpreter's ``_get_np_dtype``, memoised: it rebuilds a 19-entry dict of Triton dtypes
    on every call, and every interpreted op calls it (a tenth of an interpreted launch)."""
    if isinstance(tt_dtype, triton.language.block_type):
        tt_dtype = tt_dtype.element_ty  # the element type decides, as in the original
    key = tt_dtype.name
    np_dtype = _np_dtypes.get(key)
    if np_dtype is None:
        np_dtype = _np_dtypes[key] = _get_np_dtype(tt_dtype)
    return np_dtype


def _patch_table():
    global _language_patch
    if _language_patch is None:
        scope = _patch_lang(_LanguageModules)
        table = [(obj, name, original, getattr(obj, name)) for obj, name, original in scope._changes]
        scope.restore()
        table.append((_interpreter_module, "_get_np_dtype", _get_np_dtype, _np_dtype))
        _language_patch = _PatchPlan(table)
    return _language_patch


class _PatchPlan:
    """The patch table, applied fast: a module's entries become one ``__dict__.update`` each way
    (about 190 of the 280 attributes; setattr one by one was most of a small launch's fixed cost),
    the rest (class attributes) stay setattr calls."""

    def __init__(self, table):
        self.attributes = [e for e in table if type(e[0]) is not types.ModuleType]
        per_module: dict = {}
        for obj, name, original, new in table:
            if type(obj) is types.ModuleType:
                entry = per_module.setdefault(id(obj), (obj.__dict__, {}, {}))
                entry[1][name] = new  # the last patch of a name wins, as setattr in order
                entry[2].setdefault(name, original)  # restoring gives back the first original
        self.modules = []
        for namespace, new, originals in per_module.values():
            missing = [k for k, v in originals.items() if v is _MISSING]
            present = {k: v for k, v in originals.items() if v is not _MISSING}
            self.modules.append((namespace, new, present, missing))

    def __iter__(self):  # (obj, name, original, new) entries, as the table was
        yield from self.attributes


def _blas_dot(a, b, acc, input_precision=None, max_num_imprecise_acc=None):
    """``acc + a @ b`` with the operands widened to the accumulator's dtype (fp16/bf16 -> fp32, as
    the GPU accumulates), so numpy takes its BLAS path. A kernel's bf16 tiles go to ``tl.dot`` as
    they are, as compiled: the widening is the interpreter's business, not the kernel's."""
    dtype = acc.data.dtype
    return TensorHandle(np.matmul(_widened(a, dtype), _widened(b, dtype)) + acc.data, acc.dtype.scalar)


def _widened(x, dtype):
    """A dot operand's values as ``dtype``. The interpreter holds bf16 as its uint16 bits (numpy has
    no bf16), which ``astype`` would convert as integers: they are the high half of the fp32 of the
    same value, so shifting them there is the exact widening."""
    data = x.data
    if x.dtype.scalar == triton.language.bfloat16:
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data if data.dtype == dtype else data.astype(dtype)


_broadcast_impl_value = type(interpreter_semantic).broadcast_impl_value
_splat_types: dict = {}  # (block shape, scalar dtype name) -> (block type, its builder type)


def _broadcast_value(lhs, rhs):
    """The semantic's ``broadcast_impl_value`` (every binary op calls it), without its cost in the
    two common cases: two blocks of one shape pass through (Triton compares the shapes as
    ``tl.tuple``s, ~20 us), and a scalar beside a block is splat to a block type built once per
    shape and dtype (Triton builds two per call). Anything else is Triton's own."""
    lhs_type, rhs_type = lhs.type, rhs.type
    if lhs_type.is_block():
        if rhs_type.is_block():
            if lhs_type.shape.values == rhs_type.shape.values:
                return lhs, rhs
        else:
            return lhs, _splat(rhs, lhs_type)
    elif rhs_type.is_block():
        return _splat(lhs, rhs_type), rhs
    return _broadcast_impl_value(interpreter_semantic, lhs, rhs)


def _splat(scalar, like):
    key = (tuple(like.shape.values), scalar.type.scalar.name)
    types = _splat_types.get(key)
    if types is None:
        block = like.with_element_ty(scalar.type.scalar)
        types = _splat_types[key] = (block, block.to_ir(interpreter_builder))
    return interpreter_semantic.make_tensor(interpreter_builder.create_splat(types[1], scalar.handle), types[0])


_lean_options: dict = {}


def _without_sanitizer(options):
    lean = _lean_options.get(id(options))
    if lean is None or lean[0] is not options:
        lean = _lean_options[id(options)] = (options, dataclasses.replace(options, sanitize_overflow=False))
    return lean[1]


@contextmanager
def _interpreting():
    with _lock:  # the patch is process-wide; one interpreted launch at a time
        table = _patch_table()
        saved_call, saved_knob = JITFunction.__call__, triton.knobs.runtime.interpret
        JITFunction.__call__ = _call_helper_interpreted
        triton.knobs.runtime.interpret = True
        for namespace, new, _, _ in table.modules:
            namespace.update(new)
        for obj, name, _, new in table.attributes:
            setattr(obj, name, new)
        interpreter_builder.create_dot = _blas_dot  # an instance attribute, shadowing the method
        interpreter_semantic.broadcast_impl_value = _broadcast_value  # likewise
        saved_options = interpreter_builder.options
        if not saved_options.debug and saved_options.sanitize_overflow:
            # The overflow sanitizer wraps every int32 add/sub/mul in ~9 more interpreted ops that
            # end in a device_assert, which is a no-op without debug: pure cost (most of a small
            # kernel's time). Compiled kernels skip it the same way unless debugging.
            interpreter_builder.options = _without_sanitizer(saved_options)
        try:
            yield
        finally:
            interpreter_builder.options = saved_options
            del interpreter_builder.create_dot
            del interpreter_semantic.broadcast_impl_value
            for obj, name, original, _ in reversed(table.attributes):
                if original is _MISSING:
                    delattr(obj, name)
                else:
                    setattr(obj, name, original)
            for namespace, _, originals, missing in table.modules:
                namespace.update(originals)
                for name in missing:
                    del namespace[name]
            JITFunction.__call__ = saved_call
            triton.knobs.runtime.interpret = saved_knob


_arg_templates: dict = {}  # argument kind -> a converted example, whose type the next ones share
_converted: dict = {}  # int or tuple of ints -> its interpreter tensor (immutable; shared by launches)


def _pointer(arg):
    """A tensor argument as the interpreter's pointer scalar. ``tl.tensor.__init__`` re-derives
    shape and type each time; every pointer of a dtype has the same ones, so they are copied
    from a template (the interpreter reads only these attributes)."""
    template = _arg_templates.get(arg.dtype)
    if template is None:
        template = _arg_templates[arg.dtype] = _implicit_cvt(arg).__dict__
    t = _TENSOR.__new__(_TENSOR)
    t.__dict__.update(template)
    t.handle = TensorHandle(np.array([arg.data_ptr()], dtype=np.uint64), template["type"])
    return t


def _convert(arg):
    """``_implicit_cvt`` for the arguments kernels take (ints, bools, tensors, tuples of them),
    without its per-argument cost (a tenth of a small launch): ints and tuples of ints convert
    once and are reused (nothing in the interpreter writes to an argument's data), pointers are
    built from a per-dtype template."""
    kind = type(arg)
    # only exact ints, flat: True == 1 and (True,) == (1,) as keys, but they convert differently
    if kind is int or (kind is tuple and all(type(a) is int for a in arg)):
        t = _converted.get(arg)
        if t is None:
            if len(_converted) > 4096:  # shapes and strides vary without bound in a long run
                _converted.clear()
            t = _converted[arg] = _implicit_cvt(arg)
        return t
    if kind is tuple:
        return _tuple_create(arg, [_convert(a) for a in arg])
    if isinstance(arg, torch.Tensor):
        return _pointer(arg)
    return _implicit_cvt(arg)


class _Interpreted:
    """A kernel's interpreted form: the rewritten Python function and, computed once, how a call's
    positional and keyword arguments map onto its parameters and which are compile-time constants
    (passed through as they are, not converted to interpreter tensors)."""

    def __init__(self, kernel: JITFunction):
        self.kernel, self._fn = kernel, None
        self.signature = inspect.signature(kernel.fn)
        annotations = {k: _normalize_ty(v) for k, v in inspect.get_annotations(kernel.fn).items()}
        self.constexprs = {k for k, v in annotations.items() if v == "constexpr"}
        self.names = tuple(self.signature.parameters)
        self.defaults = {k: p.default for k, p in self.signature.parameters.items()
                         if p.default is not inspect.Parameter.empty}

    @property
    def fn(self):
        """The rewritten function, made when first run: a process that only replays traces from the
        trace cache (``runtime/trace_cache.py``) never pays Triton's rewrite of the kernel's AST."""
        fn = self._fn
        if fn is None:
            fn = self._fn = _interpreted_twin(self.kernel).rewrite()
        return fn

    def _arguments(self, args, meta):
        names = self.names
        if len(args) > len(names) or any(k not in names for k in meta):
            self.signature.bind(*args, **meta)  # raises the TypeError naming the problem
        call = dict(zip(names, args))
        for k, v in meta.items():
            if k in call:
                raise TypeError(f"multiple values for argument '{k}'")
            call[k] = v
        if len(call) < len(names):
            for k in names:
                if k not in call:
                    if k not in self.defaults:
                        raise TypeError(f"missing a required argument: '{k}'")
                    call[k] = self.defaults[k]
        constexprs = self.constexprs
        return {k: v if k in constexprs else _convert(v) for k, v in call.items()}

    def prepare(self, grid, args, meta):
        """(3-d grid, converted arguments): everything a run needs, reusable by a graph replay."""
        return tuple(grid) + (1,) * (3 - len(grid)), self._arguments(args, meta)

    def execute(self, grid, call):
        interpreter_builder.set_grid_dim(*grid)
        for x in range(grid[0]):
            for y in range(grid[1]):
                for z in range(grid[2]):
                    interpreter_builder.set_grid_idx(x, y, z)
                    self.fn(**call)


def _interpreted(kernel: JITFunction) -> _Interpreted:
    runner = kernel.__dict__.get("_tgrad_runner")
    if runner is None:
        runner = kernel.__dict__["_tgrad_runner"] = _Interpreted(kernel)
    return runner
