"""``tgrad.Tensor``: a torch tensor used as storage, plus autograd state.

The storage (``_data``) is only allocated, viewed, copied and filled by torch; every value it holds
is computed by a Triton kernel. This file holds identity, metadata and autograd bookkeeping; it
imports nothing of tgrad but dtypes, modes and printing. Methods that compute are attached by ``tgrad.ops``
(its registry: ``x.exp()``, operators, the legacy ``Tensor(data)`` constructor, ``_refresh_view``),
and the autograd verbs (``backward``, ``register_hook``, ...) by ``tgrad.autograd``.
"""
from __future__ import annotations

import copy
import importlib
import operator
import warnings
import weakref

import torch

from . import _dtype
from ._dtype import Size
from .modes import _inference_mode_enabled
from .printing import format_tensor


class _Version:
    """The version counter shared by a tensor, its views and its ``detach()`` aliases. It also
    says whether that storage's tensors are inference tensors: made inside inference_mode, they
    and all their views are, wherever the views are taken (spec E.24)."""

    __slots__ = ("value", "inference")

    def __init__(self):
        self.value = 0
        self.inference = _inference_mode_enabled()


class _VersionRef(int):
    """``t._version``: the counter's current value as a plain int (as in PyTorch), through which
    ``.value`` still reads and bumps the shared counter (``t._version.value += 1``)."""

    def __new__(cls, counter: _Version):
        ref = super().__new__(cls, counter.value)
        ref._counter = counter
        return ref

    @property
    def value(self):
        return self._counter.value

    @value.setter
    def value(self, v):
        self._counter.value = v


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for "
    "a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by "
    "mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for "
    "more information.")


