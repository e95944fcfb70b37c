"""The embedded benchmark: a synthetic knowledge base, deterministic from a seed.

Entities: persons, companies, cities, countries (invented one-word names). Relations:
  person  born_in  city      person  works_for  company      company  based_in  city      city  located_in  country
An entity is *famous* (all its facts are stated in the pretraining text: known) or *obscure* (its facts exist only
in the search corpus: unknown). Questions are single-hop or two-hop chains; train/dev/test are split by question.

Oracle trajectories (coa dialect) are the analogue of AutoCoA's teacher samples: each hop the model knows is a
statement inside <think>; a hop it does not know ends the thought with `?` and is searched. So the decision
"act or answer" is the token after e.g. `x born in` — `?` (search) or the entity (answer from memory).

`rl_fraction` holds out a fourth split, `rl`, for the RL stages: questions no SFT stage trained on (no oracle file is
written for it), so GRPO gets a real signal instead of the sampling noise of memorised train questions.

`redundant_search_fraction` makes the teacher over-call, as SFT data from always-search workflows or teachers
does: that share of the train questions with a known hop (`Benchmark.redundant`) states each known fact and then
searches it all the same (a verifying search), in the SFT-2/3 trajectories and the SFT-1 pairs alike. Dev/test and
the optimum stay as they are, so OTC-GRPO has redundant calls to cut. The fact is still stated first because a
teacher that wrote `x born in ?` for a famous x taught the tiny model to forget it: after SFT it recalled 0.19 of
the famous first hops it was meant to know, so a "redundant" search was in fact needed and OTC's cut lost answers
(with the verifying teacher 1.00 of the facts it trained on, 0.65 of the others after SFT-3).

The teacher's observations come from the environment server (`fetch_observations`), a third of them with one
document instead of `top_k` (`oracle_top_k`), so the models read both shapes a real search returns."""

from __future__ import annotations

import hashlib
import json
import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter

from ..data.dialects import Tags, tags as dialect_tags
from ..data.records import JsonRecord, trajectory_record

if TYPE_CHECKING:  # started lazily where a benchmark needs its observations
    from ..env.client import EnvClient
from ..contracts.schemas import search_table
from ..contracts.run_config import BenchmarkConfig, RunConfig
from ..base.options import DataOptions

BENCHMARK_VERSION = 5

# relation → (subject type, object type, statement prefix template, question template)
RELATIONS: dict[str, tuple[str, str, str, str]] = {
    "born_in": ("person", "city", "{s} born in", "where was {s} born ?"),
    "works_for": ("person", "company", "{s} works for", "who does {s} work for ?"),
    "based_in": ("company", "city", "{s} based in", "where is {s} based ?"),
    "located_in": ("city", "country", "{s} located in", "which country is {s} in ?"),
}
# two-hop question kinds: (relation 1, relation 2, template on the first subject)
TWO_HOP: dict[str, tuple[str, str, str]] = {
    "born_country": ("born_in", "located_in", "which country was {s} born in ?"),
    "employer_city": ("works_for", "based_in", "where is the employer of {s} based ?"),
    "company_country": ("based_in", "located_in", "which country is {s} based in ?"),
}
ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "tr", "gl"]
VOWELS = ["a", "e", "i", "o", "u"]
CODAS = ["", "", "n", "r", "l", "k", "s"]


@dataclass
class Hop:
    subject: str
    relation: str
    object: str
    known: bool

    @property
    def prefix(self) -> str:
        return RELATIONS[self.relation][2].format(s=self.subject)


@dataclass
class Question:
    id: str
    question: str
    answer: str
    kind: str  # relation name or two-hop kind
    hops: list[Hop]
    split: str

    @property
    def known(self) -> bool:
        return all(h.known for h in self.hops)

    @property
    def optimal_tool_calls(self) -> int:
        return sum(1 for h in self.hops if not h.known)


@dataclass(frozen=True)
class DecisionPair:
    """An SFT-1 pair at one hop's decision: the shared prefix, the oracle's continuation and the opposite one."""

    prefix: str
    chosen: str
    rejected: str
    act: bool  # the chosen continuation searches
    hop: int


