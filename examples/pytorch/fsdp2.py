"""Fully sharded data parallelism with FSDP2's fully_shard (examples/pytorch/README.md).

Each block's parameters are sharded across the ranks, all-gathered before its forward and
backward, and its gradients reduce-scattered after.
"""

import argparse

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from common import StepTimer, local_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()

    device = local_device()
    dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[
        torch.nn.Sequential(torch.nn.Linear(args.width, 4 * args.width), torch.nn.GELU(),
                            torch.nn.Linear(4 * args.width, args.width))
        for _ in range(args.layers)]).to(device)
    for block in model:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.batch, args.width, device=device)

    timer = StepTimer(warmup=2)
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
