"""Tensor and data parallelism on a 2-D DeviceMesh (examples/pytorch/README.md).

The ranks form a (dp, tp) mesh; each tp group splits an MLP Megatron-style (column-parallel,
then row-parallel with an all-reduce of the partial outputs), and each dp group all-reduces
the gradients.
"""

import argparse

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

from common import StepTimer, local_device


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's reduction of a row-parallel layer's partial outputs: all-reduce forward,
    identity backward (each rank's gradient already is the full one)."""

    @staticmethod
    def forward(ctx, partial, group):
        output = partial.clone()
        dist.all_reduce(output, group=group)
        return output

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tp", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=4096)
    args = parser.parse_args()

    device = local_device()
    dist.init_process_group("nccl", device_id=device)
    world = dist.get_world_size()
    mesh = init_device_mesh("cuda", (world // args.tp, args.tp), mesh_dim_names=("dp", "tp"))
    tp_group, dp_group = mesh.get_group("tp"), mesh.get_group("dp")
    torch.manual_seed(0)
    hidden = 4 * args.width // args.tp
    up = torch.nn.Linear(args.width, hidden).to(device)  # column-parallel shard
    down = torch.nn.Linear(hidden, args.width, bias=False).to(device)  # row-parallel shard
    params = list(up.parameters()) + list(down.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    inputs = torch.randn(args.batch, args.width, device=device)

    timer = StepTimer(warmup=2)
    for _ in range(args.steps):
        with timer:
            partial = down(torch.nn.functional.gelu(up(inputs)))
            output = ReduceFromTensorParallel.apply(partial, tp_group)
            output.pow(2).mean().backward()
            for p in params:
                dist.all_reduce(p.grad, group=dp_group)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    timer.report(dist.get_rank())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