@dataclass
class Segment:
    """One block of a response: kind is think | action | observation | answer."""

    kind: str
    text: str


@dataclass(frozen=True)
class Passage:
    """A document of the search corpus, in FlashRAG's shape: its id and contents (`"name"` on the first line, then
    the entity's facts)."""

    id: str
    contents: str

    def json(self) -> dict[str, str]:
        """The corpus.jsonl line's object (id, contents: the keys in that order)."""
        return {"id": self.id, "contents": self.contents}


@dataclass
class Benchmark:
    seed: int
    entities: dict[str, list[str]]
    famous: set[str]
    facts: dict[tuple[str, str], str]
    questions: list[Question]
    top_k: int
    corpus: list[Passage] = field(default_factory=list)
    redundant: set[str] = field(default_factory=set)  # train question ids whose teacher also searches known hops
    # query → the environment server's coa observation for it (fetch_observations): the oracle's observations are
    # what the server returns at evaluation and RL time, byte for byte
    observations: dict[str, str] | None = None

    # ------------------------------------------------------------ text
    def statement(self, subject: str, relation: str) -> str:
        return f"{RELATIONS[relation][2].format(s=subject)} {self.facts[(subject, relation)]} ."

    def pretrain_lines(self) -> list[str]:
        """Known facts in two forms: the statement and the plain QA form used by the no-tool evaluation."""
        # every entity is named (so obscure names are familiar words), but only famous entities' facts are stated
        # The "what is x" lines also teach copying a name from the question into the answer, for every name —
        # the skill the agent needs to write `<think> x born in …` and its queries about entities it never saw in SFT.
        lines = [
            f"question : what is {name} ?\nanswer : {name} is a {etype} ."
            for etype, names in sorted(self.entities.items())
            for name in names
        ]
        for (s, rel), o in sorted(self.facts.items()):
            if s in self.famous:
                lines.append(self.statement(s, rel))
                lines.append(f"question : {RELATIONS[rel][3].format(s=s)}\nanswer : {o}")
        return lines

    def split(self, name: str) -> list[Question]:
        return [q for q in self.questions if q.split == name]

    # ------------------------------------------------------------ observations (from the environment server)
    def queries(self) -> list[str]:
        """Every query an oracle trajectory can search: each entity's statement prefix of each of its relations
        (hallucinated hops in SFT-1 pairs search other entities' facts too)."""
        return [
            RELATIONS[rel][2].format(s=e) for rel, (stype, _, _, _) in RELATIONS.items() for e in self.entities[stype]
        ]

    def observation(self, query: str) -> str:
        if self.observations is None:
            raise RuntimeError(
                "the benchmark's observations are not fetched: ensure_benchmark_files(config, "
                "data_dir) or fetch_observations(bench, env) asks the environment server"
            )
        return self.observations[query]

    # ------------------------------------------------------------ oracle
    def hops_for(self, q: Question, override: dict[int, str] | None = None) -> list[Hop]:
        """The question's hops; override={i: wrong} hallucinates hop i's object (and follows it)."""
        hops: list[Hop] = []
        subject = q.hops[0].subject
        for i, h in enumerate(q.hops):
            if override and i in override:
                obj, known = override[i], True
            else:
                obj, known = self.facts[(subject, h.relation)], subject in self.famous
            hops.append(Hop(subject, h.relation, obj, known))
            subject = obj
        return hops

    def render(self, hops: list[Hop], t: Tags, verify: bool = False) -> tuple[list[Segment], list[int]]:
        """Oracle segments for `hops`, and for each hop the character offset (in " ".join of segment texts) where
        its decision token (`?` or the object) starts. `verify`: the over-calling teacher's form — a known hop is
        stated from memory and then searched all the same."""
        segments: list[Segment] = []
        decisions: list[int] = []
        think: list[str] = []

        def offset_in_think() -> int:
            done = sum(len(s.text) + 1 for s in segments)
            return done + len(t.think_open) + 1 + sum(len(p) + 1 for p in think)

        for hop in hops:
            decisions.append(offset_in_think() + len(hop.prefix) + 1)
            if hop.known:
                think.append(f"{hop.prefix} {hop.object} .")
                if not verify:
                    continue
            else:
                think.append(f"{hop.prefix} ?")
            segments.append(Segment("think", f"{t.think_open} {' '.join(think)} {t.think_close}"))
            segments.append(Segment("action", f"{t.action_open} {hop.prefix} {t.action_close}"))
            obs = self.observation(hop.prefix)
            segments.append(Segment("observation", f"{t.obs_open}{obs}{t.obs_close}"))
            think = [f"{hop.prefix} {hop.object} ."]
        segments.append(Segment("think", f"{t.think_open} {' '.join(think)} {t.think_close}"))
        assert t.answer_open is not None, "oracle trajectories need a dialect with an answer tag"
        segments.append(Segment("answer", f"{t.answer_open} {hops[-1].object} {t.answer_close}"))
        return segments, decisions

    def redundant_searches(self, q: Question) -> int:
        """Searches in q's teacher trajectory beyond the optimum (known facts searched)."""
        return len(q.hops) - q.optimal_tool_calls if q.id in self.redundant else 0

    def oracle(self, q: Question, t: Tags) -> list[Segment]:
        return self.render(self.hops_for(q), t, verify=q.id in self.redundant)[0]

    def pairs(self, q: Question, t: Tags, rng: random.Random) -> list[DecisionPair]:
        """SFT-1 contrastive pairs, one per hop: shared prefix up to the decision token; chosen = the oracle's
        continuation (search if unknown, state the fact if known) up to the end of the next action or answer;
        rejected = the opposite (answer with a hallucinated object / search a known fact). A redundant question's
        teacher states a known fact and then searches it anyway (`render(verify=True)`), its pairs the same way: the
        decision stays "state what you know", the redundant search comes after it."""
        out = []
        verify = q.id in self.redundant
        true_hops = self.hops_for(q)
        segs, decisions = self.render(true_hops, t, verify)
        text = join_segments(segs)
        for i, hop in enumerate(true_hops):
            if hop.known:
                flipped = [
                    Hop(h.subject, h.relation, h.object, h.known if j != i else False) for j, h in enumerate(true_hops)
                ]
                flipped = flipped[: i + 1]  # continuation ends at the search anyway
            else:
                otype = RELATIONS[hop.relation][1]
                # hallucinate a famous entity where possible, so the rejected path answers without any search
                wrong_pool = [e for e in self.entities[otype] if e != hop.object]
                famous_pool = [e for e in wrong_pool if e in self.famous or otype == "country"]
                wrong = rng.choice(famous_pool or wrong_pool)
                flipped = self.hops_for(q, {i: wrong})
            fsegs, fdec = self.render(flipped, t, verify)
            ftext = join_segments(fsegs)
            cut = decisions[i]
            assert ftext[:cut] == text[:cut], "a flipped trajectory must share the prefix"
            out.append(
                DecisionPair(
                    prefix=text[:cut],
                    chosen=text[cut : continuation_end(text, cut, t)],
                    rejected=ftext[cut : continuation_end(ftext, cut, t)],
                    act=not hop.known,
                    hop=i,
                )
            )
        return out


