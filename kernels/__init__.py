"""Triton kernels of tgrad. They take and return torch tensors used purely as storage and know
nothing of ``tgrad.Tensor``; ``tgrad.kernels.launch.launch`` runs each one compiled on CUDA or
interpreted on the CPU, where a launch seen before replays as recorded numpy (``kernels/replay.py``:
``replay_counts``, ``fallback_reasons``, ``count_replays``, ``set_replay``, ``replay_disabled``).

One dialect
-----------
- **What an op computes is a formula**: a ``@triton.jit`` function passed to the family's kernel
  as a compile-time constant, so the kernel holds the indexing, masking, dtypes and launch logic
  once and each op is a few lines beside its derivative. Elementwise ops (``pointwise.py`` runs
  ``math_ops.py``/``math_elementary.py``/``math_activations.py``: ``OP``), losses (``losses.py``:
  ``LOSS``/``LOSS_BWD``), reductions (``reduce.py``: ``FOLD``/``TERM``/``FINISH``), random
  distributions (``random.py``: ``DRAW``), indexing (``index.py``: ``OP``), matmul epilogues
  (``matmul.py``: ``ACT``). A family's host function takes the op's public name and looks its
  formulas up in one table (``LOSSES``, ``REDUCTIONS``, ``INDEX_OPS``, ``ACTIVATIONS``).
  Derivative formulas are plain enough that tgrad also evaluates them on Tensors
  (``tgrad.ops.formula.traced``) for ``create_graph``: a derivative is written once. The one
  exception left is ``optim.py``, whose four updates share one pointer-table walk and are chosen
  by ``ALGO`` (``ALGORITHMS``).
- **How an operand is reached is a named constant** (``pointwise.LINEAR/SCALAR/STRIDED``), as
  are other layout/representation choices; compile-time booleans say what is present
  (``HAS_W``, ``EVEN_C``, ``ONE_CHUNK``).
- **Shared helpers are public, in one place**: ``layout.py`` (``collapse``, ``element_offset``,
  ``block_for``, ``block_shape_2d``, ``cdiv``, ``next_pow2``), ``dtypes.py`` (the one
  torch-to-Triton dtype table), ``scalars.py`` (fp64 scalars as bits), ``logsumexp.py`` (the
  online log-sum-exp of reductions, softmax and cross-entropy), ``sort.py``.
- **Launch decisions ask one place which device kind they configure for**: ``target.py``'s
  ``target(device)`` (block sizes, tiles, warps, splits, paths); inside ``as_cuda()`` the CPU runs
  the GPU's configurations, and ``cuda_compile.py`` compiles launches for sm_90/sm_80 as a GPU
  launch binds them (docs/gpu.md).
"""
from .launch import count_launches, launch_counts  # noqa: F401

_REPLAY_NAMES = ("replay_counts", "fallback_reasons", "count_replays", "set_replay", "replay_enabled",
                 "replay_verify", "replay_disabled", "ReplayMismatch", "clear_replay_cache")


def __getattr__(name):
    # the executor needs Triton's private interpreter names: loaded when first asked for (or on the
    # first CPU launch), not by ``import tgrad``
    if name in _REPLAY_NAMES:
        from . import replay
        return getattr(replay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
