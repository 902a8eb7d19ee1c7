"""Device-agnostic boilerplate: choose cuda/mps/cpu, cudnn flags, torch.accelerator, and move a
model and data with .to(device)."""
# needs: torch.accelerator.is_available, torch.backends.mps.is_available, torch.backends.cudnn.benchmark
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
print(f"Using {device} device")
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
print(torch.backends.cudnn.deterministic)
acc = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
print("accelerator:", acc.type if acc is not None else None, torch.accelerator.device_count() >= 0)
dev = torch.device(device)
model = nn.Linear(3, 2).to(dev)
x = torch.randn(4, 3, device=dev)
print(model(x).device, next(model.parameters()).device, x.to("cpu").device, x.cpu().is_cuda)
print(torch.cuda.device_count() >= 0, torch.cuda.is_available() == (device == "cuda"))
