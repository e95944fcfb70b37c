// Builds the Lucene side of bench/search: Lucene's jars from Maven Central (versions pinned in
// bench/search/lucene/pom.xml) copied by `mvn dependency:copy-dependencies`, and LuceneBench.java
// compiled with javac, all into the git-ignored bench/.work/lucene. Returns null, with the reason, when
// the machine has no JDK or Maven (the benchmark then runs without Lucene and says so).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SRC = join(__dirname, 'lucene');
const WORK = join(__dirname, '..', '.work', 'lucene');

export interface LuceneHarness {
  java: string;
  classpath: string;
  version: string;
  javaVersion: string;
}

function which(cmd: string): string | null {
  const r = spawnSync('which', [cmd], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function buildLucene(): LuceneHarness | { skipped: string } {
  const java = which('java');
  const javac = which('javac');
  const mvn = which('mvn');
  const missing = [!java && 'java', !javac && 'javac', !mvn && 'mvn'].filter(Boolean);
  if (missing.length > 0) return { skipped: `no ${missing.join(', ')} on PATH (needs a JDK 17+ and Maven)` };
  const version = /<lucene\.version>([^<]+)</.exec(readFileSync(join(SRC, 'pom.xml'), 'utf8'))![1];
  const lib = join(WORK, `lib-${version}`);
  const classes = join(WORK, 'classes');
  mkdirSync(WORK, { recursive: true });
  if (!existsSync(join(lib, `lucene-core-${version}.jar`))) {
    const r = spawnSync(
      mvn!,
      ['-q', '-B', '-f', join(SRC, 'pom.xml'), 'dependency:copy-dependencies', `-DoutputDirectory=${lib}`],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    if (r.status !== 0)
      return {
        skipped: `mvn could not fetch Lucene ${version} from Maven Central: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`,
      };
  }
  const source = join(SRC, 'LuceneBench.java');
  const cls = join(classes, 'LuceneBench.class');
  const classpath = `${classes}:${join(lib, '*')}`;
  if (!existsSync(cls) || statSync(cls).mtimeMs < statSync(source).mtimeMs || readdirSync(lib).length === 0) {
    mkdirSync(classes, { recursive: true });
    const r = spawnSync(javac!, ['-cp', join(lib, '*'), '-d', classes, source], { encoding: 'utf8' });
    if (r.status !== 0) return { skipped: `javac failed: ${r.stderr.trim().split('\n').slice(0, 3).join(' | ')}` };
  }
  const jv = spawnSync(java!, ['-version'], { encoding: 'utf8' });
  const javaVersion = (/version "([^"]+)"/.exec(jv.stderr) ?? [])[1] ?? 'unknown';
  return { java: java!, classpath, version, javaVersion };
}
