"""The Tensor methods and operators that are not a function's twin: conversions, ``new_*``
factories, Python operators, ``x.where(...)``, ``.T``, and the hand-written in-place ops. Each is
put in the registry's METHODS (installed on Tensor by ``ops/__init__``), beside the function
twins (``x.sum()`` is ``tgrad.sum``) listed here by name."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from . import gather_scatter, matmul, reduce, shape, softmax, sorting, statistics
from . import factories as F
from . import pointwise as P
from . import elementwise, integer
from .common import broadcast_shapes, require_argument
from .formula import fused
from .generated import check_cast
from .indexing import getitem, setitem
from .inplace import write_inplace
from .registry import FUNCTIONS, METHODS
from .views import refresh_view

# functions that are also methods with the same signature: x.sum(1) == tgrad.sum(x, 1)
_TWINS = {
    reduce: ("sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "all", "any"),
    statistics: ("var", "std", "norm"),
    softmax: ("logsumexp", "softmax", "log_softmax"),
    matmul: ("matmul", "mm", "bmm", "dot", "mv", "outer", "inner"),
    shape: ("t", "contiguous", "reshape", "view", "permute", "transpose", "swapaxes", "squeeze", "unsqueeze",
            "expand", "flatten", "unflatten", "split", "chunk", "unbind", "narrow", "movedim", "broadcast_to"),
    gather_scatter: ("index_select", "gather", "scatter_add", "masked_fill", "masked_select", "nonzero"),
    sorting: ("sort", "argsort"),
}
for _module, _names in _TWINS.items():
    for _name in _names:
        METHODS[_name] = getattr(_module, _name)
METHODS["silu"] = FUNCTIONS["silu"]


def _method(name, fn):
    METHODS[name] = fn


def _legacy_init(self, *args, device=None):
    """The legacy constructor: ``Tensor(list)`` copies data, ``Tensor(2, 3)`` allocates zeros."""
    if len(args) == 1 and not isinstance(args[0], int):
        src = F.tensor(args[0], dtype=_dtype.get_default_dtype(), device=device)
    else:
        src = F.zeros(*args, device=device)
    Tensor._init(self, src._data)


def _select(self, dim, index):
    d = self._dim(dim)
    if not -self.shape[d] <= index < self.shape[d]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {d}")
    return getitem(self, (slice(None),) * d + (index,))


METHODS["__init__"] = _legacy_init
METHODS["_refresh_view"] = refresh_view
METHODS["where"] = lambda self, condition, other: FUNCTIONS["where"](condition, self, other)
METHODS["view_as"] = lambda self, other: shape.view(self, *other.shape)
METHODS["reshape_as"] = lambda self, other: shape.reshape(self, *other.shape)
METHODS["expand_as"] = lambda self, other: shape.expand(self, *other.shape)
METHODS["type_as"] = lambda self, other: self.to(other.dtype)
METHODS["select"] = _select
METHODS["T"] = property(lambda self: shape.permute(self, *reversed(range(self.ndim))))


def _mT(self):
    if self.ndim == 0:  # PyTorch: the identity on 0-d tensors (deprecated there)
        return shape.view(self, ())
    if self.ndim == 1:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                           "tensor.")
    return shape.transpose(self, -2, -1)


METHODS["mT"] = property(_mT)
METHODS["masked_fill_"] = lambda self, mask, value: gather_scatter.masked_fill_(self, mask, value)
METHODS["scatter_add_"] = lambda self, dim, index, src: write_inplace(
    self, lambda a, i, s: gather_scatter.scatter_add(a, dim, i, s), index, src)


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


METHODS["to"] = _to
METHODS["cpu"] = lambda self: self.to(device="cpu")
METHODS["cuda"] = lambda self, device=None: self.to(device=device if device is not None else "cuda")
for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("bfloat16", _dtype.bfloat16), ("long", _dtype.int64), ("int", _dtype.int32),
                   ("bool", _dtype.bool), ("short", _dtype.int16), ("byte", _dtype.uint8), ("char", _dtype.int8)):
    _method(_name, (lambda dt: lambda self: self.to(dt))(_dt))


def _new_factory(fn, name):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        require_argument(size, name, "size")
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    return method


METHODS["new_zeros"] = _new_factory(F.zeros, "new_zeros")
METHODS["new_ones"] = _new_factory(F.ones, "new_ones")
METHODS["new_empty"] = _new_factory(F.empty, "new_empty")
METHODS["new_full"] = lambda self, size, value, dtype=None, device=None, requires_grad=False: F.full(
    size, value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
METHODS["new_tensor"] = lambda self, data, dtype=None, device=None, requires_grad=False: F.tensor(
    data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- operators

METHODS["__add__"] = METHODS["__radd__"] = lambda a, b: FUNCTIONS["add"](a, b)
METHODS["__sub__"] = lambda a, b: FUNCTIONS["sub"](a, b)
METHODS["__rsub__"] = lambda a, b: FUNCTIONS["rsub"](a, b)
METHODS["__mul__"] = METHODS["__rmul__"] = lambda a, b: FUNCTIONS["mul"](a, b)
METHODS["__truediv__"] = lambda a, b: FUNCTIONS["div"](a, b)
METHODS["__rtruediv__"] = lambda a, b: FUNCTIONS["mul"](FUNCTIONS["reciprocal"](a), b)
METHODS["__floordiv__"] = lambda a, b: FUNCTIONS["floor_divide"](a, b)
METHODS["__rfloordiv__"] = lambda a, b: FUNCTIONS["floor_divide"](b, a)
METHODS["__mod__"] = lambda a, b: FUNCTIONS["remainder"](a, b)
METHODS["__rmod__"] = lambda a, b: FUNCTIONS["remainder"](b, a)
METHODS["__lshift__"] = lambda a, b: integer.shift("l", a, b)
METHODS["__rlshift__"] = lambda a, b: integer.shift("l", b, a)
METHODS["__rshift__"] = lambda a, b: integer.shift("r", a, b)
METHODS["__rrshift__"] = lambda a, b: integer.shift("r", b, a)
METHODS["__pow__"] = lambda a, b: FUNCTIONS["pow"](a, b)
METHODS["__rpow__"] = lambda a, b: FUNCTIONS["pow"](b, a)
METHODS["__matmul__"] = lambda a, b: FUNCTIONS["matmul"](a, b)
METHODS["__rmatmul__"] = lambda a, b: FUNCTIONS["matmul"](b, a)
METHODS["__neg__"] = lambda a: FUNCTIONS["neg"](a)
METHODS["__pos__"] = lambda a: a
METHODS["__abs__"] = lambda a: FUNCTIONS["abs"](a)
METHODS["__eq__"] = lambda a, b: FUNCTIONS["eq"](a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented
METHODS["__ne__"] = lambda a, b: FUNCTIONS["ne"](a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented
METHODS["__lt__"] = lambda a, b: FUNCTIONS["lt"](a, b)
METHODS["__le__"] = lambda a, b: FUNCTIONS["le"](a, b)
METHODS["__gt__"] = lambda a, b: FUNCTIONS["gt"](a, b)
METHODS["__ge__"] = lambda a, b: FUNCTIONS["ge"](a, b)
METHODS["__and__"] = METHODS["__rand__"] = lambda a, b: integer.bitwise("and", a, b)
METHODS["__or__"] = METHODS["__ror__"] = lambda a, b: integer.bitwise("or", a, b)
METHODS["__xor__"] = METHODS["__rxor__"] = lambda a, b: integer.bitwise("xor", a, b)
METHODS["__invert__"] = integer.invert
METHODS["__getitem__"] = getitem


def _numpy_operand(fn):
    """NumPy operands of an operator. A NumPy scalar is the Python number it holds (a NumPy bool an
    int, as PyTorch reads it). An array makes the op NumPy's in PyTorch (``t + np.ones(3)`` is
    computed by NumPy on ``t.numpy()`` and wrapped back): NumPy's promotion (float32 * int64 array
    is float64), and PyTorch's error for a tensor that requires grad. NumPy defers to Tensor
    (``__array_ufunc__ = None``), so ``np.float64(2) * t`` reaches the reflected operator and keeps
    autograd."""
    def op(a, b):
        if isinstance(b, np.ndarray):
            if a.requires_grad:
                raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                                   "instead.")
            dtype = getattr(_dtype, np.result_type(np.empty((), dtype=a.dtype.name), b).name)
            a, b = a.to(dtype), F.tensor(b, dtype=dtype, device=a.device)
        elif isinstance(b, np.bool_):
            b = int(b)
        elif isinstance(b, np.generic):
            b = b.item()
        return fn(a, b)
    op.__name__ = op.__qualname__ = getattr(fn, "__name__", "op")
    return op


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod",
              "rmod", "pow", "rpow", "lshift", "rlshift", "rshift", "rrshift", "and", "rand", "or", "ror", "xor",
              "rxor", "matmul", "rmatmul"):  # (comparisons with an array raise TypeError in PyTorch too)
    METHODS[f"__{_name}__"] = _numpy_operand(METHODS[f"__{_name}__"])
METHODS["__array_priority__"] = 1000
METHODS["__array_ufunc__"] = None
METHODS["__setitem__"] = setitem


# ----------------------------------------------------------------------------- in place

def _inplace_binary(fn, formula):
    def method(self, other, *, alpha=None):
        if formula is M.sub:  # the out-of-place op's refusals hold in place too
            elementwise._check_bool_sub(self, other)
        if alpha is not None:
            elementwise._check_alpha(self, other, alpha)
        check_cast(self, other)
        if alpha is not None:
            return write_inplace(self, lambda a, b: fn(a, b, alpha=alpha), other, formula=formula, params=(alpha,))
        return write_inplace(self, fn, other, formula=formula, params=(1.0,))
    return method


METHODS["add_"] = _inplace_binary(FUNCTIONS["add"], M.add)
METHODS["sub_"] = _inplace_binary(FUNCTIONS["sub"], M.sub)


def _mul_(self, other):
    check_cast(self, other)
    return write_inplace(self, FUNCTIONS["mul"], other, formula=M.mul)


def _div_(self, other):
    check_cast(self, other, division=True)
    return write_inplace(self, FUNCTIONS["div"], other, formula=M.div)


def _pow_(self, e):
    check_cast(self, e)
    if not self.dtype.is_floating_point:  # integer powers are rounded by the out-of-place op
        return write_inplace(self, FUNCTIONS["pow"], e)
    if isinstance(e, numbers.Number):  # the scalar formula: x**2 exactly x*x, as out of place
        return write_inplace(self, lambda a: FUNCTIONS["pow"](a, e), formula=M.pow_scalar, params=(e,))
    return write_inplace(self, FUNCTIONS["pow"], e, formula=M.pow_)


METHODS["mul_"], METHODS["div_"], METHODS["pow_"] = _mul_, _div_, _pow_
METHODS["__iadd__"] = lambda self, other: self.add_(other)
METHODS["__isub__"] = lambda self, other: self.sub_(other)
METHODS["__imul__"] = lambda self, other: self.mul_(other)
METHODS["__itruediv__"] = lambda self, other: self.div_(other)


def _inplace_of(name, division=False):
    """``t.<name>_(other)``: the out-of-place op written into ``t`` (``x //= 2`` changes ``x``)."""
    fn = FUNCTIONS[name] if name in FUNCTIONS else METHODS[name]

    def method(self, other):
        check_cast(self, other, division=division)
        return write_inplace(self, fn, other)
    method.__name__ = method.__qualname__ = name + "_"
    return method


for _name, _op in (("floor_divide", "ifloordiv"), ("remainder", "imod"), ("bitwise_and", "iand"),
                   ("bitwise_or", "ior"), ("bitwise_xor", "ixor"), ("bitwise_left_shift", "ilshift"),
                   ("bitwise_right_shift", "irshift")):
    METHODS[_name + "_"] = _inplace_of(_name)
    METHODS[f"__{_op}__"] = METHODS[_name + "_"]
METHODS["__ipow__"] = lambda self, other: self.pow_(other)


def _clamp_(self, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    check_cast(self, *(b for b in (min, max) if b is not None))
    if not self.dtype.is_floating_point or isinstance(min, Tensor) or isinstance(max, Tensor):
        return write_inplace(self, lambda a: FUNCTIONS["clamp"](a, min, max))  # no +-inf bound in integer dtypes
    lo = -float("inf") if min is None else min
    hi = float("inf") if max is None else max
    return write_inplace(self, lambda a: FUNCTIONS["clamp"](a, min, max), formula=M.clamp, params=(lo, hi))


METHODS["clamp_"] = METHODS["clip_"] = _clamp_
METHODS["round_"] = lambda self, decimals=None: write_inplace(self, lambda a: FUNCTIONS["round"](a, decimals=decimals))


def _fill_(self, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        return write_inplace(self, P.FillTensor.apply, value, formula=M.second, fill=True)
    return write_inplace(self, lambda a: P.Fill.apply(a, value), formula=M.fill, params=(value,), fill=True)


METHODS["fill_"] = _fill_
METHODS["zero_"] = lambda self: write_inplace(self, lambda a: P.Zero.apply(a, 0), formula=M.fill, params=(0,),
                                              fill=True)


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = F.tensor(src, dtype=self.dtype, device=self.device)
    if src.device != self.device:
        src = src.to(device=self.device)
    broadcast_shapes(self.shape, src.shape)
    return write_inplace(self, P.Copy.apply, src, formula=M.second)


def _accumulate_(self, other):
    """``self += other`` without autograd checks: the engine summing into an existing ``.grad``."""
    fused(M.add, [self, other], self.dtype, (1.0,), out=self, compute=self.dtype)
    self._version.value += 1
    return self


METHODS["_accumulate_"] = _accumulate_
METHODS["copy_"] = _copy_
