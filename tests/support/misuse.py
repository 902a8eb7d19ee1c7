"""The misuse catalog's runner: its rows are split by area over tests/system/test_misuse_*.py.

A row is ``(id, call(T), exception, pattern the message contains, runs against torch too[, kind])``.
The pattern names the problem *and* the offending values (the index, the sizes, the dtypes), so a
user can fix the call from the message alone. Where PyTorch raises for the same call, the row is
also run against torch and must raise the same exception type there (``T`` is the module under
test: ``tgrad`` or ``torch``); rows marked tgrad-only are tgrad's own checks (checkpoints,
interpreter limits) or places where tgrad is deliberately stricter.

Every row runs under ``kernel_guard.memory_checked()``, so no kernel launched on the way to the
error may touch memory outside the tensors it was given. Rows about out-of-range *indices* (kind
``"index"``) also assert that no kernel that trusts its indices ran: only the checking kernels (the
bounds check, and the embedding and cross-entropy forwards, which check in the same launch and mask
every lane whose index is out of range -- the ``1 << 40`` rows prove that mask, as an unmasked read
there would leave every tensor by terabytes).
"""
from __future__ import annotations

import re
import warnings

import pytest
import torch

import tgrad
import tgrad.optim  # noqa: F401  (rows reach it as T.optim, like torch.optim)
import tgrad.utils.data  # noqa: F401
from support.kernel_guard import memory_checked
from tgrad.kernels.runtime.launch import count_launches

# kernels that address memory with index values they are given and do not check themselves
TRUSTS_INDICES = {"index_kernel", "embedding_bwd_kernel", "one_hot_kernel", "cross_entropy_bwd_kernel",
                  "max_pool_bwd_kernel"}
HUGE = 1 << 40
E, I, T_, V, A = RuntimeError, IndexError, TypeError, ValueError, AssertionError


def ones(T, *shape, **kw):
    return T.ones(*shape, **kw)


def leaf(T, *shape):
    return T.ones(*shape, requires_grad=True)


def idx(T, values):
    return T.tensor(values, dtype=T.int64)


def mlp(T):
    return T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 2))


HAS_CUDA = torch.cuda.is_available()
SKIP = {"cuda": pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device"),
        "no-cuda": pytest.mark.skipif(HAS_CUDA, reason="only without a CUDA device")}
PARAMS = "call, exc, pattern, torch_too, kind"


def rows(cases):
    """The rows as pytest params for ``PARAMS``, each with its id and its skip mark."""
    return [_row(case) for case in cases]


def _row(case):
    cid, call, exc, pattern, torch_too, *kind = case
    kind = kind[0] if kind else None
    return pytest.param(call, exc, pattern, torch_too, kind, id=cid, marks=[SKIP[kind]] if kind in SKIP else [])


def check_misuse(call, exc, pattern, torch_too, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if torch_too:  # the row describes a real misuse: PyTorch refuses it the same way
            with pytest.raises(exc):
                call(torch)
        with memory_checked() as violations, count_launches() as launches:
            with pytest.raises(exc) as err:
                call(tgrad)
    message = str(err.value)
    assert re.search(pattern, message, re.S), f"message {message!r} does not match {pattern!r}"
    assert not violations
    if kind == "index":
        used = TRUSTS_INDICES & set(launches)
        assert not used, f"out-of-range indices reached {sorted(used)}"
