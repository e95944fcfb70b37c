"""The embedded default's tokenizer: word-level over the synthetic vocabulary, built with `tokenizers`, with every
dialect tag one special token. Word-level keeps decode → encode an identity on anything the model can write
(no merge ambiguity), which the RL stages rely on (re-tokenisation mismatches must be 0)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Protocol, Sequence

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import AddedToken

from ..data.dialects import all_tags
from ..contracts.schemas import dialect_table


class TokenizedText(Protocol):
    """What a tokenizer call returns for one text (a transformers BatchEncoding): the token ids and, when asked for
    (`return_offsets_mapping`), each token's (start, end) character span in the text."""

    @property
    def input_ids(self) -> list[int]: ...

    @property
    def offset_mapping(self) -> list[tuple[int, int]]: ...


class TextTokenizer(Protocol):
    """What the trainer uses of a Hugging Face tokenizer, as model/load.load_tokenizer returns it (the pad token set:
    the model's own, else its end-of-sequence token)."""

    pad_token_id: int
    eos_token_id: int
    unk_token_id: int | None

    def __call__(
        self, text: str, add_special_tokens: bool = ..., return_offsets_mapping: bool = ...
    ) -> TokenizedText: ...

    def __len__(self) -> int: ...

    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = ...) -> str: ...

    def batch_decode(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = ...) -> list[str]: ...

    def convert_tokens_to_ids(self, tokens: str) -> int | None: ...

    def apply_chat_template(
        self, conversation: list[dict[str, str]], tokenize: bool = ..., add_generation_prompt: bool = ...
    ) -> str: ...

    def save_pretrained(self, save_directory: str) -> tuple[str, ...]: ...


PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"
PUNCT = list(".,:;?!'\"()[]{}<>/\\-_+=*&%$#@|~`^")


def pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Punctuation("isolated"),
            pre_tokenizers.Digits(individual_digits=True),
        ]
    )


def vocabulary(texts: Iterable[str]) -> list[str]:
    """Sorted words of `texts` as the pre-tokenizer splits them (tags removed), plus digits and punctuation."""
    tag_re = re.compile("|".join(re.escape(t) for t in sorted(all_tags(), key=len, reverse=True)))
    norm = normalizers.Lowercase()
    pre = pre_tokenizer()
    # the words observation layouts and answer syntax write themselves (src/env/observations.ts layoutWords), so
    # real observations never hit <unk>
    words: set[str] = set(dialect_table().tokenizer_words) | set(PUNCT) | {str(d) for d in range(10)}
    for text in texts:
        for piece, _ in pre.pre_tokenize_str(norm.normalize_str(tag_re.sub(" ", text))):
            words.add(piece)
    return sorted(words)


def build_tokenizer(texts: Iterable[str]) -> Tokenizer:
    tags = all_tags()
    specials = [PAD, UNK, EOS, *tags]
    vocab = {tok: i for i, tok in enumerate(specials)}
    for w in vocabulary(texts):
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizer()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins tokens with single spaces
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


def save_hf_tokenizer(tok: Tokenizer, out_dir: Path) -> None:
    """Save as a transformers fast tokenizer (AutoTokenizer.from_pretrained loads it)."""
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        unk_token=UNK,
        eos_token=EOS,
        additional_special_tokens=list(all_tags()),
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    hf.save_pretrained(str(out_dir))