class Tensor:
    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_vc", "_base",
                 "_accumulator", "_hooks_leaf", "_post_acc_hooks", "_retains_grad", "_is_inference",
                 "__weakref__", "__dict__")

    _multi_output = False  # a view from split/unbind (or a view of one), set there: no in-place writes with grad

    # ------------------------------------------------------------------ construction
    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._home = (cls.__module__, cls.__qualname__)

    @staticmethod
    def _init(t, data: torch.Tensor, requires_grad=False, version=None, base=None):
        t._data = data
        t._requires_grad = requires_grad
        t._grad = None
        t._grad_fn = None
        t._output_nr = 0
        if isinstance(version, _VersionRef):
            version = version._counter
        t._vc = version if version is not None else _Version()
        t._base = base
        t._accumulator = None
        t._hooks_leaf = None
        t._post_acc_hooks = None
        t._retains_grad = False
        t._is_inference = t._vc.inference  # the one place results and views learn it
        return t

    @classmethod
    def _wrap(cls, data: torch.Tensor, requires_grad=False, version=None, base=None) -> "Tensor":
        return Tensor._init(object.__new__(cls), data, requires_grad, version, base)

    def _alias(self) -> "Tensor":
        """Another tensor object over the same storage and version counter, with no history."""
        return Tensor._wrap(self._data, version=self._version)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._dim(dim)]

    @property
    def dtype(self):
        return _dtype._BY_TORCH[self._data.dtype]

    @property
    def device(self) -> torch.device:
        return self._data.device

    @property
    def is_cuda(self):
        return self._data.device.type == "cuda"

    is_cpu = property(lambda self: self._data.device.type == "cpu")
    # tgrad's tensors are dense and live on the CPU or CUDA: PyTorch's other flags read False
    is_xpu = is_mps = is_meta = is_xla = is_ipu = is_mtia = is_maia = is_vulkan = property(lambda self: False)
    is_mkldnn = is_quantized = is_sparse = is_sparse_csr = is_nested = property(lambda self: False)

    @property
    def ndim(self):
        return self._data.dim()

    def dim(self):
        return self._data.dim()

    ndimension = dim

    def numel(self):
        return self._data.numel()

    nelement = numel

    def stride(self, dim=None):
        return self._data.stride() if dim is None else self._data.stride(self._dim(dim))

    def storage_offset(self):
        return self._data.storage_offset()

    def is_contiguous(self, memory_format=None):
        return self._data.is_contiguous()

    def element_size(self):
        return self._data.element_size()

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def data_ptr(self):
        return self._data.data_ptr()

    def __len__(self):
        if self._data.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def _dim(self, dim: int) -> int:
        n = max(self._data.dim(), 1)
        if not isinstance(dim, int):
            try:
                dim = operator.index(dim)  # numpy and 0-d integer tensors count as ints
            except TypeError:
                raise TypeError(f"dim must be an int, got {type(dim).__name__} {dim!r}") from None
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
        return dim % n

    @property
    def _version(self) -> int:
        return _VersionRef(self._vc)

    @property
    def _version_value(self):
        return self._vc.value

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        if self._base is not None:  # a view whose base took a history in place requires grad now
            if self._multi_output and self.__dict__.get("_view_version") not in (None, self._version.value):
                # split/unbind views get no new history (using one raises): PyTorch's flag reads the base's
                return self._requires_grad or self._base._requires_grad
            self._refresh_view()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def requires_grad_(self, requires_grad=True):
        self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")
        return self

    def _set_requires_grad(self, value, dtype_message):
        value = bool(value)
        if self._grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
            return
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(dtype_message)
        if value and self._is_inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = value

    @property
    def grad_fn(self):
        if self._base is not None:  # a view whose base changed in place: its history is regenerated
            self._refresh_view()
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{value.dtype.type_name}' "
                                   f"to a tensor with grad_dtype '{self.dtype.scalar_type}'. Please "
                                   "ensure that the gradient and the tensor have the same dtype")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                                   f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor "
                                   "are the same size")
            if value.device != self.device:
                raise RuntimeError(f"attempting to assign a gradient located on device '{value.device}' to a "
                                   f"tensor located on device '{self.device}'. Please ensure that the gradient "
                                   "and the tensor are on the same device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._retains_grad

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self._grad_fn._retained[self._output_nr] = weakref.ref(self)

    def detach(self) -> "Tensor":
        """A leaf over the same storage that shares the version counter (in-place changes through
        it are caught by backward)."""
        return Tensor._wrap(self._data, version=self._version)

    def detach_(self) -> "Tensor":
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                               "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                               "called on these gradients. To fix this error, please refer to the "
                               "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """An alias with requires_grad=False and its *own* version counter: changes through it are
        invisible to autograd (the legacy behaviour the spec keeps)."""
        alias = Tensor._wrap(self._data)
        alias._is_inference = alias._vc.inference = self._is_inference  # same storage, same kind
        return alias

    @data.setter
    def data(self, value: "Tensor"):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data

    def is_inference(self):
        return self._is_inference

    # ------------------------------------------------------------------ legacy Variable API
    @property
    def creator(self):
        warnings.warn("Tensor.creator is a deprecated alias of Tensor.grad_fn", DeprecationWarning, stacklevel=2)
        return self._grad_fn

    @property
    def volatile(self):
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    # ------------------------------------------------------------------ printing
    def __repr__(self):
        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.dim() == 0:  # a 0-d tensor formats as its number, as PyTorch's
            return format(self.item(), spec)
        return repr(self)

    def type(self, dtype=None, non_blocking=False):
        """The legacy type name, or a conversion to a dtype, a legacy type (``tgrad.FloatTensor``)
        or a legacy type name (``"torch.cuda.FloatTensor"``)."""
        if dtype is None:
            return f"{_dtype.NAMESPACE}.{'cuda.' if self.is_cuda else ''}{self.dtype.legacy}"
        if isinstance(dtype, str):
            dtype, device = _dtype.from_type_name(dtype)
            return self.to(dtype=dtype, device=device)
        if isinstance(getattr(dtype, "dtype", None), _dtype.dtype):  # a legacy type class
            return self.to(dtype.dtype)
        return self.to(dtype)

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self._data.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def item(self):
        if self._data.numel() != 1:
            raise RuntimeError(f"a Tensor with {self._data.numel()} elements cannot be converted to Scalar")
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def numpy(self, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data.detach().cpu().numpy() if force else self._data.numpy()

    def torch(self) -> torch.Tensor:
        """The underlying torch tensor (zero-copy; shares memory)."""
        return self._data

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    def __reduce_ex__(self, proto):
        """As PyTorch's: the storage (by torch's reducer: queues share memory), the class,
        requires_grad and user attributes; no ``.grad`` nor history (a non-leaf comes back a leaf
        that requires grad). ``copy.copy`` rebuilds over the same storage."""
        return _rebuild, (*type(self)._home, self._data.detach(), self.requires_grad, dict(self.__dict__))

    def __deepcopy__(self, memo):
        """A leaf of the same class with its own copy of the storage (a byte copy), requires_grad,
        and deep copies of ``.grad`` and user attributes, as PyTorch's (``copy.deepcopy(model)``)."""
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        new = Tensor._init(object.__new__(type(self)), self._data.clone(), self._requires_grad)
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        if self.__dict__:
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __iter__(self):
        if self._data.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        # as PyTorch: one unbind (one node for all rows), not an index op per row
        return iter(self.unbind(0))


# where a tensor class is defined, by name: pickle finds classes by ``__module__``, which the
# drop-in runner sets to torch's (``torch.nn.parameter``) so that scripts print PyTorch's names
Tensor._home = (__name__, "Tensor")


def tensor_class(module: str, qualname: str) -> type:
    """The Tensor class (Tensor, or a subclass such as Parameter) that ``_home`` names."""
    cls = getattr(importlib.import_module(module), qualname)
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"{module}.{qualname} is not a tgrad Tensor class")
    return cls


def _rebuild(module: str, qualname: str, data: torch.Tensor, requires_grad: bool, state: dict):
    """Unpickles a tensor (``Tensor.__reduce_ex__``) of the class that ``module``.``qualname`` names."""
    t = Tensor._init(object.__new__(tensor_class(module, qualname)), data, requires_grad)
    t.__dict__.update(state)
    return t

