"""Run unmodified PyTorch programs on tgrad: ``import torch`` in *user* code resolves to tgrad.

``install()`` wraps ``builtins.__import__`` (and ``importlib.import_module``). An import of
``torch`` or ``torch.X`` is answered with a view of tgrad when the importing module is user code:
neither tgrad's own code nor a library (anything in the standard library or in a site-packages
directory). Who imports is read from the importing frame's globals (``__name__``/``__file__``),
so the same ``import torch`` gives tgrad to a script and the real torch to tgrad, numpy, triton,
matplotlib, scikit-learn, or torch's own lazy imports. ``sys.modules`` is never touched: the real
``torch`` stays the real torch for everybody else.

What user code gets is a *view* per module (``TorchView``): ``torch`` -> ``tgrad``,
``torch.nn`` -> ``tgrad.nn``, ``torch.utils.data`` -> ``tgrad.utils.data`` and so on. Attribute
lookups go to the tgrad module; a name tgrad lacks raises an ``AttributeError`` (or, for
``import``/``from ... import``, an ``ImportError``) that names the ``torch.X`` asked for and says
tgrad has no equivalent. A view never hands out a module that is not tgrad's counterpart of the
torch module asked for.

While installed, tgrad prints its names as PyTorch's (``torch.float32``, ``torch.Size([2, 3])``,
``dtype=torch.int64``, ``torch.FloatTensor``, ``<class 'torch.Tensor'>``) so scripts that print or
compare them read the same.
"""
from __future__ import annotations

import __future__
import builtins
import importlib
import importlib.util
import os
import site
import sys
import sysconfig
import types

import torch as _real_torch

import tgrad
from tgrad.nn import Parameter
from . import _dtype

__all__ = ["install", "uninstall", "is_installed", "TorchView", "torch_view"]

# torch modules whose tgrad counterpart has another name or is one module for several of torch's
_ALIASES = {
    "torch": "tgrad",
    "torch.utils.data.dataloader": "tgrad.utils.data",
    "torch.utils.data.dataset": "tgrad.utils.data",
    "torch.utils.data.sampler": "tgrad.utils.data",
    "torch.utils.data._utils.collate": "tgrad.utils.data",
    "torch.nn.utils.clip_grad": "tgrad.nn.utils",
}
# torch's top-level submodules that tgrad mirrors (tgrad has other modules of its own, such as
# tgrad.ops or tgrad.kernels, which are not torch.ops: they are never handed out as torch's)
_TOP = {"nn", "optim", "utils", "autograd", "cuda", "backends", "accelerator", "distributions", "onnx",
        "return_types", "serialization", "linalg", "random", "distributed", "compiler", "amp", "cpu",
        "special"}

_TORCH_VERSION = str(_real_torch.__version__)  # the PyTorch API version tgrad is developed against
_installed = False
_orig_import = builtins.__import__
_orig_import_module = importlib.import_module
_views: dict[str, "TorchView"] = {}
_user_cache: dict[str, bool] = {}


def _message(torch_name, detail=""):
    return (f"{torch_name}: tgrad has no equivalent of {torch_name} (running under tgrad's drop-in runner, "
            f"where `torch` is tgrad){detail}")


def _no_attribute(torch_name):
    """``torch.X`` read where tgrad has no ``X``: an AttributeError, so ``hasattr`` says False."""
    return AttributeError(_message(torch_name))


def _no_module(torch_name, detail=""):
    """``import torch.X`` where tgrad has no ``X``: ModuleNotFoundError, as for a missing module."""
    return ModuleNotFoundError(_message(torch_name, detail), name=torch_name)


def _no_name(torch_name, detail=""):
    """``from torch.X import Y`` where tgrad has no ``Y``: ImportError, as for a missing name."""
    return ImportError(_message(torch_name, detail), name=torch_name)


