"""Tensors: creating them (from data, from NumPy, like another, from a shape), their
attributes, indexing and slicing, joining, arithmetic, single-element tensors, in-place
operations and the memory a tensor shares with NumPy.

Adapted from PyTorch's "Learn the Basics" tensors tutorial (tensorqs_tutorial.py).
"""
import numpy as np
import torch

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
print("from data", x_data.tolist(), "from numpy", x_np.tolist())

x_ones = torch.ones_like(x_data)
print(f"Ones Tensor: {x_ones.tolist()}")
x_rand = torch.rand_like(x_data, dtype=torch.float)
print(f"Random Tensor: {x_rand.tolist()}")

shape = (2, 3,)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)
print("rand", rand_tensor.tolist(), "ones", ones_tensor.tolist(), "zeros", zeros_tensor.tolist())

tensor = torch.rand(3, 4)
print(f"Shape of tensor: {list(tensor.shape)}")
print("float32:", tensor.dtype == torch.float32, "on", tensor.device.type)

tensor = torch.ones(4, 4)
print(f"First row: {tensor[0].tolist()}")
print(f"First column: {tensor[:, 0].tolist()}")
print(f"Last column: {tensor[..., -1].tolist()}")
tensor[:, 1] = 0
print(tensor.tolist())

t1 = torch.cat([tensor, tensor, tensor], dim=1)
print("cat", list(t1.shape), t1.sum().item())

y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
y3 = torch.matmul(tensor, tensor.T)
print("matmul", y1.tolist(), (y1 == y2).all().item(), (y1 == y3).all().item())
z1 = tensor * tensor
z2 = tensor.mul(tensor)
z3 = torch.mul(tensor, tensor)
print("mul", z1.tolist(), (z1 == z2).all().item(), (z1 == z3).all().item())

agg = tensor.sum()
agg_item = agg.item()
print("sum", agg_item, type(agg_item).__name__)

print("before add_", tensor.tolist())
tensor.add_(5)
print("after add_", tensor.tolist())

t = torch.ones(5)
n = t.numpy()
t.add_(1)
print("t", t.tolist(), "n", n.tolist())       # the array shares the tensor's memory
n = np.ones(5)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print("t", t.tolist(), "n", n.tolist())
