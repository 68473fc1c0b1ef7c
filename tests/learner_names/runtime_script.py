"""Module paths, devices, determinism switches, printing options, saving to a buffer."""
import importlib.util
import io

import torch
from torch.utils.data.dataloader import DataLoader
from torch.utils.data import TensorDataset

print(importlib.util.find_spec("torchvision") is None,
      importlib.util.find_spec("surely_not_installed_pkg") is None)
loader = DataLoader(TensorDataset(torch.arange(6.0)), batch_size=4)
print([batch[0].tolist() for batch in loader])
with torch.device("cpu"):
    print(torch.zeros(2).device.type, torch.randn(2).device.type)
x = torch.arange(3.0)
print(x.to("cpu", non_blocking=True).tolist(), x.to("cpu:0").device.type,
      x.to(torch.device("cpu:0")).tolist())
torch.use_deterministic_algorithms(True)
print(torch.are_deterministic_algorithms_enabled())
torch.use_deterministic_algorithms(False)
print(torch.are_deterministic_algorithms_enabled())
torch.set_printoptions(precision=2, sci_mode=False)
torch.set_printoptions(profile="default")
buffer = io.BytesIO()
torch.save({"w": torch.arange(4.0), "step": 3}, buffer)
buffer.seek(0)
loaded = torch.load(buffer)
print(loaded["w"].tolist(), loaded["step"], torch.is_tensor(loaded["w"]))
