"""A single-GPU MLP trained with AdamW (examples/pytorch/README.md)."""

import argparse

import torch

from common import StepTimer, local_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=4096)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = local_device()
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, 4 * args.width),
        torch.nn.GELU(),
        torch.nn.Linear(4 * args.width, args.width),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    inputs = torch.randn(args.batch, args.width, device=device)
    targets = torch.randn(args.batch, args.width, device=device)

    timer = StepTimer(warmup=1)
    for _ in range(args.steps):
        with timer:
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    timer.report()


if __name__ == "__main__":
    main()
