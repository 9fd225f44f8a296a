"""An all_reduce captured in a CUDA graph beside a kernel and replayed, on every rank, as
torchtitan's and vLLM's graph capture does (side-stream warm-up, torch.cuda.graph): PyTorch
keeps the captured collective's resources alive with CUDA user objects
(tests/examples/torch_run_test.cc)."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
x = torch.ones(1 << 20, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(2):
        dist.all_reduce(x)
        y = x * 2
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    dist.all_reduce(x)
    y = x * 2
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(3):
    graph.replay()
end.record()
torch.cuda.synchronize()
print(f"rank {rank}: 3 replays of the captured all_reduce in {start.elapsed_time(end):.3f} ms",
      flush=True)
del graph
dist.destroy_process_group()
