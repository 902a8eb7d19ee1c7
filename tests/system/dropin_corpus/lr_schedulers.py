"""Learning-rate schedules stepped once an epoch: StepLR, ExponentialLR, CosineAnnealingLR,
LambdaLR, LinearLR; param groups with their own lr."""
import torch
from torch import nn, optim
from torch.optim import lr_scheduler

model = nn.Linear(2, 1)
for name, make in [("StepLR", lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
                   ("ExponentialLR", lambda o: lr_scheduler.ExponentialLR(o, gamma=0.9)),
                   ("CosineAnnealingLR", lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=5)),
                   ("LambdaLR", lambda o: lr_scheduler.LambdaLR(o, lambda e: 1.0 / (e + 1))),
                   ("LinearLR", lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4))]:
    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = make(opt)
    lrs = []
    for epoch in range(7):
        opt.step()
        sched.step()
        lrs.append(round(sched.get_last_lr()[0], 8))
    print(name, lrs)

opt = optim.Adam([{"params": [model.weight]}, {"params": [model.bias], "lr": 1e-2}], lr=1e-3)
print([g["lr"] for g in opt.param_groups], len(opt.param_groups), sorted(opt.defaults)[:3])
sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
opt.step()
sched.step()
print([round(g["lr"], 10) for g in opt.param_groups])
sd = opt.state_dict()
print(sorted(sd.keys()), len(sd["param_groups"]))
