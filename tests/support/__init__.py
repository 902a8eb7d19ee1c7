"""What the tests share (tests/ is on sys.path through tests/conftest.py, so test files import
``from support.<module> import ...``):

- ``reference``: tgrad tensors paired with float64 torch references on the same numbers,
  ``assert_close`` and the per-dtype tolerances, ``check_vs_torch`` / ``compare`` /
  ``compare_backward`` (one op in both libraries: value, node, gradients; ``compare_double_backward``
  / ``compare_second_order``: second derivatives), ``run`` / ``same``, exact-message
  ``raises``, random ``upstream`` gradients, the test ``DEVICES`` and ``requires_cuda``.
- ``differential``: run one program ``fn(L, F)`` on torch and on tgrad and compare what came out.
- ``fuzz_programs``: the random programs of the differential fuzzers and how their outcomes compare.
- ``modules``: PyTorch's weights copied into a tgrad module; one backward through both.
- ``kernel_guard``: lane-by-lane address checks of interpreted launches, poisoned allocations.
- ``optimizers``: optimizers in both libraries on the same parameters and gradients, compared.
- ``launches``: recording each distinct launch, for the tests that compile them for a GPU.
- ``workloads``: the op workloads the compile-as-CUDA test runs configured as on a GPU.
- ``checkpoints``: the bytes ``tgrad.save`` writes for an object; ``same_tree`` (a loaded object is
  the one saved: structure, container types, dtypes, values).
- ``nested``: ``assert_nested_close``, for what hooks recorded in both libraries (nested values).
- ``torch_audit``: ``AtenRecorder``, which sees every aten op torch runs (torch must compute nothing).
- ``autograd_checks``: PyTorch's exact autograd messages, ``raises`` (exact text or prefix),
  ``warns`` / ``no_warnings``, for the single-behaviour autograd tests.
- ``scenarios``: one scenario run with ``L = torch`` and ``L = tgrad``, its results compared.
- ``exact``: ``same``, a tgrad tensor equal to a torch tensor bit for bit (factories, casts).
- ``misuse``: the misuse catalog's runner (its rows: tests/system/test_misuse_*.py).
"""
