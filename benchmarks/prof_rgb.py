"""Where an rgb diffusion training step spends its time (random data, no simulator): whole-step
rates for variants, then a CUDA profile of the default step (on CUDA).

    python benchmarks/prof_rgb.py [BATCH=256] [STEPS=30]     # AMP=0: fp32; QUICK=1: default and channels_last only
    STEMS=1 python benchmarks/prof_rgb.py                    # the default CNN against other stems (COMPILE=1: and torch.compile)

The batch is shaped like PickCube's rgb data in configs/diffusion_rgb.yaml (2 cameras of 128 x 128,
a 25-dim state, 4-dim actions); docs/PERFORMANCE.md has the H200's numbers."""
import dataclasses
import os
import sys
import time

import torch

from policies.data import ObsSpec
from policies.kinds import build_policy, load_run

AMP = os.environ.get("AMP", "1") == "1"
QUICK = os.environ.get("QUICK") == "1"
dev = "cuda" if torch.cuda.is_available() else "cpu"
B = int(sys.argv[1]) if len(sys.argv) > 1 else 256
N = int(sys.argv[2]) if len(sys.argv) > 2 else 30
run = load_run("diffusion", "configs/diffusion_rgb.yaml")
spec = ObsSpec("rgb", 25, 4, (), ("base_camera", "hand_camera"), (3, 128, 128))
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True

def batch(size=B):
    return {"state": torch.randn(size, 2, 25, device=dev), "actions": torch.rand(size, 16, 4, device=dev) * 2 - 1,
            "images": torch.randint(0, 255, (size, 2, 2, 3, 128, 128), dtype=torch.uint8, device=dev)}

def sync():
    if dev == "cuda": torch.cuda.synchronize()

def bench(name, policy, size=B):
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-4)
    b = batch(size)
    def step():
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda" and AMP):
            loss = policy.loss(b)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
    for _ in range(5): step()
    sync(); t = time.perf_counter()
    for _ in range(N): step()
    sync(); dt = (time.perf_counter() - t) / N
    print(f"{name:40s} {dt*1e3:7.1f} ms/step  {size/dt:9.0f} samples/s", flush=True)
    return step

def parts(policy):
    b = batch()
    enc = policy.encoder.train()
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda" and AMP):
        for name, f in (("encoder fwd+bwd", lambda: enc(policy.normaliser.normalise_state(b["state"]), b["images"]).float().sum().backward()),
                        ("cnn one camera fwd+bwd (B*To imgs)", lambda: enc.cams[0](enc._image_input(b["images"][:, :, 0].flatten(0, 1))).float().sum().backward())):
            for _ in range(3): f()
            sync(); t = time.perf_counter()
            for _ in range(N): f()
            sync(); print(f"{name:40s} {(time.perf_counter()-t)/N*1e3:7.1f} ms", flush=True)

def with_stem(make=None):
    """The default policy, each camera CNN's layers before the keypoint 1x1 conv replaced by make()'s."""
    pol = build_policy(spec, run.policy)
    for enc in pol.encoder.cams:
        if make is not None:
            enc.net = torch.nn.Sequential(*make(), *enc.net[-2:])
    return pol.to(dev).train()

if os.environ.get("STEMS") == "1":
    from policies.models.encoders import _conv
    def patch(cin, cout, size):
        return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, size, size), torch.nn.GroupNorm(8, cout), torch.nn.ReLU(inplace=True))
    lite = lambda: [_conv(3, 32, 2), _conv(32, 64, 2), _conv(64, 64, 1), _conv(64, 128, 2)]  # no stride-1 conv at 64 x 64
    stems = {"default": None, "lite: no stride-1 conv at 64x64": lite,
             "4x4 patch stem": lambda: [patch(3, 64, 4), _conv(64, 64, 1), _conv(64, 128, 2)]}  # straight to 32 x 32
    for name, make in stems.items():
        bench(name, with_stem(make))
    if os.environ.get("COMPILE") == "1":
        for name, make in (("default, encoders compiled", None), ("lite, encoders compiled", lite)):
            pol = with_stem(make)
            for enc in pol.encoder.cams:
                enc.net = torch.compile(enc.net)
            bench(name, pol)
    sys.exit()

p = build_policy(spec, run.policy).to(dev).train()
step = bench("default", p)
parts(p)
bench("channels_last", build_policy(spec, run.policy).to(dev).train().to(memory_format=torch.channels_last))
if QUICK:
    sys.exit()
nogn = build_policy(spec, run.policy).to(dev).train()
for enc in nogn.encoder.cams:
    for m in enc.net:
        if isinstance(m, torch.nn.Sequential) and isinstance(m[1], torch.nn.GroupNorm):
            m[1] = torch.nn.BatchNorm2d(m[1].num_channels).to(dev)
bench("BatchNorm instead of GroupNorm", nogn)
noshift = build_policy(spec, dataclasses.replace(run.policy, image_shift=0)).to(dev).train()
bench("no random shift", noshift)
bench(f"batch {2 * B}", build_policy(spec, run.policy).to(dev).train(), size=2 * B)
if dev == "cuda":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(10): step()
        sync()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=50))
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=12, max_name_column_width=50))
