// A malformed LSP frame (a bad Content-Length) is an error: the reader fires it, the stdio server prints one line
// and exits 1, rather than stopping reading and staying alive, silent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { contentLength, FrameError, StrictFrameReader } from '../../../src/server/frameReader';
import { ensureBuilt, LspClient } from './lsp-client';

const frame = (body: string) => {
  const bytes = Buffer.from(body, 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${bytes.length}\r\n\r\n`), bytes]);
};

/** A reader on a stream the test writes to, with what it delivered and the errors it fired. */
function reading() {
  const input = new PassThrough();
  const reader = new StrictFrameReader(input);
  const got: unknown[] = [];
  const errors: Error[] = [];
  reader.listen((m) => got.push(m));
  reader.onError((e) => errors.push(e));
  return { input, got, errors };
}

test('frames split anywhere, several per chunk and multi-byte text all arrive whole and in order', () => {
  const { input, got, errors } = reading();
  const messages = [
    { jsonrpc: '2.0', id: 1, method: 'a' },
    { jsonrpc: '2.0', method: 'b', params: { text: 'héllo — 日本 🎉' } },
    { jsonrpc: '2.0', id: 2, result: null },
  ];
  const bytes = Buffer.concat([
    ...messages.map((m) => frame(JSON.stringify(m))),
    Buffer.from('Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n'),
    frame('{"jsonrpc":"2.0","method":"c"}'),
  ]);
  // One byte at a time (a UTF-8 character and the header's blank line split over chunks), then all at once.
  for (const b of bytes) input.write(Buffer.from([b]));
  input.write(bytes);
  assert.deepEqual(errors, []);
  const want = [...messages, { jsonrpc: '2.0', method: 'c' }];
  assert.deepEqual(got, [...want, ...want]);
});

test('a bad Content-Length, a missing one, a foreign charset or a header line without a colon is a FrameError', () => {
  assert.equal(contentLength('Content-Length: 42'), 42);
  assert.equal(contentLength('content-length:7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8'), 7);
  const bad: [string, RegExp][] = [
    ['Content-Length: abc', /Content-Length "abc" is not a number of bytes/],
    ['Content-Length: 12abc', /Content-Length "12abc" is not a number of bytes/],
    ['Content-Length: -5', /is not a number of bytes/],
    ['Content-Length: ', /is not a number of bytes/],
    ['Content-Length: 99999999999', /exceeds the \d+-byte limit/],
    ['Content-Type: application/json', /no Content-Length header/],
    ['Content-Length: 2\r\nContent-Type: text/plain; charset=latin1', /unsupported LSP Content-Type/],
    ['Content-Length 5', /malformed LSP header line/],
  ];
  for (const [header, message] of bad)
    assert.throws(
      () => contentLength(header),
      (e: Error) => e instanceof FrameError && message.test(e.message),
      header,
    );
});

test('the reader stops at the first bad frame (a body that is not JSON, not UTF-8, a header without end) and says so once', () => {
  for (const [bytes, message] of [
    [
      Buffer.concat([frame('{"jsonrpc":"2.0","method":"ok"}'), Buffer.from('Content-Length: 5\r\n\r\n{oops')]),
      /body is not JSON/,
    ],
    [Buffer.concat([Buffer.from('Content-Length: 3\r\n\r\n'), Buffer.from([0x22, 0xff, 0x22])]), /not valid UTF-8/],
    [Buffer.from('X'.repeat(9000)), /no end of header/],
    [Buffer.from('Content-Length: 2\r\n\r\n[]'), /not a JSON-RPC object/],
  ] as const) {
    const { input, got, errors } = reading();
    input.write(bytes);
    input.write(frame('{"jsonrpc":"2.0","method":"after"}'));
    assert.equal(errors.length, 1, String(message));
    assert.match(errors[0].message, message);
    assert.ok(!got.some((m) => (m as { method?: string }).method === 'after'), 'nothing is read after a bad frame');
  }
});

test('stdio server: a bad Content-Length is one line on stderr and exit 1, not a silent live process', {
  timeout: 30_000,
}, async (t) => {
  ensureBuilt();
  const c = new LspClient({});
  t.after(() => c.proc.exitCode === null && c.proc.kill('SIGKILL'));
  await c.initialize();
  const exited = once(c.proc, 'exit');
  c.proc.stdin.write('Content-Length: abc\r\n\r\n{"jsonrpc":"2.0","id":99,"method":"shutdown"}');
  const [code] = await exited;
  assert.equal(code, 1);
  assert.match(
    c.stderr,
    /^coa language server: malformed LSP frame: Content-Length "abc" is not a number of bytes; exiting\n$/m,
  );
});
