"""Causal attention through FlexAttention (torch.compile'd), forward and backward, on one GPU.

The pattern torchtitan's flex attention follows: a block mask from create_block_mask over a
mask_mod, flex_attention compiled by Inductor into its Triton templates. Prints the step time
and the TFLOP/s it implies for the causal FLOPs (examples/pytorch/README.md). With
--documents N the mask is also document-wise, as torchtitan's is: each sequence holds N
documents of equal length, whose ids are a tensor computed on the GPU.
"""

import argparse

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from common import StepTimer, local_device


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--documents", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = local_device()
    shape = (args.batch, args.heads, args.seq, args.head_dim)
    q, k, v = (
        torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
        for _ in range(3)
    )
    mask_mod = causal
    if args.documents > 0:
        document = torch.arange(args.seq, device=device) // (args.seq // args.documents)

        def mask_mod(b, h, q_idx, kv_idx):
            return (q_idx >= kv_idx) & (document[q_idx] == document[kv_idx])

    mask = create_block_mask(mask_mod, args.batch, args.heads, args.seq, args.seq, device=device)
    attention = torch.compile(flex_attention)

    timer = StepTimer(warmup=2)
    for _ in range(args.steps):
        with timer:
            out = attention(q, k, v, block_mask=mask)
            out.sum().backward()
    timer.report()
    # Causal: half the score matrix; forward 2 matmuls, backward 5 (2.5x the forward).
    flops = 4 * args.batch * args.heads * args.seq * args.seq * args.head_dim / 2 * 3.5
    if timer.event_ms:
        mean_ms = sum(timer.event_ms) / len(timer.event_ms)
        print(f"attention: {flops / (mean_ms * 1e-3) / 1e12:.1f} TFLOP/s (causal)")


if __name__ == "__main__":
    main()
