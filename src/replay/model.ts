// The exported checkpoint in onnxruntime-node: model.onnx (past/present key-value per layer, see
// src/trainer/coa_trainer/model/export_onnx.py for the graph contract), tokenizer.json and coa_model.json beside it.
// A `Decoder` holds one sequence's KV cache, so new tokens — generated or an observation — are fed once and
// never re-encoded (ids flow end to end, as in the trainer's rollouts). onnxruntime-node (a native module, external
// to the extension bundle) is loaded on first use, so the extension activates even where it is missing.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { Tokenizer } from './tokenizer';

export interface ModelInfo {
  format: 'coa-onnx-1';
  dialect: string;
  tags: {
    think_open: string;
    think_close: string;
    action_open: string;
    action_close: string;
    obs_open: string;
    obs_close: string;
    answer_open: string | null;
    answer_close: string | null;
  };
  tag_ids: Record<string, number>;
  eos_id: number | null;
  pad_id: number | null;
  vocab_size: number;
  kv: { layers: number; kv_heads: number; head_dim: number };
  /** The run config's prompt_template at export time. */
  prompt_template?: string;
  /** Positions the model was built for (HF max_position_embeddings); absent in older exports. */
  context?: number | null;
}

export class ModelLoadError extends Error {}

export class OnnxModel {
  private constructor(
    readonly ort: typeof Ort,
    readonly session: Ort.InferenceSession,
    readonly tokenizer: Tokenizer,
    readonly info: ModelInfo,
    readonly path: string,
  ) {}

  /** Load model.onnx with tokenizer.json and coa_model.json from the same directory. */
  static async load(onnxPath: string, options: { threads?: number } = {}): Promise<OnnxModel> {
    const dir = dirname(onnxPath);
    for (const f of [onnxPath, join(dir, 'tokenizer.json'), join(dir, 'coa_model.json')]) {
      if (!existsSync(f))
        throw new ModelLoadError(
          `${f} is missing: export the checkpoint with \`python -m coa_trainer export-onnx --checkpoint <model dir> -o ${onnxPath}\``,
        );
    }
    let info: ModelInfo;
    try {
      info = JSON.parse(readFileSync(join(dir, 'coa_model.json'), 'utf8')) as ModelInfo;
    } catch (e) {
      throw new ModelLoadError(`${join(dir, 'coa_model.json')}: ${(e as Error).message}`);
    }
    if (info.format !== 'coa-onnx-1')
      throw new ModelLoadError(`${join(dir, 'coa_model.json')}: unknown format ${JSON.stringify(info.format)}`);
    const tokenizer = Tokenizer.fromFile(join(dir, 'tokenizer.json'));
    let ort: typeof Ort;
    try {
      // require, not import(): the bundle is CommonJS, and a lazy require keeps the native module off activation.
      ort = require('onnxruntime-node') as typeof Ort;
    } catch (e) {
      throw new ModelLoadError(
        `onnxruntime-node could not be loaded (${(e as Error).message}); replay needs it installed beside the extension`,
      );
    }
    const session = await ort.InferenceSession.create(onnxPath, {
      executionProviders: ['cpu'],
      intraOpNumThreads: options.threads ?? 1,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    });
    const want = ['input_ids', 'attention_mask', 'position_ids', 'past_key_0', 'past_value_0'];
    const missing = want.filter((n) => !session.inputNames.includes(n));
    if (missing.length)
      throw new ModelLoadError(`${onnxPath}: not a KV-cache export (missing inputs ${missing.join(', ')})`);
    return new OnnxModel(ort, session, tokenizer, info, onnxPath);
  }

  decoder(): Decoder {
    return new Decoder(this);
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/** One sequence (batch 1) with its KV cache. */
export class Decoder {
  private past: Ort.Tensor[];
  /** Tokens fed so far (prompt + generated + observations). */
  readonly ids: number[] = [];

  constructor(private readonly model: OnnxModel) {
    const { layers, kv_heads, head_dim } = model.info.kv;
    const ort = model.ort;
    this.past = Array.from(
      { length: 2 * layers },
      () => new ort.Tensor('float32', new Float32Array(0), [1, kv_heads, 0, head_dim]),
    );
  }

  get length(): number {
    return this.ids.length;
  }

  /**
   * Feed tokens; returns the logits of every fed position ([n, vocab] row-major) — callers usually want the last
   * row (`lastRow`). The cache grows by `ids.length`.
   */
  async feed(ids: readonly number[]): Promise<{ logits: Float32Array; vocab: number }> {
    if (ids.length === 0) throw new Error('feed: no tokens');
    const P = this.ids.length;
    const S = ids.length;
    const ort = this.model.ort;
    const feeds: Record<string, Ort.Tensor> = {
      input_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from(ids, (x) => BigInt(x)),
        [1, S],
      ),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(P + S).fill(1n), [1, P + S]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: S }, (_, i) => BigInt(P + i)),
        [1, S],
      ),
    };
    const layers = this.model.info.kv.layers;
    for (let i = 0; i < layers; i++) {
      feeds[`past_key_${i}`] = this.past[2 * i];
      feeds[`past_value_${i}`] = this.past[2 * i + 1];
    }
    const out = await this.model.session.run(feeds);
    const next: Ort.Tensor[] = [];
    for (let i = 0; i < layers; i++) next.push(out[`present_key_${i}`], out[`present_value_${i}`]);
    for (const t of this.past) t.dispose?.();
    this.past = next;
    this.ids.push(...ids);
    const logits = out.logits;
    return { logits: logits.data as Float32Array, vocab: logits.dims[2] };
  }
}

export function lastRow(r: { logits: Float32Array; vocab: number }): Float32Array {
  return r.logits.subarray(r.logits.length - r.vocab);
}
