// Where a given response leaves the agent loop (a fork's prefix, fork.ts): how many actions it made, whether it ends
// with an action still waiting for its observation, whether it already answered — read with the core's scanner, the
// same reading the format rules and the reward make. Independent of VS Code.
import { actionQuery, scan } from '../core/scanner';
import { isDialectName } from '../core/dialects';

export interface GivenResponse {
  /** The text fed to the model (the prefix as given). */
  text: string;
  /** Actions in it: the model turns it holds (each action ends a turn). */
  actions: number;
  /** The query of a last action that has no observation after it yet (the fork starts with its observation). */
  query: string | null;
  /** It already holds a closed answer: nothing is left to generate. */
  answered: boolean;
}

export function continueFrom(prefix: string, dialect: string): GivenResponse {
  const { segments } = scan(prefix, { dialect: isDialectName(dialect) ? dialect : 'auto' });
  const steps = segments.filter((s) => s.kind !== 'text' || prefix.slice(s.start, s.end).trim() !== '');
  const last = steps.at(-1);
  const actions = steps.filter((s) => s.kind === 'action').length;
  const closed = (s: typeof last) => !!s && s.close !== null;
  return {
    text: prefix,
    actions,
    query: last?.kind === 'action' && closed(last) ? actionQuery(last) : null,
    answered: last?.kind === 'answer' && closed(last),
  };
}