def join_segments(segments: list[Segment]) -> str:
    return " ".join(s.text for s in segments)


def continuation_end(text: str, start: int, t: Tags) -> int:
    """End of the first action or answer close tag at or after `start`."""
    ends = [text.find(tag, start) for tag in (t.action_close, t.answer_close or "\0")]
    ends = [e + len(tag) for e, tag in zip(ends, (t.action_close, t.answer_close or "")) if e >= 0]
    return min(ends)


def oracle_top_k(query: str, top_k: int) -> int:
    """Documents the teacher asks for when it searches `query`: `top_k`, or 1 for about a third of the queries (by
    a hash of the query). A real search often returns fewer documents than asked (a question whose words match one
    passage), and a model that only ever read `top_k` of them cannot read one: the SFT-1+2 model answered 12 of 40
    one-hop questions from a 1-document observation against 32 of 40 from 2."""
    return 1 if top_k > 1 and zlib.crc32(query.encode()) % 3 == 0 else top_k


def fetch_observations(bench: Benchmark, env: EnvClient) -> dict[str, str]:
    """Every oracle query's coa observation, one batched /v1/tools/search call to the environment server (an
    EnvClient on this benchmark's corpus) per number of documents asked for (`oracle_top_k`)."""
    by_k: dict[int, list[str]] = {}
    for q in bench.queries():
        by_k.setdefault(oracle_top_k(q, bench.top_k), []).append(q)
    out: dict[str, str] = {}
    for k, queries in sorted(by_k.items()):
        out.update(zip(queries, env.search(queries, top_k=k, dialect="coa").observations))
    return out


