"""Makes the assets torchtitan's own configs read, in a folder torchtitan is run from.

torchtitan's Llama configs name a Hugging Face tokenizer at ./tests/assets/tokenizer and the
"c4_test" dataset at ./tests/assets/c4_test: files of torchtitan's repository that its PyPI
wheel does not ship. This writes stand-ins for both under DIR/tests/assets, from text in this
repository (its README and docs): a byte-level BPE tokenizer trained with Hugging Face's
`tokenizers` (2,000 tokens: below every Llama config's vocabulary) with Llama 3's begin and end
of text tokens, and the text as JSON lines, one paragraph a record. Kernel durations depend on
shapes, not on token values, so a run predicts the same times with these as with the real
assets. Usage: python make_assets.py DIR
"""

import json
import pathlib
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

_REPO = pathlib.Path(__file__).resolve().parents[2]
_BOS, _EOS = "<|begin_of_text|>", "<|end_of_text|>"
_VOCAB = 2000


def _paragraphs():
    sources = [_REPO / "README.md"] + sorted((_REPO / "docs").glob("*.md"))
    for source in sources:
        for block in source.read_text(encoding="utf-8").split("\n\n"):
            text = " ".join(block.split())
            if len(text) >= 40:
                yield text


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_assets.py DIR")
    assets = pathlib.Path(sys.argv[1]) / "tests" / "assets"
    paragraphs = list(_paragraphs())

    tokenizer_dir = assets / "tokenizer"
    tokenizer_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_VOCAB,
        special_tokens=[_BOS, _EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(paragraphs, trainer=trainer)
    tokenizer.save(str(tokenizer_dir / "tokenizer.json"))
    config = {"bos_token": _BOS, "eos_token": _EOS, "model_max_length": 131072}
    (tokenizer_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")

    dataset_dir = assets / "c4_test"
    dataset_dir.mkdir(parents=True, exist_ok=True)
    with open(dataset_dir / "data.json", "w", encoding="utf-8") as out:
        for text in paragraphs:
            out.write(json.dumps({"text": text}) + "\n")
    print(f"{assets}: tokenizer of {tokenizer.get_vocab_size()} tokens, "
          f"{len(paragraphs)} paragraphs of text")


if __name__ == "__main__":
    main()
