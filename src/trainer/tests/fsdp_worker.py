"""Run as `python fsdp_worker.py OUT.json` (one process) or under `torch.distributed.run --nproc_per_node=2` (FSDP2,
gloo): greedy generation on gathered parameters, then GRPO updates (PPO epochs × mini-batches, token-budget packed
micro-batches, k3 KL to a reference) on a fixed synthetic batch split by whole groups over the ranks. Rank 0 writes
what test_fsdp.py compares: generated ids, the summed loss terms, gradient norms and the final weights' summary."""

import json
import random
import sys

import torch
from coa_trainer.base.distributed import DistInfo
from coa_trainer.model.fsdp import full_state_dict, gathered, shard
from coa_trainer.rollout.generate import generate
from coa_trainer.algos.grpo import Sample
from coa_trainer.base.lifecycle import run_and_exit
from coa_trainer.model.scoring import TokenScorer
from coa_trainer.model.optim import make_optimizer
from coa_trainer.base.config import validate_config
from coa_trainer.stages.rl import policy_updates

V, G, GROUPS = 61, 2, 4
CPU = torch.device("cpu")


def tiny(seed: int):
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(
        Qwen2Config(
            vocab_size=V,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=128,
            tie_word_embeddings=True,
        )
    )


def batch() -> tuple[list[list[int]], list[Sample]]:
    r = random.Random(0)
    prompts = [[r.randrange(1, V) for _ in range(r.randrange(2, 6))] for _ in range(GROUPS * G)]
    samples = []
    for p in prompts:
        ids = [r.randrange(1, V) for _ in range(r.randrange(3, 15))]
        mask = [int(r.random() < 0.8) for _ in ids]
        samples.append(Sample(p, ids, mask, [-r.random() * 4 if m else None for m in mask], r.uniform(-1, 1)))
    return prompts, samples


def main(out: str) -> None:
    torch.set_num_threads(1)
    di = DistInfo.from_env()
    di.init(CPU)
    scorer = TokenScorer(tiny(0))
    model = shard(scorer, None) if di.active else scorer
    ref = tiny(1)
    prompts, samples = batch()
    per = len(samples) // di.world_size  # whole groups per rank, in order (as stages/rl.py takes them)
    mine = slice(di.rank * per, (di.rank + 1) * per)
    with gathered(model):
        new, _, _ = generate(scorer.lm, prompts[mine], 6, set(), 0, CPU)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, 1e-2, 0.0)
    # one mini-batch (all of a rank's groups) per epoch, two epochs: the second one's ratios depart from 1
    scfg = validate_config(
        {
            "stages": {
                "rl2": {
                    "mini_batches": 1,
                    "ppo_epochs": 2,
                    "clip_eps": 0.2,
                    "kl_coef": 0.05,
                    "temperature": 0.9,
                    "grad_clip": 0.5,
                    "micro_batch_tokens": 24,
                    "packing": True,
                }
            }
        }
    ).stages.rl2
    totals, grad_norm = policy_updates(model, ref, opt, params, samples[mine], G, scfg, 0, CPU, None, di)
    totals = di.all_reduce_dict(totals)
    state = full_state_dict(model) if di.active else model.state_dict()
    gen = [None] * di.world_size
    if di.active:
        import torch.distributed as dist

        dist.all_gather_object(gen, new)
    else:
        gen = [new]
    if di.rank == 0:
        with open(out, "w") as f:
            json.dump(
                {
                    "generated": [x for part in gen for x in part],
                    "totals": totals,
                    "grad_norm": grad_norm,
                    "weights": {k: v.double().sum().item() for k, v in state.items()},
                    "weights_abs": {k: v.double().abs().sum().item() for k, v in state.items()},
                },
                f,
            )
    di.shutdown()


if __name__ == "__main__":
    run_and_exit(lambda: main(sys.argv[1]))
