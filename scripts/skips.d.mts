// Types of skips.mjs for the TypeScript tests (the script itself runs under plain node).
export interface Skip {
  test: string;
  reason: string;
  /** pytest: the test's file as the JUnit report names it. */
  file?: string;
}
export interface AllowedSkip {
  suite: string;
  test: string;
  reason: string;
  file?: string;
}
export declare const ALLOWLIST: string;
export declare function underCI(env?: Record<string, string | undefined>): boolean;
export declare function tapSkips(text: string): Skip[];
export declare function junitSkips(xml: string): Skip[];
export declare function readAllowList(file?: string): AllowedSkip[];
export declare function allowedBy(allow: AllowedSkip[], suite: string, skip: Skip): AllowedSkip | undefined;
