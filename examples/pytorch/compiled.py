"""A torch.compile'd MLP trained with AdamW on one GPU (examples/pytorch/README.md).

Inductor generates Triton kernels for the fused elementwise parts and runs the matmuls through
cuBLAS; the first step compiles (and autotunes), so the timer skips two warm-up steps.
"""

import argparse

import torch

from common import StepTimer, local_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=1024)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = local_device()
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, 4 * args.width),
        torch.nn.GELU(),
        torch.nn.Linear(4 * args.width, args.width),
        torch.nn.LayerNorm(args.width),
    ).to(device)
    compiled = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    inputs = torch.randn(args.batch, args.width, device=device)
    targets = torch.randn(args.batch, args.width, device=device)

    timer = StepTimer(warmup=2)
    for _ in range(args.steps):
        with timer:
            loss = torch.nn.functional.mse_loss(compiled(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    timer.report()


if __name__ == "__main__":
    main()