# ---------------------------------------------------------------- generation


def _names(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    out = []
    while len(out) < count:
        n = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(rng.choice((2, 2, 3)))) + rng.choice(CODAS)
        if n not in taken and len(n) >= 4:
            taken.add(n)
            out.append(n)
    return out


def generate(params: BenchmarkConfig, seed: int) -> Benchmark:
    """Build the benchmark from the config's `benchmark` section (see src/core/config.ts); `seed`: its own seed, else
    the run's (the section's seed is not read here)."""
    rng = random.Random(seed)
    taken: set[str] = {w for tpl in RELATIONS.values() for w in tpl[3].split()} | {"question", "answer"}
    taken |= {"person", "company", "city", "country", "what"}
    taken |= {w for tpl in TWO_HOP.values() for w in tpl[2].split()} | set(search_table().stopwords) | {"results"}
    entities = {
        "country": _names(rng, params.countries, taken),
        "city": _names(rng, params.cities, taken),
        "company": _names(rng, params.companies, taken),
        "person": _names(rng, params.persons, taken),
    }
    facts: dict[tuple[str, str], str] = {}
    for rel, (stype, otype, _, _) in RELATIONS.items():
        for s in entities[stype]:
            facts[(s, rel)] = rng.choice(entities[otype])
    famous: set[str] = set()
    for etype in ("person", "company", "city"):
        names = list(entities[etype])
        rng.shuffle(names)
        famous |= set(names[: round(len(names) * params.famous_fraction)])

    questions: list[Question] = []

    def add(kind: str, text: str, s: str, rels: list[str]) -> None:
        hops, subject = [], s
        for rel in rels:
            obj = facts[(subject, rel)]
            hops.append(Hop(subject, rel, obj, subject in famous))
            subject = obj
        questions.append(Question(f"q{len(questions):04d}", text, hops[-1].object, kind, hops, "train"))

    for etype in ("person", "company", "city"):
        for s in entities[etype]:
            for rel, (stype, _, _, qtpl) in RELATIONS.items():
                if stype == etype:
                    add(rel, qtpl.format(s=s), s, [rel])
            for kind, (r1, r2, qtpl) in TWO_HOP.items():
                if RELATIONS[r1][0] == etype:
                    add(kind, qtpl.format(s=s), s, [r1, r2])

    # Splits go by question, stratified by (kind, known pattern) so every split has every kind. A tiny model
    # cannot learn to copy names it never wrote, so dev/test subjects also occur in other training questions;
    # what is held out is the (subject, relation) pair: whether to search it and what the answer is.
    # The rl split (rl_fraction) comes out of what would be train, after dev and test and with no draw of its own,
    # so dev, test and everything generated later are the same whatever the fraction: SFT trains `train`, RL samples
    # `rl` (questions no SFT stage saw), hyper-parameters are chosen on `dev`, results reported on `test`.
    strata: dict[tuple, list[Question]] = {}
    for q in questions:
        strata.setdefault((q.kind, tuple(h.known for h in q.hops)), []).append(q)
    for key in sorted(strata):
        group = strata[key]
        rng.shuffle(group)
        n_dev = round(len(group) * params.dev_fraction)
        n_test = round(len(group) * params.test_fraction)
        n_rl = round(len(group) * params.rl_fraction)
        for i, q in enumerate(group):
            q.split = (
                "dev" if i < n_dev else "test" if i < n_dev + n_test else "rl" if i < n_dev + n_test + n_rl else "train"
            )
    bench = Benchmark(seed, entities, famous, facts, questions, params.top_k)
    # an over-calling teacher: its own rng, so the knowledge base and splits do not depend on the fraction
    eligible = [q for q in questions if q.split == "train" and any(h.known for h in q.hops)]
    n_redundant = round(len(eligible) * params.redundant_search_fraction)
    bench.redundant = {q.id for q in random.Random(f"{seed}/redundant").sample(eligible, n_redundant)}
    # corpus: one passage per entity with facts, FlashRAG format; order fixed by entity type then name list
    for etype in ("person", "company", "city"):
        for s in entities[etype]:
            text = " ".join(bench.statement(s, rel) for rel, spec in RELATIONS.items() if spec[0] == etype)
            bench.corpus.append(Passage(str(len(bench.corpus)), f'"{s}"\n{text}'))
    return bench


