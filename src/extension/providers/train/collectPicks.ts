// "CoA: Collect Trajectories": the stable texts of its quick picks (e2e tests select items by these labels) and the
// pure helpers behind them. No vscode import. The picks are Train Stage's — a run config, its data — then the
// teacher: the config's, a run's stage result, a model directory or an OpenAI-compatible endpoint.
//   title 'CoA: Collect Trajectories (1/2): run config'   items as Train Stage's run config list
//   title 'CoA: Train Stage: data'                         when the config has a data section (as Train Stage)
//   title 'CoA: Collect Trajectories (2/2): teacher'       items 'Teacher from the run config' (when it names one),
//                                                           '<run id> / <stage> final', 'Hugging Face model directory…',
//                                                           'OpenAI-compatible endpoint…' (then an input box for the URL)
//   Scripted: executeCommand('coaStudio.collectTrajectories', { config?, teacher?, teacherUrl?, data? }), checked
//   against ./requests.ts CollectRequestSchema.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const COLLECT_TITLES = {
  config: 'CoA: Collect Trajectories (1/2): run config',
  teacher: 'CoA: Collect Trajectories (2/2): teacher',
  url: 'CoA: Collect Trajectories: endpoint URL',
} as const;

export const COLLECT_LABELS = {
  configTeacher: 'Teacher from the run config',
  modelDir: 'Hugging Face model directory…',
  endpoint: 'OpenAI-compatible endpoint…',
  openCollection: 'Open Collection',
  openReport: 'Open Report',
} as const;

/** The teacher a run config names (collect.teacher.url or .path), for the pick's description; null: none. */
export function configTeacher(config: Record<string, unknown> | null): string | null {
  const teacher = (config?.collect as { teacher?: { url?: unknown; path?: unknown } } | undefined)?.teacher;
  if (typeof teacher?.url === 'string' && teacher.url) return teacher.url;
  if (typeof teacher?.path === 'string' && teacher.path) return teacher.path;
  return null;
}

/** Why `url` is not an endpoint base URL (null: fine). The trainer probes it for real before sampling. */
export function endpointUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return 'not a URL (e.g. http://127.0.0.1:8000/v1)';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'an http:// or https:// URL';
  return null;
}

/** The files a finished collection leaves in its run directory (coa_trainer collect, stages/collect/). */
export function collectionFiles(runDir: string): {
  collection: string;
  selected: string;
  report: string;
  reportJson: string;
} {
  const dir = join(runDir, 'stages', 'collect');
  return {
    collection: join(dir, 'collection.coa.jsonl'),
    selected: join(dir, 'selected.coa.jsonl'),
    report: join(dir, 'report.md'),
    reportJson: join(dir, 'report.json'),
  };
}

/** "collected N, kept K" from the collection's report.json; null when it is not there. */
export function collectionSummary(runDir: string): string | null {
  const path = collectionFiles(runDir).reportJson;
  if (!existsSync(path)) return null;
  try {
    const r = JSON.parse(readFileSync(path, 'utf8')) as {
      collected: number;
      kept: number;
      failed_samples?: number;
      pairs?: { pairs?: number };
    };
    return `collected ${r.collected} trajectories, kept ${r.kept}, ${r.pairs?.pairs ?? 0} SFT-1 pairs${r.failed_samples ? `, ${r.failed_samples} failed at the teacher (resume to collect them)` : ''}`;
  } catch {
    return null;
  }
}
