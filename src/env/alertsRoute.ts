// POST /v1/alerts: the core's agent alerts (src/core/alerts.ts) for clients in other languages — the trainer's RL
// stages and the TRL callback send one step's metric values with the monitor state they keep, and get back the
// alerts that start at this step and the new state. Stateless on the server: the state lives in the client (and in
// its checkpoints), so a restarted server changes nothing.
import { z } from 'zod';
import { AlertMonitor, AlertThresholdsSchema } from '../core/alerts';
import { HttpError } from './http';
import { describeIssues, type AlertsResponse } from './protocol';

export const AlertsRequestSchema = z
  .object({
    thresholds: AlertThresholdsSchema.partial().default({}),
    state: z.unknown().optional(),
    step: z.number().int().nonnegative(),
    values: z.record(z.string(), z.unknown()),
    /** A held-out EM measured at this step (before the values are added). */
    heldout: z.number().optional(),
  })
  .strict();

export function alertsStep(body: unknown): AlertsResponse {
  const r = AlertsRequestSchema.safeParse(body);
  if (!r.success) {
    const { message, path } = describeIssues(r.error);
    throw new HttpError('invalid_request', message, path);
  }
  let monitor: AlertMonitor;
  try {
    monitor = new AlertMonitor(r.data.thresholds, r.data.state ?? undefined);
  } catch (e) {
    if (e instanceof z.ZodError) {
      const { message, path } = describeIssues(e);
      throw new HttpError('invalid_request', `state: ${message}`, path ? `state.${path}` : 'state');
    }
    throw e;
  }
  if (r.data.heldout !== undefined) monitor.observeHeldout(r.data.heldout);
  const alerts = monitor.update(r.data.step, r.data.values);
  return { alerts, state: monitor.toJSON() };
}
