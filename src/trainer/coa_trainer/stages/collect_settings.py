"""What a collection is collecting, typed: the teacher (a model directory or an OpenAI-compatible endpoint), the
sampling settings, and the settings as a whole. settings.json and collect.json keep them as JSON (`to_json`); a
`--resume` compares the JSON it wrote with the one it would write, and the results table reads the teacher back
(`from_json`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from ..contracts.run_config import CollectReward


@dataclass
class TeacherSettings:
    """`kind` "model": `path` is the model directory; "endpoint": `url`, `api`, `model` (as the endpoint named
    itself once probed), `tokenizer` (renders the prompt for the completions api), `stops_in_text` (what the probe
    showed the endpoint does with matched stop strings; None until probed, or when the probe could not tell)."""

    kind: Literal["model", "endpoint"]
    path: str | None = None
    url: str | None = None
    api: Literal["completions", "chat"] = "chat"
    model: str | None = None
    tokenizer: str | None = None
    stops_in_text: bool | None = None
    probed: bool = False  # the endpoint was probed: stops_in_text is its answer (written then, even when None)

    def to_json(self) -> dict[str, object]:
        if self.kind == "model":
            return {"kind": "model", "path": self.path}
        probe: dict[str, object] = {"stops_in_text": self.stops_in_text} if self.probed else {}
        return {
            "kind": "endpoint",
            "url": self.url,
            "api": self.api,
            "model": self.model,
            "tokenizer": self.tokenizer,
            **probe,
        }

    def identity(self) -> dict[str, object]:
        """The JSON less what the endpoint says about itself, which may differ between two starts of one collection."""
        return {k: v for k, v in self.to_json().items() if k not in ("model", "stops_in_text")}

    @staticmethod
    def from_json(d: dict[str, object]) -> TeacherSettings:
        def text(key: str) -> str | None:
            v = d.get(key)
            return v if isinstance(v, str) else None

        stops = d.get("stops_in_text")
        return TeacherSettings(
            kind="endpoint" if d.get("kind") == "endpoint" else "model",
            path=text("path"),
            url=text("url"),
            api="completions" if d.get("api") == "completions" else "chat",
            model=text("model"),
            tokenizer=text("tokenizer"),
            stops_in_text=stops if isinstance(stops, bool) else None,
            probed="stops_in_text" in d,
        )

    def describe(self) -> str:
        return self.path or f"{self.url} ({self.api}, model {self.model})"


@dataclass
class Sampling:
    temperature: float
    top_p: float
    seed: int
    max_new_tokens: int
    max_turns: int
    max_obs_tokens: int
    max_len: int
    top_k: int


@dataclass
class CollectSettings:
    teacher: TeacherSettings
    split: str
    limit: int | None
    modes: list[str]
    samples: int
    dialect: str
    reward: CollectReward
    sampling: Sampling

    def to_json(self) -> dict[str, object]:
        return {
            "teacher": self.teacher.to_json(),
            "split": self.split,
            "limit": self.limit,
            "modes": self.modes,
            "samples": self.samples,
            "dialect": self.dialect,
            "reward": self.reward.model_dump(),
            "sampling": asdict(self.sampling),
        }
