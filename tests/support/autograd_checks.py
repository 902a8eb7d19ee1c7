"""What the single-behaviour autograd tests share: PyTorch's exact autograd messages (``tgrad`` where
PyTorch names itself), checks of an exception's exact text (or its beginning) and of warnings by
prefix, and small builders (``leaf``, ``vals``)."""
import contextlib
import warnings

import pytest

import tgrad

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
         "you need to access saved tensors after calling backward.")
NO_GRAD = "element 0 of tensors does not require grad and does not have a grad_fn"
NOT_SCALAR = "grad can be implicitly created only for scalar outputs"
NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                 "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                 "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                 "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                 "github.com/pytorch/pytorch/pull/30531 for more information.")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def modified_inplace(tag, op, version, expected=0):
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[tgrad.FloatTensor {tag}], which is output 0 of {op}, is at version {version}; expected version "
            f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with tgrad.autograd.set_detect_anomaly(True, check_nan=False).")


@contextlib.contextmanager
def raises(exc_type, message=None, prefix=None):
    """The exception type and its exact ``str()`` (or its beginning)."""
    with pytest.raises(exc_type) as info:
        yield
    text = str(info.value)
    if message is not None:
        assert text == message
    if prefix is not None:
        assert text.startswith(prefix), text


@contextlib.contextmanager
def warns(category, prefix):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    texts = [str(w.message) for w in caught if issubclass(w.category, category)]
    assert any(t.startswith(prefix) for t in texts), texts


@contextlib.contextmanager
def no_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert not caught, [str(w.message) for w in caught]


def vals(t):
    return t.tolist()


def leaf(values):
    return tgrad.tensor(values, requires_grad=True)
