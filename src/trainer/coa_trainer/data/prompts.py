"""How a question becomes prompt ids. A tokenizer with a chat template (and `model.chat_template` on) gets
[system?, user] rendered with add_generation_prompt — the user turn is the dialect's instruction from the core's
table (schemas/prompts.json ← src/core/prompts.ts) unless `model.user_prompt` / `model.system_prompt` override it.
A tokenizer without one (a base model, the embedded default) gets `prompt_template` as before."""

from __future__ import annotations


from ..contracts.schemas import dialect_prompts
from ..contracts.run_config import RunConfig
from .tokenizer import TextTokenizer


def uses_chat_template(tok: TextTokenizer, config: RunConfig) -> bool:
    return bool(config.model.chat_template and getattr(tok, "chat_template", None))


def chat_messages(config: RunConfig, question: str, dialect: str, mode: str = "coa") -> list[dict]:
    """[system?, user]. `mode` "cot" (collect's chain-of-thought sampling): the table's tool-free instruction and
    no dialect system turn (it describes the tool), unless model.system_prompt is set."""
    table = dialect_prompts()[dialect]
    system = config.model.system_prompt
    if mode == "cot":
        user = table.cot
    else:
        system = table.system if system is None else system
        user = config.model.user_prompt or table.user
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": user.replace("{question}", question)}]


def prompt_string(
    tok: TextTokenizer, config: RunConfig, question: str, dialect: str | None = None, mode: str = "coa"
) -> str:
    """The prompt as text (what the model sees before its response)."""
    if uses_chat_template(tok, config):
        return tok.apply_chat_template(
            chat_messages(config, question, dialect or config.dialect, mode), tokenize=False, add_generation_prompt=True
        )
    return config.prompt_template.replace("{question}", question)


def prompt_ids(
    tok: TextTokenizer, config: RunConfig, question: str, dialect: str | None = None, mode: str = "coa"
) -> list[int]:
    """Prompt ids; the chat template's own special tokens (<|im_start|> …) are in its text, so no others are
    added."""
    return list(tok(prompt_string(tok, config, question, dialect, mode), add_special_tokens=False).input_ids)
