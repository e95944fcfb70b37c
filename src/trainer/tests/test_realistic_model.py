"""The realistic test model is what the real-model tests rely on: a chat template, tags as text that byte-level BPE
merges across boundaries, no tag among the special tokens."""

from transformers import AutoTokenizer


def test_realistic_model_is_realistic(realistic_model_dir):
    tok = AutoTokenizer.from_pretrained(str(realistic_model_dir))
    prompt = tok.apply_chat_template([{"role": "user", "content": "q?"}], tokenize=False, add_generation_prompt=True)
    assert (
        prompt == "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nq?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert not any("search" in t or "answer" in t for t in tok.all_special_tokens)
    text = "<search> x </search>\n\n<information>Doc 1"
    enc = tok(text, return_offsets_mapping=True, add_special_tokens=False)
    pieces = [text[a:b] for a, b in enc["offset_mapping"]]
    assert ">\n\n" in pieces  # a token that starts inside a tag and ends in the text after it
    assert any(p.startswith(">") and len(p) > 1 and p[1].isalpha() for p in pieces)  # '>Doc': tag end + observation
    assert tok.decode(enc["input_ids"]) == text
