"""The conv / resampling kernels touch only the elements of the tensors they are given and write
every element of their outputs: each op runs forward and backward under ``kernel_guard``'s
address checks with poisoned allocations (an unwritten element reads as ~1e306 and fails the
comparison with torch), on odd sizes and strided inputs."""
import pytest
import torch.nn.functional as TF

import tgrad.nn.functional as F
from support.kernel_guard import memory_checked, poisoned_allocations
from support.reference import compare

CASES = {  # name: (tgrad fn, torch fn, input shapes, kwargs)
    "conv_transpose2d": (F.conv_transpose2d, TF.conv_transpose2d, [(2, 3, 3, 5), (3, 2, 3, 2), (2,)],
                         dict(stride=2, padding=1, output_padding=1, dilation=(1, 2))),
    "conv_transpose2d_groups": (F.conv_transpose2d, TF.conv_transpose2d, [(1, 4, 3, 3), (4, 1, 2, 3), (2,)],
                                dict(stride=(2, 1), groups=2)),
    "conv_transpose1d": (F.conv_transpose1d, TF.conv_transpose1d, [(2, 3, 5), (3, 2, 3), None], dict(stride=3)),
    "conv1d": (F.conv1d, TF.conv1d, [(2, 3, 7), (4, 3, 3), (4,)], dict(stride=2, padding=1)),
    "pad_reflect": (F.pad, TF.pad, [(2, 3, 5, 7)], dict(pad=(2, 1, 3, 4), mode="reflect")),
    "pad_replicate_3d": (F.pad, TF.pad, [(1, 2, 3, 4, 5)], dict(pad=(1, 2, 0, 3, 2, 1), mode="replicate")),
    "pad_constant_crop": (F.pad, TF.pad, [(2, 3, 5)], dict(pad=(-1, 3), value=0.5)),
    "adaptive_avg": (F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, [(2, 3, 7, 5)], dict(output_size=(3, 4))),
    "adaptive_max": (F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [(2, 3, 5, 7)], dict(output_size=(4, 3))),
    "bilinear": (F.interpolate, TF.interpolate, [(2, 3, 3, 5)], dict(size=(7, 4), mode="bilinear")),
    "nearest": (F.interpolate, TF.interpolate, [(2, 3, 3, 5)], dict(scale_factor=(2.5, 0.7))),
    "unfold": (F.unfold, TF.unfold, [(2, 3, 5, 7)], dict(kernel_size=(2, 3), padding=1, stride=2)),
    "fold": (F.fold, TF.fold, [(2, 12, 12)], dict(output_size=(5, 7), kernel_size=2, stride=2, padding=1)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kernels_stay_in_bounds_and_write_every_output(case):
    fn, ref, shapes, kw = CASES[case]
    with memory_checked() as violations, poisoned_allocations():
        compare(fn, ref, shapes, noncontig=True, **kw)
    assert not violations
