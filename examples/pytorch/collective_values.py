"""What small collectives deliver, printed by each rank (examples/pytorch/README.md).

Tensors are made on the host and copied to the GPU, so their values do not depend on kernels
(which Myriad times but does not run).
"""

import torch
import torch.distributed as dist

from common import local_device


def main() -> None:
    device = local_device()
    dist.init_process_group("nccl", device_id=device)
    rank = dist.get_rank()

    x = torch.tensor([float(rank + 1)] * 3).to(device)
    dist.all_reduce(x)
    print(f"all_reduce sum: {x.tolist()}", flush=True)

    m = torch.tensor([rank + 1] * 2, dtype=torch.int32).to(device)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    print(f"all_reduce max: {m.tolist()}", flush=True)

    b = torch.tensor([7, 8, 9] if rank == 0 else [0, 0, 0]).to(device)
    dist.broadcast(b, src=0)
    print(f"broadcast: {b.tolist()}", flush=True)

    mine = torch.tensor([rank + 1] * 2).to(device)
    gathered = [torch.tensor([0, 0]).to(device) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)
    print(f"all_gather: {[g.tolist() for g in gathered]}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
