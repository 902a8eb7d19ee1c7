"""Checkpoints in memory: what ``tgrad.save`` writes for an object, and whether a loaded object is
the one saved."""
import io

import numpy as np
import torch

import tgrad


def saved_bytes(obj) -> bytes:
    """The bytes ``tgrad.save`` writes for ``obj``."""
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    return buf.getvalue()


def same_tree(a, b):
    """Equal structure, container types, array/tensor dtypes, shapes and values (NaN equal)."""
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same_tree(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return (type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, np.generic):
        return type(b) is type(a) and (a == b or (a != a and b != b))
    if isinstance(a, tgrad.Tensor):
        return isinstance(b, tgrad.Tensor) and a.dtype is b.dtype and torch.equal(a.torch(), b.torch())
    return type(a) is type(b) and a == b
