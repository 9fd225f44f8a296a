"""Data-parallel training with DistributedDataParallel (examples/pytorch/README.md).

Run by torchrun (or `myriad run`), one process per GPU: NCCL all-reduces the gradients in
DDP's default 25 MiB buckets, which DDP rebuilds after the first step from the order the
gradients became ready.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from common import StepTimer, local_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()

    device = local_device()
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, 4 * args.width), torch.nn.GELU(),
                   torch.nn.Linear(4 * args.width, args.width)]
    model = DistributedDataParallel(torch.nn.Sequential(*layers).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.batch, args.width, device=device)

    timer = StepTimer(warmup=2)  # step 1 rebuilds the buckets
    for _ in range(args.steps):
        with timer:
            loss = model(inputs).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    timer.report(dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
