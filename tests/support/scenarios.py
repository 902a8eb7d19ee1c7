"""Scenarios written once and run twice, with ``L = torch`` and ``L = tgrad``: what one returns
(values, requires_grad flags, the order hooks ran in, or an error's text) must be the same, with
``tgrad`` written where PyTorch names itself.

A test file collects its scenarios with ``scen = Scenarios()`` and ``@scen`` and compares each with
``assert as_torch(run(tgrad, scen[name])) == run(torch, scen[name])``."""
import warnings


def res(t):
    """A comparable picture of a result: tensors as (values, requires_grad), recursively."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(res(a) for a in t)
    if hasattr(t, "tolist") and hasattr(t, "shape"):
        return (t.tolist(), t.requires_grad)
    return t


def leaf(L, v):
    return L.tensor(v, dtype=L.float64, requires_grad=True)


class Scenarios(dict):
    """Scenario functions by name; used as a decorator to register one."""

    def __call__(self, f):
        self[f.__name__] = f
        return f


def run(L, scenario):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return scenario(L)
    except Exception as e:
        # an error is a result too: its type and text
        return ("raised", type(e).__name__, str(e))


def as_torch(r):
    if isinstance(r, str):
        return r.replace("tgrad", "torch")
    if isinstance(r, (tuple, list)):
        return type(r)(as_torch(a) for a in r)
    return r
