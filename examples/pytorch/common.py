"""What the example scripts share: the device a launcher gives this process, and step timing.

Plain PyTorch, as on a real cluster: the process picks its GPU by LOCAL_RANK (torchrun, and
`myriad run`, set it), times each step with CUDA events and with the host clock, and marks
steps with NVTX ranges named "Train step N", which profilers (and Myriad's
--iteration-marker "Train step") read as iterations.
"""

import os
import time

import torch


def local_device() -> torch.device:
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


class StepTimer:
    """Times steps after `warmup` with CUDA events and time.perf_counter; prints the means."""

    def __init__(self, warmup: int = 1, label: str = ""):
        self.warmup = warmup
        self.label = label
        self.event_ms = []
        self.host_ms = []
        self.step = 0

    def __enter__(self):
        self.marked = self.step >= self.warmup  # warm-up steps are not iterations
        if self.marked:
            torch.cuda.nvtx.range_push(f"Train step {self.step}")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.t0 = time.perf_counter()
        self.start.record()
        return self

    def __exit__(self, *exc):
        self.end.record()
        torch.cuda.synchronize()
        host = (time.perf_counter() - self.t0) * 1e3
        if self.marked:
            torch.cuda.nvtx.range_pop()
            self.event_ms.append(self.start.elapsed_time(self.end))
            self.host_ms.append(host)
        self.step += 1
        return False

    def report(self, rank: int = 0) -> None:
        # The range after the last step closes the last measured interval between ranges.
        torch.cuda.nvtx.range_push(f"Train step {self.step}")
        torch.cuda.nvtx.range_pop()
        if rank == 0 and self.event_ms:
            n = len(self.event_ms)
            print(f"{self.label}mean step time: {sum(self.event_ms) / n:.3f} ms (cuda events), "
                  f"{sum(self.host_ms) / n:.3f} ms (perf_counter) over {n} steps", flush=True)
