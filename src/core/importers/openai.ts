// OpenAI-style chat messages with tool_calls → Hermes-dialect records. One conversation per JSONL line:
// `{"messages": [...], "id"?, "golden_answers"?}` or a bare array of messages.
import type { TrajectoryRecord } from '../record';

type Msg = { role?: string; content?: unknown; tool_calls?: { function?: { name?: string; arguments?: unknown } }[] };

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : ''))
      .join('');
  return '';
}

function args(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw ?? {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // kept verbatim: the format checker will flag it (COA010)
  }
}

export function conversationToRecord(value: unknown, index: number): TrajectoryRecord {
  const obj = (Array.isArray(value) ? { messages: value } : value) as {
    messages?: Msg[];
    id?: unknown;
    golden_answers?: unknown;
  };
  if (!obj || !Array.isArray(obj.messages)) throw new Error('expected {"messages": [...]} or an array of messages');
  const messages = obj.messages;
  const firstUser = messages.findIndex((m) => m?.role === 'user');
  if (firstUser < 0) throw new Error('no user message');
  const parts: string[] = [];
  const rest = messages.slice(firstUser + 1);
  rest.forEach((m, i) => {
    const body = text(m.content);
    if (m.role === 'assistant') {
      const calls = m.tool_calls ?? [];
      const isFinal = calls.length === 0 && !rest.slice(i + 1).some((n) => n.role === 'assistant');
      if (calls.length) {
        if (body.trim()) parts.push(body.includes('<think>') ? body : `<think>${body}</think>`);
        for (const c of calls)
          parts.push(
            `<tool_call>${JSON.stringify({ name: c.function?.name ?? '', arguments: args(c.function?.arguments) })}</tool_call>`,
          );
      } else if (isFinal) {
        parts.push(body.includes('<answer>') ? body : `<answer>${body}</answer>`);
      } else {
        parts.push(body);
      }
    } else if (m.role === 'tool') {
      parts.push(`<tool_response>${body}</tool_response>`);
    }
  });
  const golden = Array.isArray(obj.golden_answers) ? obj.golden_answers.map(String) : undefined;
  return {
    id: typeof obj.id === 'string' ? obj.id : `openai-${index + 1}`,
    question: text(messages[firstUser].content),
    ...(golden ? { golden_answers: golden } : {}),
    response: parts.join('\n'),
    dialect: 'hermes',
  };
}
