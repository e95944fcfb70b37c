// Public surface of the trajectory core.
export * from './dialects';
export * from './record';
export * from './codes';
export * from './scanner';
export * from './rules';
export * from './answer';
export * from './rewards';
export * from './jsonl';
export * from './events';
export * from './stats';
export { importVerlParquet, extractQuestion, goldenAnswers } from './importers/verl-parquet';
export { importSearchR1Transcripts } from './importers/search-r1';
export { conversationToRecord } from './importers/openai';
export * from './stages';
export * from './names';
