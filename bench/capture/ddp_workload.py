#!/usr/bin/env python3
"""A 2-process DDP training step loop to capture under Nsight Systems (issue 10).

Each rank trains the same MLP on synthetic batches with DistributedDataParallel over NCCL. The
gradient all-reduces run bucket by bucket during backward (DDP's overlap), so with the defaults
communication hides behind compute. `--slow-rank R --slow-ms M` makes rank R's input pipeline
slow (M ms of host-side work per step before its batch is ready): that rank reaches every
all-reduce late and the other rank waits inside its NCCL kernels, the straggler pattern.
`--bucket-cap-mb 4096` puts every gradient in one bucket, which can only be reduced after the
whole backward: exposed communication.

NVTX ranges per step (what the analyzer's step and input-pipeline detection look for):
"train_step <i>" around each step, inside it "data loading", "forward", "backward",
"optimizer". NCCL adds its own ranges (domain "NCCL") when NVTX is traced.

Capture on a machine with 2 GPUs (../shared/docs/capture.md; N is the nsys binary there):

    $N profile --trace cuda,nvtx,osrt --sample none --cpuctxsw none -f true -o /tmp/ddp_overlap \
        torchrun --standalone --nproc_per_node=2 bench/capture/ddp_workload.py --steps 30
    $N profile --trace cuda,nvtx,osrt --sample none --cpuctxsw none -f true -o /tmp/ddp_straggler \
        torchrun --standalone --nproc_per_node=2 bench/capture/ddp_workload.py --steps 30 --slow-rank 1 --slow-ms 20
    $N export --type sqlite -f true -o /tmp/ddp_overlap.sqlite /tmp/ddp_overlap.nsys-rep   # and the other one

Without a GPU, `--device cpu --backend gloo` runs the same loop on the CPU (a smoke test of the
script itself: no NCCL, nothing worth profiling).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30, help="training steps (the first is start-up)")
    p.add_argument("--slow-rank", type=int, default=-1, help="rank whose input pipeline is slow (-1: none)")
    p.add_argument("--slow-ms", type=float, default=20.0, help="extra host time per batch on --slow-rank, ms")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0,
                   help="DDP bucket size, MB (25 is DDP's default; a huge value leaves the all-reduce exposed)")
    p.add_argument("--hidden", type=int, default=4096, help="width of the MLP")
    p.add_argument("--layers", type=int, default=8, help="Linear+GELU blocks (each one ~hidden^2 parameters)")
    p.add_argument("--batch", type=int, default=4096, help="rows per batch and rank")
    p.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16", help="autocast dtype of the compute")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--backend", default=None, help="process-group backend (default: nccl on cuda, gloo on cpu)")
    args = p.parse_args(argv)
    if args.steps < 2:
        p.error("--steps must be at least 2 (the first step is start-up)")
    return args


def nvtx_range(name: str, enabled: bool):
    """An NVTX push/pop range on CUDA; nothing on the CPU smoke-test path."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.cuda.nvtx.range(name)


def build_model(hidden: int, layers: int) -> nn.Module:
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(hidden, hidden), nn.GELU()]
    return nn.Sequential(*blocks, nn.Linear(hidden, 1))


class SyntheticBatches:
    """A healthy input pipeline: a few batches made once in pinned host memory, copied to the GPU
    without blocking each step (so no rank waits for its data), unless this rank is the slow one:
    its every batch costs `slow_ms` more host time first, standing in for slow decoding or
    augmentation on that rank."""

    POOL = 4

    def __init__(self, args: argparse.Namespace, rank: int, device: torch.device):
        self.device = device
        self.slow_s = args.slow_ms / 1000.0 if rank == args.slow_rank else 0.0
        gen = torch.Generator().manual_seed(1234 + rank)
        pin = device.type == "cuda"
        self.pool = [(torch.randn(args.batch, args.hidden, generator=gen), torch.randn(args.batch, 1, generator=gen))
                     for _ in range(self.POOL)]
        if pin:
            self.pool = [(x.pin_memory(), y.pin_memory()) for x, y in self.pool]
        self.i = 0

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.slow_s:
            time.sleep(self.slow_s)
        x, y = self.pool[self.i % self.POOL]
        self.i += 1
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if args.slow_rank >= world:
        raise SystemExit(f"ddp_workload: --slow-rank {args.slow_rank} but only {world} ranks")
    on_gpu = args.device == "cuda"
    if on_gpu:
        if not torch.cuda.is_available():
            raise SystemExit("ddp_workload: no CUDA device (use --device cpu --backend gloo for a smoke test)")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    backend = args.backend or ("nccl" if on_gpu else "gloo")
    dist.init_process_group(backend=backend, **({"device_id": device} if on_gpu else {}))

    torch.manual_seed(0)  # same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = build_model(args.hidden, args.layers).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if on_gpu else None,
                                  bucket_cap_mb=args.bucket_cap_mb, gradient_as_bucket_view=True)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, **({"fused": True} if on_gpu else {}))
    batches = SyntheticBatches(args, rank, device)
    amp_dtype = torch.bfloat16 if args.dtype == "bf16" else None

    started = time.perf_counter()
    for step in range(args.steps):
        with nvtx_range(f"train_step {step}", on_gpu):
            with nvtx_range("data loading", on_gpu):
                x, y = batches.next()
            with nvtx_range("forward", on_gpu):
                with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                    loss = nn.functional.mse_loss(ddp(x).float(), y)
            with nvtx_range("backward", on_gpu):
                loss.backward()  # DDP all-reduces each bucket as soon as its gradients are ready
            with nvtx_range("optimizer", on_gpu):
                opt.step()
                opt.zero_grad(set_to_none=True)
    if on_gpu:
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    loss_value = loss.detach().float().item()  # one sync after the loop, not one per step
    params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"ddp_workload: {world} ranks ({backend}), {args.steps} steps in {elapsed:.3f} s "
              f"({1000 * elapsed / args.steps:.1f} ms/step), {params / 1e6:.1f} M parameters "
              f"({params * 4 / 1e6:.0f} MB of fp32 gradients per step), bucket {args.bucket_cap_mb} MB, "
              f"slow rank {args.slow_rank if args.slow_rank >= 0 else 'none'}, last loss {loss_value:.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
