"""What modern training scripts call around the model: torch.compile, the RNG state, fork_rng,
torch.distributed checks (nanoGPT style), GradScaler, device flags and thread settings."""
# needs: torch.compile, torch.get_rng_state, torch.set_rng_state, torch.amp.GradScaler, torch.set_num_threads
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

ddp = int(os.environ.get("RANK", -1)) != -1
print("ddp", ddp, "initialized", dist.is_initialized())
try:
    DDP(nn.Linear(2, 2))
except ValueError as e:
    print("DDP:", e)

torch.manual_seed(1337)
torch.set_num_threads(1)
print("threads", torch.get_num_threads())
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
compiled = torch.compile(model)
print(type(compiled).__name__, list(compiled.state_dict())[:2])
unwanted_prefix = "_orig_mod."
state = {k[len(unwanted_prefix):]: v for k, v in compiled.state_dict().items()}
model.load_state_dict(state)

state = torch.get_rng_state()
a = torch.rand(3)
torch.set_rng_state(state)
print("replayed", bool((torch.rand(3) == a).all()))
with torch.random.fork_rng():
    torch.randn(10)
after = torch.rand(3)
torch.set_rng_state(state)
torch.rand(3)
print("fork_rng restored", bool((torch.rand(3) == after).all()))

x, y = torch.randn(16, 4), torch.randn(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=3)
first = None
for step in range(8):
    opt.zero_grad()
    loss = ((compiled(x) - y) ** 2).mean()
    first = first if first is not None else loss.item()
    scaler.scale(loss * (float("inf") if step == 2 else 1.0)).backward()
    scaler.step(opt)
    scaler.update()
    print("step", step, "scale", scaler.get_scale())
print(scaler.state_dict())
print("~ loss_ratio", f"{loss.item() / first:.3f}", "atol=0.2")
t = torch.ones(2)
print(t.is_cpu, t.is_cuda, t.is_xpu, t.is_mps, t.is_meta, t.is_sparse)
