"""Kernels over a list of separately allocated tensors, one launch for all of them through a
pointer table (``tables.py``): the fused optimizer step (``step.py``, its per-algorithm update
formulas in ``updates.py``) and gradient clipping (``clip_grad.py``)."""
