"""``tgrad.onnx``: importable so scripts that import ``torch.onnx`` load; exporting is not possible
(tgrad's ops are Triton kernels with no ONNX form)."""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model=None, args=(), f=None, *rest, **kwargs):
    raise NotImplementedError(
        "tgrad.onnx.export: tgrad cannot export ONNX graphs (its ops are Triton kernels, not ONNX operators). "
        "Save the model's state_dict() with tgrad.save, load it into the same model written with PyTorch, and export "
        "that with torch.onnx.export.")


def is_in_onnx_export() -> bool:
    return False
