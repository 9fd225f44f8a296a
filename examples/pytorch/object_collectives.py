"""Object collectives: broadcast_object_list, all_gather_object, gather_object and
scatter_object_list of picklable Python objects over NCCL (examples/pytorch/README.md).

Prints what each rank received and exits 1 if anything differs from what was sent.
"""

import os

import torch
import torch.distributed as dist

from common import local_device


def main() -> None:
    device = local_device()
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    ok = True

    config = [{"lr": 3e-4, "layers": [1, 2, 3]}, "run-42", None] if rank == 0 else [None] * 3
    dist.broadcast_object_list(config, src=0)
    want = [{"lr": 3e-4, "layers": [1, 2, 3]}, "run-42", None]
    ok &= config == want
    print(f"rank {rank}: broadcast_object_list {config}", flush=True)

    mine = {"rank": rank, "host": f"node{rank}", "tokens": list(range(rank + 1))}
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    ok &= everyone == [{"rank": r, "host": f"node{r}", "tokens": list(range(r + 1))}
                       for r in range(world)]
    print(f"rank {rank}: all_gather_object {everyone}", flush=True)

    gathered = [None] * world if rank == 0 else None
    dist.gather_object(f"hello from {rank}", gathered, dst=0)
    if rank == 0:
        ok &= gathered == [f"hello from {r}" for r in range(world)]
        print(f"rank {rank}: gather_object {gathered}", flush=True)

    shard = [None]
    dist.scatter_object_list(shard, [f"shard {r}" for r in range(world)] if rank == 0 else None,
                             src=0)
    ok &= shard == [f"shard {rank}"]
    print(f"rank {rank}: scatter_object_list {shard}", flush=True)

    dist.destroy_process_group()
    print(f"rank {rank}: {'all objects arrived' if ok else 'MISMATCH'}", flush=True)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
