"""nn modules in both libraries: PyTorch's weights copied into tgrad's module (after checking that
the state-dict keys and shapes are PyTorch's), one backward through both with random upstream
gradients on every output, and the parameters' gradients compared."""
import torch

import tgrad
from support.reference import assert_close, to_torch, uniform64


def copy_module(ref, mod):
    sd = {k: tgrad.from_torch(v.detach().clone().to(mod_dtype(mod)) if v.is_floating_point() else v.detach().clone())
          for k, v in ref.state_dict().items()}
    assert list(sd) == list(mod.state_dict()), "state dict keys differ from PyTorch's"
    for k, v in mod.state_dict().items():
        assert tuple(v.shape) == tuple(sd[k].shape), k
    mod.load_state_dict(sd)
    ref.load_state_dict({k: v.torch().clone().to(torch.float64) if v.is_floating_point() else v.torch().clone()
                         for k, v in mod.state_dict().items()})


def module_pair(kind, *args, dtype=tgrad.float64, **kw):
    """(torch.nn.<kind> in float64, initialised from seed 0; tgrad.nn.<kind> holding its weights)."""
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(*args, **kw).double()
    mod = getattr(tgrad.nn, kind)(*args, dtype=dtype, **kw)
    copy_module(ref, mod)
    return ref, mod


def assert_param_grads(ref, mod):
    """Each parameter's gradient in ``mod`` is the one of the same parameter in ``ref``."""
    for (name, p), (_, q) in zip(ref.named_parameters(), mod.named_parameters()):
        assert_close(q.grad, p.grad, msg=f"grad of {name}")


def mod_dtype(mod):
    floats = [t for t in list(mod.parameters()) + list(mod.buffers()) if t.is_floating_point()]
    return floats[0].dtype.torch


def flat(outs):
    res = []
    for o in outs:
        if isinstance(o, (tuple, list)):
            res.extend(flat(o))
        elif o is not None:
            res.append(o)
    return res


def backward_both(outs, refs, seed=5):
    """Random upstream gradients for every output; backprop both."""
    outs, refs = flat(outs), flat(refs)
    assert len(outs) == len(refs)
    loss, loss_ref = None, None
    for i, (o, r) in enumerate(zip(outs, refs)):
        assert_close(o, r, msg=f"output {i}")
        g = uniform64(tuple(r.shape), -1, 1, seed + i)
        term = (o * tgrad.from_torch(g.to(o.dtype.torch))).sum()
        loss = term if loss is None else loss + term
        term_ref = (r * g).sum()
        loss_ref = term_ref if loss_ref is None else loss_ref + term_ref
    loss.backward()
    loss_ref.backward()


def norm(v):
    """What a hook saw, comparable across libraries: tensors as float64 torch tensors, modules as
    their class names, containers recursively."""
    if isinstance(v, (torch.Tensor, tgrad.Tensor)):
        return to_torch(v)
    if isinstance(v, (tuple, list)):
        return type(v)(norm(x) for x in v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (torch.nn.Module, tgrad.nn.Module)):
        return type(v).__name__
    return v


def lib_tensor(lib, shape, seed, requires_grad=True):
    """A float64 tensor of ``lib`` (torch or tgrad) with seeded values, the same in both."""
    data = uniform64(shape, seed=seed)
    t = data.clone() if lib is torch else tgrad.from_torch(data.clone())
    return t.requires_grad_(requires_grad)
