"""Triton kernels of tgrad. They take and return torch tensors used purely as storage and know
nothing of ``tgrad.Tensor``.

Layout
------
- ``runtime/``: running a kernel, apart from the kernels. ``launch.py`` (``launch``,
  ``launch_site``, launch counts and observers) runs each one compiled on CUDA or, on the CPU, hands
  it to the CPU executor ``executor.py``, which owns a launch's hit (replay a recorded trace) and
  miss (interpret, record); ``interpreter.py``, ``recorder.py``, ``signature.py``, ``trace.py``,
  ``emitter.py``, ``memory.py`` and ``triton_private.py`` (Triton's private names) serve it.
  ``capture.py`` records CPU graphs, ``target.py`` says which device kind a launch is configured
  for, ``cuda_compile.py`` compiles launches for sm_90/sm_80 without a GPU (docs/gpu.md).
- ``helpers/``: what every family shares: ``layout.py`` (``collapse``, ``element_offset``,
  ``block_for``, ``block_shape_2d``, ``cdiv``, ``next_pow2``), ``dtypes.py`` (the one
  torch-to-Triton dtype table), ``scalars.py`` (fp64 scalars passed as bits).
- Kernel families: ``elementwise/`` (the pointwise kernel and its formulas), ``reductions/``
  (reduce, scan, sort, segment sums, softmax, the online log-sum-exp), ``indexing/`` (index,
  embedding, pad, triangular), ``linalg/`` (matmul, Cholesky and triangular solves), ``random/``
  (Philox fills, dropout, multinomial), ``spatial/`` (conv, unfold, pooling, interpolation),
  ``normalization/`` (layer, batch, RMS and group norm), ``losses/`` (elementwise losses,
  cross-entropy), ``optim/`` (one fused optimizer step, its update formulas, the parameter
  pointer tables, gradient clipping), and the single-file families ``attention.py``, ``rnn.py``,
  ``factories.py``. Each kernel file's docstring states its math.

The executor's switches and counters are reached from here (``replay_counts``,
``fallback_reasons``, ``count_replays``, ``set_replay``, ``replay_disabled``, ...), and the trace
cache's (``set_trace_cache``, ``trace_cache_dir``, ``trace_cache_counts``; ``python -m
tgrad.kernels.cache info|clear``), loaded on first use.

One dialect
-----------
- **What an op computes is a formula**: a ``@triton.jit`` function passed to the family's kernel
  as a compile-time constant, so the kernel holds the indexing, masking, dtypes and launch logic
  once. Elementwise ops (``elementwise/pointwise.py``: ``OP``), losses (``losses/elementwise.py``:
  ``LOSS``/``LOSS_BWD``), reductions (``reductions/reduce.py``: ``FOLD``/``TERM``/``FINISH``),
  random distributions (``random/philox.py``: ``DRAW``), indexing (``indexing/index.py``: ``OP``),
  matmul epilogues (``linalg/matmul.py``: ``ACT``), optimizer steps (``optim/step.py``:
  ``UPDATE``). A family's host function takes the op's public
  name and looks its formulas up in one table (``LOSSES``, ``REDUCTIONS``, ``INDEX_OPS``,
  ``ACTIVATIONS``). Derivative formulas are plain enough that tgrad also evaluates them on Tensors
  (``tgrad.ops.formula.traced``) for ``create_graph``.
- **How an operand is reached is a named constant** (``pointwise.LINEAR/SCALAR/STRIDED``), as
  are other layout/representation choices; compile-time booleans say what is present
  (``HAS_W``, ``EVEN_C``, ``ONE_CHUNK``).
- **Launch decisions ask one place which device kind they configure for**:
  ``runtime/target.py``'s ``target(device)`` (block sizes, tiles, warps, splits, paths); inside
  ``as_cuda()`` the CPU runs the GPU's configurations.
"""
from .runtime.launch import count_launches, launch_counts  # noqa: F401

_REPLAY_NAMES = ("replay_counts", "fallback_reasons", "count_replays", "set_replay", "replay_enabled",
                 "replay_verify", "replay_disabled", "ReplayMismatch", "clear_replay_cache")
_CACHE_NAMES = ("set_trace_cache", "trace_cache_dir", "trace_cache_counts")  # runtime/trace_cache.py


def __getattr__(name):
    # the executor needs Triton's private interpreter names: loaded when first asked for (or on the
    # first CPU launch), not by ``import tgrad``
    if name in _REPLAY_NAMES:
        from .runtime import executor
        return getattr(executor, name)
    if name in _CACHE_NAMES:
        from .runtime import trace_cache
        return getattr(trace_cache, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
