"""Attach the ops to ``Tensor`` as methods and Python operators (done once, at import)."""
from __future__ import annotations

import numbers

from .. import _dtype
from ..tensor import Tensor, _legacy_scalar
from tgrad.kernels import math_ops as M
from . import pointwise as P
from . import factories as F
from . import indexing
import tgrad.ops as ops


def _method(name, fn):
    setattr(Tensor, name, fn)


# one-argument ops: x.exp() == tgrad.exp(x)
for _name in ("neg", "negative", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
              "sigmoid", "relu", "sign", "floor", "ceil", "clone", "t", "contiguous", "logical_not", "silu",
              "isnan", "isinf", "isfinite"):
    _method(_name, getattr(ops, _name))

# ops taking more arguments, same signature as the function
for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow", "maximum",
              "minimum", "clamp", "clip", "round", "eq", "ne", "lt", "le", "gt", "ge", "less", "less_equal",
              "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
              "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "norm",
              "logsumexp", "softmax", "log_softmax", "all", "any",
              "matmul", "mm", "bmm", "dot", "mv", "outer", "inner",
              "reshape", "view", "permute", "transpose", "swapaxes", "squeeze", "unsqueeze", "expand", "flatten",
              "unflatten", "split", "chunk", "unbind", "narrow", "movedim", "broadcast_to"):
    _method(_name, getattr(ops, _name))

Tensor.where = lambda self, condition, other: ops.where(condition, self, other)
Tensor.view_as = lambda self, other: ops.view(self, *other.shape)
Tensor.reshape_as = lambda self, other: ops.reshape(self, *other.shape)
Tensor.expand_as = lambda self, other: ops.expand(self, *other.shape)
Tensor.type_as = lambda self, other: self.to(other.dtype)


def _select(self, dim, index):
    d = self._dim(dim)
    if not -self.shape[d] <= index < self.shape[d]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {d}")
    return indexing.getitem(self, (slice(None),) * d + (index,))


Tensor.select = _select
Tensor.gelu = lambda self, approximate="none": ops.gelu(self, approximate)
Tensor.T = property(lambda self: ops.permute(self, *reversed(range(self.ndim))))
Tensor.mT = property(lambda self: ops.transpose(self, -2, -1))

# advanced indexing and sorting (ops/advanced.py)
for _name in ("index_select", "gather", "scatter_add", "masked_fill", "masked_select", "nonzero", "sort", "argsort"):
    _method(_name, getattr(ops, _name))
Tensor.masked_fill_ = lambda self, mask, value: ops.advanced.masked_fill_(self, mask, value)
Tensor.scatter_add_ = lambda self, dim, index, src: P.inplace(
    self, lambda a, i, s: ops.scatter_add(a, dim, i, s), index, src)


# ----------------------------------------------------------------------------- conversions

def _to(self, *args, dtype=None, device=None, copy=False, non_blocking=False):
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (_dtype.dtype,)) or (not isinstance(a, str) and a.__class__.__name__ == "dtype"):
            dtype = a
        else:
            device = a
    dtype = _dtype.as_dtype(dtype) if dtype is not None else self.dtype
    device = _dtype.as_device(device) if device is not None else self.device
    if dtype is self.dtype and device == self.device and not copy:
        return self
    return P.ToCopy.apply(self, dtype, device)


Tensor.to = _to
Tensor.cpu = lambda self: self.to(device="cpu")
Tensor.cuda = lambda self, device=None: self.to(device=device if device is not None else "cuda")
for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("bfloat16", _dtype.bfloat16), ("long", _dtype.int64), ("int", _dtype.int32),
                   ("bool", _dtype.bool), ("short", _dtype.int16), ("byte", _dtype.uint8), ("char", _dtype.int8)):
    _method(_name, (lambda dt: lambda self: self.to(dt))(_dt))


def _new_factory(fn):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    return method


