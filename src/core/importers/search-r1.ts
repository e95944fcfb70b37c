// Search-R1 chat-template transcripts (`<|im_start|>role … <|im_end|>`, several per file) → records.
// The assistant part is the response: in Search-R1 the environment writes <information> into that same turn.
import type { TrajectoryRecord } from '../record';
import { extractQuestion } from './verl-parquet';

interface Message {
  role: string;
  content: string;
}

const MESSAGE_RE = /<\|im_start\|>(\w+)\n?([\s\S]*?)(?=<\|im_end\|>|<\|im_start\|>|$)/g;
const TRAILING_SPECIAL = /(\s*<\|(?:im_end|endoftext)\|>)+\s*$/;

export function parseChatTranscript(text: string): Message[] {
  const out: Message[] = [];
  MESSAGE_RE.lastIndex = 0;
  for (let m = MESSAGE_RE.exec(text); m; m = MESSAGE_RE.exec(text)) {
    if (m[0].length === 0) {
      MESSAGE_RE.lastIndex++;
      continue;
    }
    out.push({ role: m[1], content: m[2] });
  }
  return out;
}

/** Split into episodes: a new one starts at a system/user message that follows an assistant message. */
export function importSearchR1Transcripts(text: string, idPrefix = 'search-r1'): TrajectoryRecord[] {
  const messages = parseChatTranscript(text);
  const episodes: Message[][] = [];
  let current: Message[] = [];
  for (const msg of messages) {
    const afterAssistant = current.some((m) => m.role === 'assistant');
    if (afterAssistant && (msg.role === 'user' || msg.role === 'system')) {
      episodes.push(current);
      current = [];
    }
    current.push(msg);
  }
  if (current.length) episodes.push(current);
  return episodes
    .filter((ep) => ep.some((m) => m.role === 'user'))
    .map((ep, i) => {
      const user = ep.filter((m) => m.role === 'user').pop()!;
      const response = ep
        .filter((m) => m.role === 'assistant')
        .map((m) => m.content)
        .join('')
        .replace(TRAILING_SPECIAL, '');
      return {
        id: `${idPrefix}-${i + 1}`,
        question: extractQuestion(user.content),
        response,
        dialect: 'search-r1' as const,
      };
    });
}
