import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, levelFromEnv, type JsonLogger } from '../../shared/observability/log.ts';

/** The JSON lines `log` writes, through `write`. */
function linesOf(log: (logger: JsonLogger) => void, options: Parameters<typeof createLogger>[0] = {}): Record<string, unknown>[] {
  const written: string[] = [];
  log(createLogger({ component: 'test', ...options, write: (line) => written.push(line) }));
  return written.map((line) => JSON.parse(line) as Record<string, unknown>);
}

test('log: one JSON object per line with level, message, component and fields', () => {
  const [line] = linesOf((l) => l.info('prompt admitted', { threadId: 'slack:C1:1', admission: 'started' }));
  assert.equal(line!.level, 'INFO');
  assert.equal(line!.message, 'prompt admitted');
  assert.equal(line!.component, 'test');
  assert.equal(line!.threadId, 'slack:C1:1');
  assert.equal(line!.admission, 'started');
  assert.ok(typeof line!.timestamp === 'string');
});

test('log: errors keep their stack and cause', () => {
  const cause = Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
  const [line] = linesOf((l) => l.error('admission failed', { error: new Error('could not admit', { cause }) }));
  const error = line!.error as { name: string; message: string; stack: string; cause: { name: string; message: string; stack: string } };
  assert.equal(error.message, 'could not admit');
  assert.match(error.stack, /could not admit\n\s+at /);
  assert.equal(error.cause.name, 'ThrottlingException');
  assert.match(error.cause.stack, /throttled/);
});

test('log: secret-looking keys are redacted at any depth, token counts are not', () => {
  const [line] = linesOf((l) =>
    l.info('config', { botToken: 'xoxb-1', usage: { inputTokens: 12 }, deep: { a: { b: { c: { d: { signingSecret: 's' } } } } } }),
  );
  assert.equal(line!.botToken, '[redacted]');
  assert.deepEqual(line!.usage, { inputTokens: 12 });
  assert.deepEqual(line!.deep, { a: { b: { c: { d: { signingSecret: '[redacted]' } } } } });
});

test('log: child and with add the component path and correlation keys; the parent is unchanged', () => {
  const lines = linesOf((l) => {
    l.child('slack').with({ runId: 'run-1' }).warn('rate limited');
    l.info('plain');
  });
  assert.equal(lines[0]!.component, 'test.slack');
  assert.equal(lines[0]!.runId, 'run-1');
  assert.equal(lines[1]!.component, 'test');
  assert.equal(lines[1]!.runId, undefined);
});

test('log: the level filters, silent writes nothing; LOG_LEVEL or POWERTOOLS_LOG_LEVEL in any case', () => {
  assert.deepEqual(
    linesOf(
      (l) => {
        l.debug('no');
        l.info('no');
        l.warn('yes');
      },
      { level: 'warn' },
    ).map((line) => line.message),
    ['yes'],
  );
  assert.deepEqual(
    linesOf((l) => l.error('no'), { level: 'silent' }),
    [],
  );
  assert.equal(levelFromEnv({ LOG_LEVEL: 'SILENT' }), 'silent');
  assert.equal(levelFromEnv({ LOG_LEVEL: 'debug', POWERTOOLS_LOG_LEVEL: 'ERROR' }), 'error');
  assert.equal(levelFromEnv({ LOG_LEVEL: 'loud' }), 'info');
  assert.equal(levelFromEnv({}), 'info');
});

test('log: without write, lines go to stdout, where Lambda collects them', () => {
  const written: string[] = [];
  const streams = [process.stdout, process.stderr];
  const saved = streams.map((s) => s.write);
  for (const s of streams) s.write = ((chunk: string) => written.push(String(chunk)) > 0) as typeof s.write;
  try {
    createLogger({ component: 'test' }).info('to stdout', { botToken: 'xoxb-1' });
  } finally {
    streams.forEach((s, i) => (s.write = saved[i]!));
  }
  assert.equal(written.length, 1);
  assert.deepEqual(
    (({ message, component, botToken }) => ({ message, component, botToken }))(JSON.parse(written[0]!) as Record<string, unknown>),
    { message: 'to stdout', component: 'test', botToken: '[redacted]' },
  );
});
