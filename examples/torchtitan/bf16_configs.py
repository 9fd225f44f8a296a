"""torchtitan configs as a user keeps them in a module of their own, for the table's rows that
the stock wheels cannot run as published.

torchtitan's own `llama3_405b` config converts its linears to float8 with torchao, and the
table's 405B rows ran float8 too. With torch 2.15's pinned Triton (3.9), torchao 0.18.0 (the
latest) fails to import `torchao.prototype.moe_training` (an autotune key that is not a kernel
argument, which Triton 3.9 refuses; 0.17.0 has the same kernel), and torchtitan imports that
module whenever torchao is installed: on a real GPU as under Myriad. So this config is torchtitan's own
`llama3_405b` in bf16: the same model, batch, activation checkpointing and compile, without the
float8 converter, and without asynchronous tensor parallelism (its symmetric-memory kernels
need CUDA multicast objects, which Myriad does not emulate yet).

Usage: PYTHONPATH=<this folder> torchrun ... -m torchtitan.train --module bf16_configs
--config llama3_405b_bf16 (torchtitan takes a module path of one's own for --module).
"""

from torchtitan.components.checkpoint import CheckpointManager
from torchtitan.components.loss import ChunkedLossWrapper, CrossEntropyLoss
from torchtitan.components.metrics import MetricsProcessor
from torchtitan.components.optimizer import default_adamw, LRSchedulersContainer
from torchtitan.components.validate import Validator
from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
from torchtitan.distributed.activation_checkpoint import FullAC
from torchtitan.hf_datasets.text_datasets import HuggingFaceTextDataLoader
from torchtitan.models.common.config_utils import decoder_vocab_size
from torchtitan.models.llama3 import model_registry
from torchtitan.tools.profiler import Profiler
from torchtitan.trainer import Trainer


def llama3_405b_bf16() -> Trainer.Config:
    """torchtitan 0.3.0's `llama3_405b` (models/llama3/config_registry.py), field for field,
    but for the float8 converter and asynchronous tensor parallelism (its own function cannot
    be called without torchao: it builds the converter's config)."""
    model_spec = model_registry("405B")
    return Trainer.Config(
        loss=ChunkedLossWrapper.Config(
            loss_fn=CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(model_spec)),
        ),
        hf_assets_path="./assets/hf/Llama-3.1-405B",
        profiler=Profiler.Config(enable_profiling=True, profile_freq=100),
        metrics=MetricsProcessor.Config(enable_tensorboard=True),
        model_spec=model_spec,
        optimizer=default_adamw(lr=8e-5),
        lr_scheduler=LRSchedulersContainer.Config(warmup_steps=600),
        training=TrainingConfig(local_batch_size=2, seq_len=8192, steps=3000),
        dataloader=HuggingFaceTextDataLoader.Config(dataset="c4"),
        parallelism=ParallelismConfig(tensor_parallel_degree=8),
        checkpoint=CheckpointManager.Config(interval=500),
        activation_checkpoint=FullAC.Config(),
        compile=CompileConfig(enable=True, enable_async_tensor_parallel=False),
        validator=Validator.Config(freq=500, steps=1200),
    )


def _first_layers(config: Trainer.Config, layers: int) -> Trainer.Config:
    config.model_spec.model.layers = config.model_spec.model.layers[:layers]
    return config


def llama3_405b_bf16_16_layers() -> Trainer.Config:
    """`llama3_405b_bf16` cut to its first 16 transformer blocks (2 per stage of an 8-stage
    pipeline): the 405B's layer shapes and parallel layout at a depth a quick run can take."""
    return _first_layers(llama3_405b_bf16(), 16)


def llama3_405b_bf16_2_layers() -> Trainer.Config:
    """`llama3_405b_bf16` cut to 2 transformer blocks: the 405B's layer shapes at a depth
    that a 2-stage pipeline of 8 GPUs can hold and a test can run unfolded."""
    return _first_layers(llama3_405b_bf16(), 2)
