"""Block masks as FlexAttention users build them on the GPU (create_block_mask with
device="cuda"), copied back to the host: under `myriad run` they must hold the true blocks
(sums are taken on the host: a kernel's result is not real under Myriad).

Prints the causal mask's block counts, a sliding-window mask's (per head), and whether a
document mask over a tensor on the GPU (whose mask_mod cannot run on the host) was built.
"""

import os

import torch
from torch.nn.attention.flex_attention import create_block_mask


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def main() -> None:
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    seq = 4096
    mask = create_block_mask(causal, 2, 4, seq, seq, device=device)
    print(f"causal: device {mask.kv_num_blocks.device.type}, "
          f"partial {int(mask.kv_num_blocks.cpu().sum())}, "
          f"full {int(mask.full_kv_num_blocks.cpu().sum())}")

    def window(b, h, q_idx, kv_idx):  # a wider window per head
        return (q_idx >= kv_idx) & (q_idx - kv_idx < 256 * (h + 1))

    # Large enough to be built one (batch, head) at a time on the host.
    windowed = create_block_mask(window, 2, 8, 8192, 8192, device=device)
    per_head = windowed.kv_num_blocks.cpu().sum(dim=(0, 2)).tolist()
    print(f"window: blocks per head {per_head}")

    documents = torch.zeros(seq, dtype=torch.int32, device=device)

    def same_document(b, h, q_idx, kv_idx):
        return documents[q_idx] == documents[kv_idx]

    built = create_block_mask(same_document, 1, 1, seq, seq, device=device)
    print(f"document mask built: {tuple(built.kv_num_blocks.shape)}")


if __name__ == "__main__":
    main()
