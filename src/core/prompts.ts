// The instruction each dialect's agent is prompted with — one table, read by the trainer through
// schemas/prompts.json (scripts/gen-schemas.ts), so the editor, the CLI and the trainer never hold a second copy.
// `system` is the system turn (null: none; the chat template may add its own default), `user` the user turn with
// `{question}` where the question goes. A run config overrides either with `model.system_prompt` /
// `model.user_prompt`. With a chat template the trainer renders [system?, user] with add_generation_prompt; a base
// model without one gets `prompt_template` instead (the embedded default's form).
import type { DialectName } from './dialects';

export interface DialectPrompt {
  system: string | null;
  user: string;
  /**
   * The user turn of chain-of-thought collection (`coa_trainer collect`, mode `cot`): the same answer format, no
   * tool — AutoCoA sampled its teacher with a CoT prompt beside the CoA one and mixed both into SFT.
   */
  cot: string;
}

export const DIALECT_PROMPTS: Record<DialectName, DialectPrompt> = {
  coa: {
    system: null,
    user:
      'Answer the question. Think inside <think> and </think>. To look something up, write <search> query </search>; ' +
      'the results come back inside <observation> and </observation>. Search as often as you need, and not when you ' +
      'already know. Give the final answer inside <answer> and </answer>, for example <answer> Paris </answer>.\n' +
      'Question: {question}\n',
    cot:
      'Answer the question. Think inside <think> and </think>, without any tool: answer from what you know. ' +
      'Give the final answer inside <answer> and </answer>, for example <answer> Paris </answer>.\n' +
      'Question: {question}\n',
  },
  // Search-R1's training instruction (Jin et al. 2025, Apache-2.0), as its data scripts put it in the user turn.
  'search-r1': {
    system: null,
    user:
      'Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get ' +
      'new information. After reasoning, if you find you lack some knowledge, you can call a search engine by ' +
      '<search> query </search> and it will return the top searched results between <information> and ' +
      '</information>. You can search as many times as your want. If you find no further external knowledge ' +
      'needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. ' +
      'For example, <answer> Beijing </answer>. Question: {question}\n',
    cot:
      'Answer the given question. You must conduct reasoning inside <think> and </think> first. Then provide the ' +
      'answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. ' +
      'Question: {question}\n',
  },
  // AutoCoA's instruction as in its RL data (examples/data/autocoa/hotpotqa_train.parquet, MIT).
  autocoa: {
    system: null,
    user:
      'You are an intelligent reasoning assistant with access to a web search tool to help you obtain accurate ' +
      "information. When answering the user's questions, please adhere to the following guidelines:\n\n" +
      '1. **Uncertainty Handling:**  \n' +
      '   - Encourage the use of web search to solve the problems mentioned during reasoning. \n' +
      '   - If you are uncertain or do not have sufficient knowledge about a specific detail, you **must** perform a web search. \n' +
      '   - To perform a web search the format **must** be in the format mentioned in point 2 Web Search Format\n' +
      '   - You can perform multiple web searches to ensure that the answer is correct.\n' +
      '   - The web search should be initiated only within your internal reasoning (the "thinking" phase), and it ' +
      'should not appear in your final answer to the user.\n\n' +
      '2. **Web Search Format:**  \n' +
      '   - When calling the web search tool, use the following exact format:\n' +
      '     ```\n     <begin_search> your query here </end_search>\n     ```\n' +
      '   - After you perform a web search, you will receive results enclosed in:\n' +
      '     ```\n     <search_result> ... </search_result>\n     ```\n' +
      '   - You can then use this information to further refine your reasoning and answer.\n\n' +
      '3. **Process:**  \n' +
      '   - If you encounter any uncertainty or unknown knowledge, embed a web search query within your internal ' +
      'thoughts (surrounded by `<think></think>` tags) using the specified format.\n' +
      '   - Incorporate the search results into your reasoning before finalizing your answer.\n' +
      '   - You should provide your final answer in the format \\boxed{YOUR_ANSWER}. \n\n' +
      "Now, please answer the user's question below: \n{question}\n\n",
    cot:
      'You are an intelligent reasoning assistant. Think step by step inside <think></think>, then give your final ' +
      "answer in the format \\boxed{YOUR_ANSWER}.\n\nNow, please answer the user's question below: \n{question}\n\n",
  },
  hermes: {
    system:
      'You are a helpful assistant with a search tool. To call it, write <tool_call>{"name": "search", ' +
      '"arguments": {"query": "..."}}</tool_call>; the result comes back inside <tool_response> and ' +
      '</tool_response>. Think inside <think> and </think>, and give the final answer inside <answer> and </answer>.',
    user: '{question}',
    cot: '{question}\nAnswer without tools: think inside <think> and </think>, then give the final answer inside <answer> and </answer>.',
  },
};