Tensor.new_zeros = _new_factory(F.zeros)
Tensor.new_ones = _new_factory(F.ones)
Tensor.new_empty = _new_factory(F.empty)
Tensor.new_full = lambda self, size, value, dtype=None, device=None, requires_grad=False: F.full(
    size, value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
Tensor.new_tensor = lambda self, data, dtype=None, device=None, requires_grad=False: F.tensor(
    data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- operators

Tensor.__add__ = Tensor.__radd__ = lambda a, b: ops.add(a, b)
Tensor.__sub__ = lambda a, b: ops.sub(a, b)
Tensor.__rsub__ = lambda a, b: ops.rsub(a, b)
Tensor.__mul__ = Tensor.__rmul__ = lambda a, b: ops.mul(a, b)
Tensor.__truediv__ = lambda a, b: ops.div(a, b)
Tensor.__rtruediv__ = lambda a, b: ops.mul(ops.reciprocal(a), b)
Tensor.__floordiv__ = lambda a, b: ops.div(a, b, rounding_mode="floor")
Tensor.__pow__ = lambda a, b: ops.pow(a, b)
Tensor.__rpow__ = lambda a, b: ops.pow(b, a)
Tensor.__matmul__ = lambda a, b: ops.matmul(a, b)
Tensor.__rmatmul__ = lambda a, b: ops.matmul(b, a)
Tensor.__neg__ = lambda a: ops.neg(a)
Tensor.__pos__ = lambda a: a
Tensor.__abs__ = lambda a: ops.abs(a)
Tensor.__eq__ = lambda a, b: ops.eq(a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented
Tensor.__ne__ = lambda a, b: ops.ne(a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented
Tensor.__lt__ = lambda a, b: ops.lt(a, b)
Tensor.__le__ = lambda a, b: ops.le(a, b)
Tensor.__gt__ = lambda a, b: ops.gt(a, b)
Tensor.__ge__ = lambda a, b: ops.ge(a, b)
Tensor.__and__ = Tensor.__rand__ = lambda a, b: ops._bitwise(M.logical_and, a, b)
Tensor.__or__ = Tensor.__ror__ = lambda a, b: ops._bitwise(M.logical_or, a, b)
Tensor.__xor__ = Tensor.__rxor__ = lambda a, b: ops._bitwise(M.logical_xor, a, b)
Tensor.__invert__ = lambda a: ops.logical_not(a) if a.dtype is _dtype.bool else (_ for _ in ()).throw(
    TypeError("tgrad supports ~ on bool tensors only"))
Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem


# ----------------------------------------------------------------------------- in place

def _check_cast(self, *others, division=False):
    """PyTorch refuses an in-place result that the target's dtype cannot hold (a float into a Long)."""
    rt = ops.result_type(self, *others)
    if division and not rt.is_floating_point:
        rt = _dtype.get_default_dtype()
    if _dtype.category(rt) > _dtype.category(self.dtype):
        raise RuntimeError(f"result type {_legacy_scalar(rt, True)} can't be cast to the desired output type "
                           f"{_legacy_scalar(self.dtype, True)}")


def _inplace_binary(fn, formula):
    def method(self, other, *, alpha=None):
        _check_cast(self, other)
        if alpha is not None:
            return P.inplace(self, lambda a, b: fn(a, b, alpha=alpha), other, formula=formula, params=(alpha,))
        return P.inplace(self, fn, other, formula=formula, params=(1.0,))
    return method


Tensor.add_ = _inplace_binary(ops.add, M.add)
Tensor.sub_ = _inplace_binary(ops.sub, M.sub)


def _mul_(self, other):
    _check_cast(self, other)
    return P.inplace(self, ops.mul, other, formula=M.mul)


def _div_(self, other):
    _check_cast(self, other, division=True)
    return P.inplace(self, ops.div, other, formula=M.div)


def _pow_(self, e):
    _check_cast(self, e)
    if not self.dtype.is_floating_point:  # integer powers are rounded by the out-of-place op
        return P.inplace(self, ops.pow, e)
    if isinstance(e, numbers.Number):  # the scalar formula: x**2 exactly x*x, as out of place
        return P.inplace(self, lambda a: ops.pow(a, e), formula=M.pow_scalar, params=(e,))
    return P.inplace(self, ops.pow, e, formula=M.pow_)


Tensor.mul_, Tensor.div_, Tensor.pow_ = _mul_, _div_, _pow_
Tensor.__iadd__ = lambda self, other: self.add_(other)
Tensor.__isub__ = lambda self, other: self.sub_(other)
Tensor.__imul__ = lambda self, other: self.mul_(other)
Tensor.__itruediv__ = lambda self, other: self.div_(other)
Tensor.neg_ = lambda self: P.inplace(self, lambda a: ops.neg(a), formula=M.neg)
Tensor.exp_ = lambda self: P.inplace(self, lambda a: ops.exp(a), formula=M.exp)
Tensor.sqrt_ = lambda self: P.inplace(self, lambda a: ops.sqrt(a), formula=M.sqrt)
Tensor.relu_ = lambda self: P.inplace(self, lambda a: ops.relu(a), formula=M.relu)
Tensor.sigmoid_ = lambda self: P.inplace(self, lambda a: ops.sigmoid(a), formula=M.sigmoid)
Tensor.tanh_ = lambda self: P.inplace(self, lambda a: ops.tanh(a), formula=M.tanh_)


def _clamp_(self, min=None, max=None):  # noqa: A002
    _check_cast(self, *(b for b in (min, max) if b is not None))
    if not self.dtype.is_floating_point or isinstance(min, Tensor) or isinstance(max, Tensor):
        return P.inplace(self, lambda a: ops.clamp(a, min, max))  # no +-inf bound in integer dtypes
    lo = -float("inf") if min is None else min
    hi = float("inf") if max is None else max
    return P.inplace(self, lambda a: ops.clamp(a, min, max), formula=M.clamp, params=(lo, hi))


Tensor.clamp_ = Tensor.clip_ = _clamp_


def _fill_(self, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        return P.inplace(self, P.FillTensor.apply, value, formula=M.second)
    return P.inplace(self, lambda a: P.Fill.apply(a, value), formula=M.fill, params=(value,))


Tensor.fill_ = _fill_
Tensor.zero_ = lambda self: P.inplace(self, lambda a: P.Zero.apply(a, 0), formula=M.fill, params=(0,))


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = F.tensor(src, dtype=self.dtype, device=self.device)
    if src.device != self.device:
        src = src.to(device=self.device)
    P.broadcast_shapes(self.shape, src.shape)
    return P.inplace(self, P.Copy.apply, src, formula=M.second)


def _accumulate_(self, other):
    """``self += other`` without autograd checks: the engine summing into an existing ``.grad``."""
    P.map_(M.add, [self, other], self.dtype, (1.0,), out=self, compute=self.dtype)
    self._version.value += 1
    return self


Tensor._accumulate_ = _accumulate_
Tensor.copy_ = _copy_
