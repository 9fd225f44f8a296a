"""A training step captured once as a CUDA graph and replayed (examples/pytorch/README.md).

PyTorch's recipe (torch.cuda.graphs): warm up on a side stream, capture forward, backward and
the optimizer step with static inputs, then replay the graph every step.
"""

import argparse

import torch

from common import StepTimer, local_device


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=2048)
    args = parser.parse_args()

    device = local_device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(args.width, 4 * args.width), torch.nn.GELU(),
                                torch.nn.Linear(4 * args.width, args.width)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    static_input = torch.randn(args.batch, args.width, device=device)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            model(static_input).pow(2).mean().backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = model(static_input).pow(2).mean()
        static_loss.backward()
        optimizer.step()

    timer = StepTimer(warmup=1)
    for _ in range(args.steps):
        with timer:
            graph.replay()
    timer.report()


if __name__ == "__main__":
    main()