# ---------------------------------------------------------------- files


def record_for(q: Question, segments: list[Segment], dialect: str, redundant_searches: int = 0) -> JsonRecord:
    """A trajectory record (src/core/record.ts) for an oracle trajectory, plus benchmark fields."""
    extra = {"redundant_searches": redundant_searches} if redundant_searches else {}
    return trajectory_record(
        q.id,
        q.question,
        join_segments(segments),
        golden_answers=[q.answer],
        dialect=dialect,
        meta={"stage": "oracle", "group": q.kind},
        extra={
            "split": q.split,
            "hops": len(q.hops),
            "known": q.known,
            "optimal_tool_calls": q.optimal_tool_calls,
            **extra,
        },
    )


def write_benchmark(bench: Benchmark, out: Path, dialect: str = "coa") -> Path:
    """Write kb.json, questions.jsonl, corpus.jsonl (FlashRAG), pretrain.txt and oracle_<split>.jsonl."""
    out.mkdir(parents=True, exist_ok=True)
    t = dialect_tags(dialect)

    def dump(name: str, rows: list[Any]) -> None:
        tmp = out / (name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
        tmp.replace(out / name)

    dump("corpus.jsonl", [p.json() for p in bench.corpus])
    dump("pretrain.txt", [json.dumps(line) for line in bench.pretrain_lines()])
    dump(
        "questions.jsonl",
        [
            {
                "id": q.id,
                "question": q.question,
                "golden_answers": [q.answer],
                "kind": q.kind,
                "split": q.split,
                "hops": [h.__dict__ for h in q.hops],
                "known": q.known,
                "optimal_tool_calls": q.optimal_tool_calls,
            }
            for q in bench.questions
        ],
    )
    for split in ("train", "dev", "test"):
        dump(
            f"oracle_{split}.jsonl",
            [record_for(q, bench.oracle(q, t), dialect, bench.redundant_searches(q)) for q in bench.split(split)],
        )
    kb = {
        "version": BENCHMARK_VERSION,
        "seed": bench.seed,
        "entities": bench.entities,
        "famous": sorted(bench.famous),
        "facts": [[s, r, o] for (s, r), o in sorted(bench.facts.items())],
    }
    (out / "kb.json").write_text(json.dumps(kb, indent=1) + "\n", encoding="utf-8")
    return out


def fingerprint(params: BenchmarkConfig, seed: int) -> str:
    """What the generated files depend on. A fraction added later enters only when set (not 0), so fingerprints of
    older runs stay valid."""
    p = params
    later = {"redundant_search_fraction": p.redundant_search_fraction, "rl_fraction": p.rl_fraction}
    hashed = {
        "v": BENCHMARK_VERSION,
        "seed": seed,
        "persons": p.persons,
        "companies": p.companies,
        "cities": p.cities,
        "countries": p.countries,
        "famous_fraction": p.famous_fraction,
        "dev_fraction": p.dev_fraction,
        "test_fraction": p.test_fraction,
        "top_k": p.top_k,
        **{k: v for k, v in later.items() if v},
    }
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def benchmark_from_config(config: RunConfig, data_dir: Path | None = None) -> Benchmark:
    """The benchmark of the config; with `data_dir`, its cached observations attached when they are there."""
    params = config.benchmark
    seed = params.seed if params.seed is not None else config.seed
    bench = generate(params, seed)
    if data_dir is not None:
        bench.observations = _cached_observations(data_dir, fingerprint(params, seed))
    return bench


OBSERVATIONS = "observations.json"


@dataclass(frozen=True)
class ObservationCache:
    """data_dir/observations.json: the oracle's observations and the fingerprint of the benchmark they were fetched
    for."""

    fingerprint: str | None = None
    observations: dict[str, str] = field(default_factory=dict)


def _cached_observations(data_dir: Path, fp: str) -> dict[str, str] | None:
    path = data_dir / OBSERVATIONS
    if not path.is_file():
        return None
    cached = TypeAdapter(ObservationCache).validate_json(path.read_bytes())
    return cached.observations if cached.fingerprint == fp else None


def ensure_observations(bench: Benchmark, config: RunConfig, data_dir: Path, env: EnvClient | None = None) -> None:
    """Attach the oracle's observations: from data_dir's cache, else one batched call to the environment server
    (`env`, or one started on data_dir/corpus.jsonl for the call), cached for the next stage."""
    fp = fingerprint(config.benchmark, bench.seed)
    bench.observations = _cached_observations(data_dir, fp)
    if bench.observations is not None:
        return
    corpus = data_dir / "corpus.jsonl"
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = corpus.with_name(corpus.name + ".tmp")
    tmp.write_text("".join(json.dumps(p.json(), ensure_ascii=False) + "\n" for p in bench.corpus), encoding="utf-8")
    tmp.replace(corpus)
    if env is None:
        from ..env.client import EnvClient

        with EnvClient.start(corpus, "coa", config.env.node, config.env.cli) as started:
            bench.observations = fetch_observations(bench, started)
    else:
        bench.observations = fetch_observations(bench, env)
    tmp = data_dir / (OBSERVATIONS + ".tmp")
    tmp.write_text(
        json.dumps({"fingerprint": fp, "observations": bench.observations}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    tmp.replace(data_dir / OBSERVATIONS)


def ensure_benchmark_files(config: RunConfig, data_dir: Path, env: EnvClient | None = None) -> Benchmark:
    """Generate the benchmark and (re)write its files unless the same fingerprint is already there."""
    bench = benchmark_from_config(config)
    fp = fingerprint(config.benchmark, bench.seed)
    ensure_observations(bench, config, data_dir, env)
    stamp = data_dir / "manifest.json"
    if not (stamp.is_file() and json.loads(stamp.read_text()).get("fingerprint") == fp):
        write_benchmark(bench, data_dir, config.dialect if config.dialect == "coa" else "coa")
        stamp.write_text(
            json.dumps({"fingerprint": fp, "questions": len(bench.questions), "corpus": len(bench.corpus)}) + "\n"
        )
    return bench


def data_command(opts: DataOptions) -> int:
    from ..base.config import ConfigError, default_config, load_config

    try:
        config = load_config(opts.config, list(opts.overrides)) if opts.config else default_config()
    except ConfigError as e:
        print(f"error: {e}")
        return 2
    if opts.seed is not None:
        config.benchmark.seed = opts.seed
    bench = ensure_benchmark_files(config, opts.out)
    counts = {s: len(bench.split(s)) for s in ("train", "rl", "dev", "test")}
    print(
        json.dumps(
            {
                "out": str(opts.out),
                "questions": counts,
                "corpus": len(bench.corpus),
                "pretrain_lines": len(bench.pretrain_lines()),
            }
        )
    )
    return 0


def vocabulary_texts(bench: Benchmark, config: RunConfig) -> list[str]:
    from .dialects import tags

    t = tags("coa")
    texts = bench.pretrain_lines() + [p.contents for p in bench.corpus]
    texts += [q.question for q in bench.questions] + [join_segments(bench.oracle(q, t)) for q in bench.questions]
    return texts + [config.prompt_template, "answer :"]
