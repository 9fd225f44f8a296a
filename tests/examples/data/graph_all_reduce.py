"""An all_reduce captured in a CUDA graph beside a kernel and replayed, on every rank, as
torchtitan's and vLLM's graph capture does (side-stream warm-up, torch.cuda.graph): PyTorch
keeps the captured collective's resources alive with CUDA user objects
(tests/examples/torch_run_test.cc). The graph's first collective runs on a stream that joined
the capture by waiting on the capturing stream, as FSDP2's all-gathers do: it belongs to the
same capture, and its graph keeps the user object."""
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
gather_stream = torch.cuda.Stream()
gathered = torch.empty(2 << 20, device="cuda")
with torch.cuda.graph(graph):
    gather_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(gather_stream):
        dist.all_gather_into_tensor(gathered, x)
    torch.cuda.current_stream().wait_stream(gather_stream)
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
