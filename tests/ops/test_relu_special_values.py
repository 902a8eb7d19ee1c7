"""relu on special values, forward and backward, as PyTorch: +0 for negatives and -inf, -0.0 and NaN
passed through, zero gradient where the output is <= 0 even for an inf upstream gradient (found by
the drop-in corpus: printed ``-0.`` where PyTorch prints ``0.``)."""
import numpy as np
import torch

import tgrad

VALUES = [-1.0, 2.0, float("-inf"), float("nan"), float("inf"), -0.0, 0.0, -1e-30]
UP = [1.0, 1.0, float("inf"), 1.0, 1.0, 1.0, 2.0, float("nan")]


def test_relu_matches_torch_bitwise_on_special_values():
    for dtype, tdtype in ((tgrad.float32, torch.float32), (tgrad.float64, torch.float64)):
        x = tgrad.tensor(VALUES, dtype=dtype, requires_grad=True)
        t = torch.tensor(VALUES, dtype=tdtype, requires_grad=True)
        y, u = tgrad.relu(x), torch.relu(t)
        y.backward(tgrad.tensor(UP, dtype=dtype))
        u.backward(torch.tensor(UP, dtype=tdtype))
        np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
        np.testing.assert_array_equal(np.signbit(y.detach().numpy()), np.signbit(u.detach().numpy()))
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