class TorchView(types.ModuleType):
    """The module user code sees as ``torch.X``: tgrad's counterpart, with torch's missing names
    reported as missing from torch under tgrad."""

    def __init__(self, torch_name, target):
        super().__init__(target.__name__, getattr(target, "__doc__", None))
        object.__setattr__(self, "_torch_name", torch_name)
        object.__setattr__(self, "_target", target)
        for k in ("__file__", "__path__", "__package__", "__spec__", "__loader__", "__all__"):
            if hasattr(target, k):
                object.__setattr__(self, k, getattr(target, k))
        if "__all__" not in self.__dict__:  # `from torch.nn import *`: tgrad's public names
            object.__setattr__(self, "__all__", [k for k, v in vars(target).items() if not k.startswith("_")
                                                 and not isinstance(v, (types.ModuleType, __future__._Feature))])
        if torch_name == "torch":  # version checks in scripts: the PyTorch API version tgrad follows
            object.__setattr__(self, "__version__", f"{_TORCH_VERSION.partition('+')[0]}+tgrad{tgrad.__version__}")

    def __repr__(self):
        return f"<module {self._torch_name!r} (tgrad: {self._target.__name__})>"

    def __dir__(self):
        return sorted(set(dir(self._target)))

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _lookup(self._torch_name, self._target, name)
        if value is _MISSING:
            raise _no_attribute(f"{self._torch_name}.{name}")
        if not isinstance(value, (bool, int, float, str, type(None))):
            object.__setattr__(self, name, value)  # looked up once; plain values (flags) stay live
        return value

    def __setattr__(self, name, value):
        setattr(self._target, name, value)
        self.__dict__.pop(name, None)

    def __delattr__(self, name):
        delattr(self._target, name)
        self.__dict__.pop(name, None)


_MISSING = object()


def _torch_save(obj, f, *args, **kwargs):
    """``torch.save`` under the runner: PyTorch's zip format whatever the file's name, so that real
    PyTorch reads what the program wrote (``torch.load`` reads it back through ``tgrad.load``).
    torch.save's pickling options have no effect: only data is written."""
    tgrad.save(obj, f, format="torch")


# names that differ under the runner from tgrad's own
_OVERRIDES = {("torch", "save"): _torch_save, ("torch.serialization", "save"): _torch_save}


def _lookup(torch_parent, target, name):
    """``torch_parent.name`` under tgrad: a plain attribute of ``target``, a view of tgrad's
    counterpart of the torch module ``torch_parent.name``, or _MISSING."""
    if (torch_parent, name) in _OVERRIDES:
        return _OVERRIDES[torch_parent, name]
    value = getattr(target, name, _MISSING)
    if value is not _MISSING and not isinstance(value, types.ModuleType):
        return value
    full = f"{torch_parent}.{name}"
    mod = _module_for(full)  # a module only as the counterpart of torch's, never another one
    return torch_view(full, mod) if mod is not None else _MISSING


def _module_for(torch_name):
    """tgrad's module for ``torch_name``, or None when tgrad has none."""
    tname = _ALIASES.get(torch_name)
    if tname is None:
        parts = torch_name.split(".")
        if parts[0] != "torch" or (len(parts) > 1 and parts[1] not in _TOP):
            return None
        tname = ".".join(["tgrad"] + parts[1:])
    mod = sys.modules.get(tname)
    if mod is not None:
        return mod
    try:
        return _orig_import_module(tname)
    except ModuleNotFoundError as e:
        if e.name and (tname == e.name or tname.startswith(e.name + ".")):
            return None  # tgrad lacks it (not an import failing inside a tgrad module)
        raise


def torch_view(torch_name, module):
    view = _views.get(torch_name)
    if view is None or view._target is not module:
        view = _views[torch_name] = TorchView(torch_name, module)
    return view


def _resolve(name):
    """What ``import name`` (a torch module path) names under tgrad: a view, or for the last part
    a namespace object (``torch.backends.cudnn``); else a NoEquivalentError naming it."""
    parts = name.split(".")
    obj = torch_view("torch", tgrad)
    for i, part in enumerate(parts[1:], 2):
        if not isinstance(obj, TorchView):
            raise _no_module(".".join(parts[:i]), f"; `import {name}` cannot be satisfied")
        obj = _lookup(obj._torch_name, obj._target, part)
        if obj is _MISSING:
            raise _no_module(".".join(parts[:i]), f"; `import {name}` cannot be satisfied")
    return obj


# ------------------------------------------------------------------ who is importing

