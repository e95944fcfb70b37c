// Trajectory records in all four dialects (right, wrong, malformed) for the grader tests.
import type { TrajectoryRecord } from '../../../src/core/record';

export const RECORDS: TrajectoryRecord[] = [
  {
    id: 'c1',
    question: 'What is the capital of France?',
    golden_answers: ['Paris'],
    dialect: 'coa',
    response:
      '<think>I should search.</think>\n<search>capital of France</search>\n<observation>Paris is the capital of France.</observation>\n<think>Found it.</think>\n<answer>Paris</answer>',
  },
  {
    id: 's1',
    question: 'What is the capital of France?',
    golden_answers: ['Paris'],
    dialect: 'search-r1',
    response:
      '<think>search</think>\n<search>france capital</search>\n<information>Doc 1(Title: "France") Paris is the capital.\n</information>\n<think>again</think>\n<search>paris</search>\n<information>Doc 1(Title: "Paris") Paris.\n</information>\n<answer>Paris</answer>',
  },
  {
    id: 'a1',
    question: 'Who wrote Hamlet?',
    golden_answers: ['William Shakespeare', 'Shakespeare'],
    dialect: 'autocoa',
    response:
      'Let me look.\n<begin_search>Hamlet author</end_search>\n\n<search_result> Hamlet is a tragedy by William Shakespeare. </search_result>\n\nSo it is Shakespeare.</think>\n\n\\boxed{Shakespeare}',
  },
  {
    id: 'h1',
    question: 'Who wrote Hamlet?',
    golden_answers: ['Shakespeare'],
    dialect: 'hermes',
    response:
      '<think>look up</think>\n<tool_call>{"name": "search", "arguments": {"query": "Hamlet author"}}</tool_call>\n<tool_response>Hamlet ... Shakespeare</tool_response>\n<answer>Christopher Marlowe</answer>',
  },
  {
    id: 'x1',
    question: 'What is the capital of France?',
    golden_answers: ['Paris'],
    dialect: 'coa',
    response: '<think>no answer tag',
  },
];

/** A correct coa answer to `question` after `calls` searches. */
export function correctAfter(id: string, question: string, calls: number): TrajectoryRecord {
  let response = '';
  for (let i = 0; i < calls; i++)
    response += `<think>step ${i}</think>\n<search>q${i}</search>\n<observation>r${i}</observation>\n`;
  return {
    id,
    question,
    golden_answers: ['Paris'],
    dialect: 'coa',
    response: `${response}<think>done</think>\n<answer>Paris</answer>`,
  };
}
