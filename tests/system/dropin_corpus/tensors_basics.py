"""Tensors: creation, shapes, dtypes, arithmetic, indexing and NumPy interop (the blitz tutorial)."""
import numpy as np
import torch

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
print(x_data, x_data.dtype, x_data.shape)

np_array = np.array(data)
x_np = torch.from_numpy(np_array)
print(x_np)

x_ones = torch.ones_like(x_data)
print(f"Ones Tensor: \n {x_ones} \n")
x_rand = torch.rand_like(x_data, dtype=torch.float)
print(x_rand.shape, x_rand.dtype, bool(((x_rand >= 0) & (x_rand < 1)).all()))

shape = (2, 3,)
print(torch.ones(shape), torch.zeros(shape))
tensor = torch.rand(3, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")

tensor = torch.ones(4, 4)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
print(tensor)
t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1.shape)

y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
print(y1, bool((y1 == y2).all()))
z1 = tensor * tensor
print(z1)
agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))
tensor.add_(5)
print(tensor)

t = torch.ones(5)
n = t.numpy()
t.add_(1)
print(t, n)

a = torch.arange(12).reshape(3, 4)
print(a, a.view(4, 3).shape, a.t().is_contiguous(), a.permute(1, 0).shape)
print(a[1:, ::2], a[a > 5], a.float().mean(dim=0))
print(torch.stack([a, a]).shape, torch.linspace(0, 1, 5))
print(a.sum(dim=1, keepdim=True).shape, a.max(), a.argmax(dim=1))
print(torch.eye(3), torch.zeros(2, 3, dtype=torch.int32))
print(a.double().dtype, a.long().dtype, a.bool().dtype, a.to(torch.float16).dtype)
print(torch.Size([2, 3]), torch.float32, torch.int64, a.size(), a.size(1), a.numel(), a.dim())
print(a.unsqueeze(0).shape, a.unsqueeze(0).squeeze().shape, a.flatten().shape)
print(a.type(), a.float().type())