def _library_roots():
    roots = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            roots.add(paths[key])
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # virtualenvs with an old site module
        pass
    roots.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
    for mod in ("tgrad", "tgrad.kernels", "tgrad.nn", "tgrad.optim", "tgrad.utils"):
        spec = importlib.util.find_spec(mod)
        if spec is not None and spec.submodule_search_locations:
            roots.update(spec.submodule_search_locations)
    return tuple(sorted({os.path.join(os.path.realpath(r), "") for r in roots if r}, key=len, reverse=True))


_ROOTS: tuple = ()


def _is_user_file(path):
    hit = _user_cache.get(path)
    if hit is None:
        real = os.path.realpath(path)
        hit = _user_cache[path] = not any(real.startswith(r) for r in _ROOTS)
    return hit


def _is_user(globals_):
    """Whether the module owning ``globals_`` is user code (gets tgrad for ``torch``)."""
    if not globals_:
        return False
    name = globals_.get("__name__") or ""
    top = name.partition(".")[0]
    if top in ("tgrad", "torch"):
        return False
    path = globals_.get("__file__")
    if path and not path.startswith("<"):
        return _is_user_file(path)
    if name == "__main__":  # -c, exec'd code, interactive
        return True
    if top in sys.stdlib_module_names:
        return False
    owner = sys.modules.get(top)
    owner_file = getattr(owner, "__file__", None)
    return _is_user_file(owner_file) if owner_file else True


def _caller_globals(depth):
    try:
        return sys._getframe(depth + 1).f_globals
    except ValueError:
        return None


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or not (name == "torch" or name.startswith("torch.")):
        return _orig_import(name, globals, locals, fromlist, level)
    if type(fromlist) is list and not fromlist:
        # C code's import (PyImport_Import passes an empty list), e.g. pickle finding torch._utils
        # for a torch tensor, with the user's frame as globals: it means the real torch
        return _orig_import(name, globals, locals, fromlist, level)
    if not _is_user(globals if globals is not None else _caller_globals(1)):
        return _orig_import(name, globals, locals, fromlist, level)
    obj = _resolve(name)
    if not fromlist:
        return _views["torch"]  # `import torch.nn` binds `torch`; the submodule was checked
    for item in fromlist:
        if item == "*":
            continue
        found = (_lookup(obj._torch_name, obj._target, item) if isinstance(obj, TorchView)
                 else getattr(obj, item, _MISSING))
        if found is _MISSING:
            raise _no_name(f"{name}.{item}", f"; cannot import name {item!r} from {name!r}")
    return obj


def _import_module(name, package=None):
    if name.startswith("."):
        return _orig_import_module(name, package)
    if (name == "torch" or name.startswith("torch.")) and _is_user(_caller_globals(1)):
        return _resolve(name)
    return _orig_import_module(name, package)


_CLASS_MODULES = {}  # class -> its own __module__, restored by uninstall()


def _renamed_classes():
    """The classes scripts print the type of (``<class 'torch.Tensor'>``), with torch's module names."""
    pairs = [(tgrad.Tensor, "torch"), (_dtype.Size, "torch"), (_dtype.dtype, "torch"),
             (Parameter, "torch.nn.parameter")]
    for cls, _ in pairs:
        _CLASS_MODULES.setdefault(cls, cls.__module__)
    return pairs


def install():
    """Resolve ``import torch`` (and ``torch.X``) to tgrad in user code from now on; print tgrad's
    names as PyTorch's. Idempotent."""
    global _installed, _ROOTS
    if _installed:
        return
    _ROOTS = _library_roots()
    _user_cache.clear()
    builtins.__import__ = _import
    importlib.import_module = _import_module
    _dtype.NAMESPACE = "torch"
    for cls, name in _renamed_classes():
        cls.__module__ = name
    _installed = True


def uninstall():
    """Undo ``install()``: ``import torch`` is the real torch again everywhere."""
    global _installed
    if not _installed:
        return
    builtins.__import__ = _orig_import
    importlib.import_module = _orig_import_module
    _dtype.NAMESPACE = "tgrad"
    for cls, _ in _renamed_classes():
        cls.__module__ = _CLASS_MODULES[cls]
    _installed = False


def is_installed():
    return _installed
