"""The always-search workflow baseline (evaluation/baselines.workflow_eval) on a real (tiny, barely trained) model and
the real environment server: the pipeline searches the question once, the model answers with tools refused, and
where it reaches for a tool the workflow still ends in an answer (its reasoning kept up to its last closed thought,
the answer opened by the pipeline and ended at the model's first tag). A barely trained model reaches for tools and
writes tags everywhere, which is what exercises the refusals."""

from conftest import TINY, needs_env_server, merge, run_trainer

needs_server = needs_env_server()


@needs_server
def test_every_workflow_trajectory_is_one_search_and_one_answer(tmp_path, write_config):
    import torch

    from coa_trainer.base.config import load_config
    from coa_trainer.base.runlayout import data_dir, final_dir
    from coa_trainer.data.benchmark import ensure_benchmark_files
    from coa_trainer.data.dialects import tags
    from coa_trainer.data.prompts import prompt_ids
    from coa_trainer.env.client import EnvClient
    from coa_trainer.evaluation.agent import eval_rollout
    from coa_trainer.evaluation.baselines import workflow_eval
    from coa_trainer.model.load import load_for_config, setup_runtime

    cfg = write_config(merge(TINY, {"stages": {"sft2": {"steps": 12}}, "eval": {"limit": 16}}))
    run = tmp_path / "run"
    for stage in ("pretrain", "sft2"):
        r = run_trainer("train", "--stage", stage, "--config", str(cfg), "--run-dir", str(run))
        assert r.returncode == 0, r.stdout[-2000:]
    config = load_config(cfg)
    rt = setup_runtime(config)
    torch.manual_seed(0)
    bench = ensure_benchmark_files(config, data_dir(config, run))
    model, tok = load_for_config(final_dir(run, "sft2"), rt, config, trainable=False, lora=False)
    model.eval()
    t = tags(config.dialect)
    with EnvClient.start(data_dir(config, run) / "corpus.jsonl", config.dialect) as env:
        metrics, records = workflow_eval(model, tok, bench, config, "dev", rt, env)
    obs_close = tok.convert_tokens_to_ids(t.obs_close)
    ends = [r["tokens"]["ids"].index(obs_close) + 1 for r in records]
    # what the model writes on its own after the pipeline's search, tools refused (an action ends the turn)
    plain = eval_rollout(
        model,
        tok,
        config,
        [prompt_ids(tok, config, r["question"]) + r["tokens"]["ids"][:e] for r, e in zip(records, ends)],
        None,
        rt,
    )
    assert metrics["questions"] == 16 == len(records)
    refused = 0
    for rec, own, obs_end in zip(records, plain, ends):
        response, mask, ids = rec["response"], rec["tokens"]["loss_mask"], rec["tokens"]["ids"]
        assert response.startswith(f"{t.action_open} {rec['question']} {t.action_close} {t.obs_open}")
        assert response.count(t.action_open) == 1 and response.count(t.action_close) == 1  # the pipeline's only
        assert response.count(t.answer_open) == 1 and response.rstrip().endswith(t.answer_close)
        assert rec["reward"]["tool_calls"] == 1
        assert set(mask[:obs_end]) == {0}  # the search and its observation: the pipeline's
        body = ids[obs_end:]
        if t.answer_close in tok.decode(own.ids, skip_special_tokens=False):
            assert body == own.ids and mask[obs_end:] == own.loss_mask  # answered on its own: untouched
        else:
            refused += 1  # the pipeline opened (and maybe closed) the answer: those tags are its own, mask 0
            opened = ids.index(tok.convert_tokens_to_ids(t.answer_open), obs_end)
            assert mask[opened] == 0
    assert refused > 0, "a barely trained model should reach for a tool somewhere"
