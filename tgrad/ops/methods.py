"""The Tensor methods and operators that are not a function's twin: conversions, ``new_*``
factories, Python operators, ``x.where(...)``, ``.T``, and the hand-written in-place ops. Each is
declared with ``op(..., function=False)`` (installed on Tensor by ``ops/__init__``); the twins
(``x.sum()`` is ``tgrad.sum``) are declared at their definitions."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from . import gather_scatter, shape
from . import factories as F
from . import pointwise as P
from . import elementwise, integer
from .common import broadcast_shapes, legacy_scalar_first, require_argument
from .formula import fused
from .generated import check_cast, function_class
from .indexing import getitem, setitem
from .inplace import write_inplace
from .registry import FUNCTIONS, METHODS, op
from .table import BY_NAME
from .views import refresh_view

# the one activation PyTorch has as a method but not in torch (x.silu() is F.silu)
op("silu", function=False)(FUNCTIONS["silu"])


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


op("__init__", function=False)(_legacy_init)
op("_refresh_view", function=False)(refresh_view)
op("where", function=False)(lambda self, condition, other: FUNCTIONS["where"](condition, self, other))
op("view_as", function=False)(lambda self, other: shape.view(self, *other.shape))
op("reshape_as", function=False)(lambda self, other: shape.reshape(self, *other.shape))
op("expand_as", function=False)(lambda self, other: shape.expand(self, *other.shape))
op("type_as", function=False)(lambda self, other: self.to(other.dtype))
op("select", function=False)(_select)
op("T", function=False)(property(lambda self: shape.permute(self, *reversed(range(self.ndim)))))


@op("is_complex", function=False)
def is_complex(self) -> bool:
    return False  # tgrad has no complex dtypes


@op("is_signed", function=False)
def is_signed(self) -> bool:
    return self._data.is_signed()


@op("is_same_size", function=False)
def is_same_size(self, other) -> bool:
    return self.shape == other.shape


def _mT(self):
    if self.ndim == 0:  # PyTorch: the identity on 0-d tensors (deprecated there)
        return shape.view(self, ())
    if self.ndim == 1:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D "
                           "tensor.")
    return shape.transpose(self, -2, -1)


op("mT", function=False)(property(_mT))
op("masked_fill_", function=False)(lambda self, mask, value: gather_scatter.masked_fill_(self, mask, value))
op("scatter_add_", function=False)(lambda self, dim, index, src: write_inplace(
    self, lambda a, i, s: gather_scatter.scatter_add(a, dim, i, s), index, src))


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


op("to", function=False)(_to)
op("cpu", function=False)(lambda self: self.to(device="cpu"))
op("cuda", function=False)(lambda self, device=None: self.to(device=device if device is not None else "cuda"))
for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("bfloat16", _dtype.bfloat16), ("long", _dtype.int64), ("int", _dtype.int32),
                   ("bool", _dtype.bool), ("short", _dtype.int16), ("byte", _dtype.uint8), ("char", _dtype.int8)):
    op(_name, function=False)((lambda dt: lambda self: self.to(dt))(_dt))


def _new_factory(fn, name):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        require_argument(size, name, "size")
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    return method


op("new_zeros", function=False)(_new_factory(F.zeros, "new_zeros"))
op("new_ones", function=False)(_new_factory(F.ones, "new_ones"))
op("new_empty", function=False)(_new_factory(F.empty, "new_empty"))
op("new_full", function=False)(lambda self, size, value, dtype=None, device=None, requires_grad=False: F.full(
    size, value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad))
op("new_tensor", function=False)(lambda self, data, dtype=None, device=None, requires_grad=False: F.tensor(
    data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad))


# ----------------------------------------------------------------------------- operators

def _numpy_operand(fn):
    """NumPy operands of an operator. A NumPy scalar is the Python number it holds (a NumPy bool an
    int, as PyTorch reads it). An array makes the op NumPy's in PyTorch (``t + np.ones(3)`` is
    computed by NumPy on ``t.numpy()`` and wrapped back): NumPy's promotion (float32 * int64 array
    is float64), and PyTorch's error for a tensor that requires grad. NumPy defers to Tensor
    (``__array_ufunc__ = None``), so ``np.float64(2) * t`` reaches the reflected operator and keeps
    autograd."""
    def operator(a, b):
        if isinstance(b, Tensor):
            return fn(a, b)
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
    operator.__name__ = operator.__qualname__ = getattr(fn, "__name__", "op")
    return operator


# arithmetic operators take NumPy operands (comparisons with an array raise TypeError in PyTorch too); they
# call the methods, which take no out= (the functions' wrapper for it is a layer every operator would pay)
# + * / are add (alpha 1), mul and div (no rounding mode): their rows' Functions at once, the layers
# between (the method, its argument checks) are a share of a small op's time
op("__add__", "__radd__", function=False)(_numpy_operand(function_class(BY_NAME["add"]).apply))
op("__sub__", function=False)(_numpy_operand(lambda a, b: METHODS["sub"](a, b)))
op("__rsub__", function=False)(_numpy_operand(lambda a, b: FUNCTIONS["rsub"](a, b)))
op("__mul__", "__rmul__", function=False)(_numpy_operand(function_class(BY_NAME["mul"]).apply))
op("__truediv__", function=False)(_numpy_operand(function_class(BY_NAME["div"]).apply))
op("__rtruediv__", function=False)(_numpy_operand(lambda a, b: METHODS["mul"](METHODS["reciprocal"](a), b)))
op("__floordiv__", function=False)(_numpy_operand(lambda a, b: METHODS["floor_divide"](a, b)))
op("__rfloordiv__", function=False)(_numpy_operand(lambda a, b: METHODS["floor_divide"](b, a)))
op("__mod__", function=False)(_numpy_operand(lambda a, b: METHODS["remainder"](a, b)))
op("__rmod__", function=False)(_numpy_operand(lambda a, b: METHODS["remainder"](b, a)))
op("__lshift__", function=False)(_numpy_operand(lambda a, b: integer.shift("l", a, b)))
op("__rlshift__", function=False)(_numpy_operand(lambda a, b: integer.shift("l", b, a)))
op("__rshift__", function=False)(_numpy_operand(lambda a, b: integer.shift("r", a, b)))
op("__rrshift__", function=False)(_numpy_operand(lambda a, b: integer.shift("r", b, a)))
op("__pow__", function=False)(_numpy_operand(lambda a, b: METHODS["pow"](a, b)))
op("__rpow__", function=False)(_numpy_operand(lambda a, b: FUNCTIONS["pow"](b, a)))
op("__matmul__", function=False)(_numpy_operand(lambda a, b: FUNCTIONS["matmul"](a, b)))
op("__rmatmul__", function=False)(_numpy_operand(lambda a, b: FUNCTIONS["matmul"](b, a)))
op("__neg__", function=False)(lambda a: FUNCTIONS["neg"](a))
op("__pos__", function=False)(lambda a: a)
op("__abs__", function=False)(lambda a: FUNCTIONS["abs"](a))
op("__eq__", function=False)(
    lambda a, b: FUNCTIONS["eq"](a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented)
op("__ne__", function=False)(
    lambda a, b: FUNCTIONS["ne"](a, b) if isinstance(b, (Tensor, numbers.Number)) else NotImplemented)
op("__lt__", function=False)(lambda a, b: FUNCTIONS["lt"](a, b))
op("__le__", function=False)(lambda a, b: FUNCTIONS["le"](a, b))
op("__gt__", function=False)(lambda a, b: FUNCTIONS["gt"](a, b))
op("__ge__", function=False)(lambda a, b: FUNCTIONS["ge"](a, b))
op("__and__", "__rand__", function=False)(_numpy_operand(lambda a, b: integer.bitwise("and", a, b)))
op("__or__", "__ror__", function=False)(_numpy_operand(lambda a, b: integer.bitwise("or", a, b)))
op("__xor__", "__rxor__", function=False)(_numpy_operand(lambda a, b: integer.bitwise("xor", a, b)))
op("__invert__", function=False)(integer.invert)
op("__getitem__", function=False)(getitem)


op("__array_priority__", function=False)(1000)
op("__array_ufunc__", function=False)(None)
op("__setitem__", function=False)(setitem)


# ----------------------------------------------------------------------------- in place

def _inplace_binary(fn, formula, name):
    def method(self, other, *legacy, alpha=None):
        if legacy:  # the deprecated add_(alpha, other)
            (other,), alpha = legacy_scalar_first(name, "Number alpha, Tensor other",
                                                  "Tensor other, *, Number alpha = 1", other, legacy)
        if formula is M.sub:  # the out-of-place op's refusals hold in place too
            elementwise._check_bool_sub(self, other)
        if alpha is not None:
            elementwise._check_alpha(self, other, alpha)
        check_cast(self, other)
        if alpha is not None:
            return write_inplace(self, lambda a, b: fn(a, b, alpha=alpha), other, formula=formula, params=(alpha,))
        return write_inplace(self, fn, other, formula=formula, params=(1.0,))
    return method


op("add_", function=False)(_inplace_binary(FUNCTIONS["add"], M.add, "add_"))
op("sub_", function=False)(_inplace_binary(FUNCTIONS["sub"], M.sub, "sub_"))


@op("mul_", function=False)
def _mul_(self, other):
    check_cast(self, other)
    return write_inplace(self, FUNCTIONS["mul"], other, formula=M.mul)


@op("div_", function=False)
def _div_(self, other):
    check_cast(self, other, division=True)
    return write_inplace(self, FUNCTIONS["div"], other, formula=M.div)


@op("pow_", function=False)
def _pow_(self, e):
    check_cast(self, e)
    if not self.dtype.is_floating_point:  # integer powers are rounded by the out-of-place op
        return write_inplace(self, FUNCTIONS["pow"], e)
    if isinstance(e, numbers.Number):  # the scalar formula: x**2 exactly x*x, as out of place
        return write_inplace(self, lambda a: FUNCTIONS["pow"](a, e), formula=M.pow_scalar, params=(e,))
    return write_inplace(self, FUNCTIONS["pow"], e, formula=M.pow_)


op("__iadd__", function=False)(lambda self, other: self.add_(other))
op("__isub__", function=False)(lambda self, other: self.sub_(other))
op("__imul__", function=False)(lambda self, other: self.mul_(other))
op("__itruediv__", function=False)(lambda self, other: self.div_(other))


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
    op(_name + "_", f"__{_op}__", function=False)(_inplace_of(_name))
op("__ipow__", function=False)(lambda self, other: self.pow_(other))


def _clamp_(self, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    check_cast(self, *(b for b in (min, max) if b is not None))
    if not self.dtype.is_floating_point or isinstance(min, Tensor) or isinstance(max, Tensor):
        return write_inplace(self, lambda a: FUNCTIONS["clamp"](a, min, max))  # no +-inf bound in integer dtypes
    lo = -float("inf") if min is None else min
    hi = float("inf") if max is None else max
    return write_inplace(self, lambda a: FUNCTIONS["clamp"](a, min, max), formula=M.clamp, params=(lo, hi))


op("clamp_", "clip_", function=False)(_clamp_)
op("round_", function=False)(
    lambda self, decimals=None: write_inplace(self, lambda a: FUNCTIONS["round"](a, decimals=decimals)))


def _fill_(self, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        # (PyTorch lets only a number fill an expanded tensor)
        return write_inplace(self, P.FillTensor.apply, value, formula=M.second)
    return write_inplace(self, lambda a: P.Fill.apply(a, value), formula=M.fill, params=(value,), fill=True)


op("fill_", function=False)(_fill_)
op("zero_", function=False)(lambda self: write_inplace(self, lambda a: P.Zero.apply(a, 0), formula=M.fill, params=(0,),
                                              fill=True))


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


op("_accumulate_", function=False)(_accumulate_)
op("copy_", function=False)(_copy_)
