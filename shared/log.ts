// Structured JSON logs (one object per line, CloudWatch-friendly), also usable as the Chat SDK's
// logger. Values under secret-looking keys are redacted before anything is written.
import type { Logger } from 'chat';

export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level | 'silent', number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };
// Ends in 'token' (botToken, token) but not token counts (inputTokens); the usual secret words anywhere.
const SECRET_KEY = /token$|secret|password|authorization|signature|cookie|credential/i;

export interface JsonLogger extends Logger {
  child(prefix: string): JsonLogger;
  with(fields: Record<string, unknown>): JsonLogger;
}

function redact(value: unknown, depth = 0): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? '[redacted]' : redact(v, depth + 1)]));
}

export function createLogger(
  options: { level?: Level | 'silent'; fields?: Record<string, unknown>; write?: (line: string) => void } = {},
): JsonLogger {
  const min = ORDER[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const base = options.fields ?? {};
  const emit = (level: Level, message: string, args: unknown[]) => {
    if (ORDER[level] < min) return;
    const extra =
      args.length === 1 && args[0] && typeof args[0] === 'object' && !(args[0] instanceof Error)
        ? (args[0] as Record<string, unknown>)
        : args.length
          ? { args }
          : {};
    write(JSON.stringify(redact({ level, time: new Date().toISOString(), message, ...base, ...extra })));
  };
  const make = (fields: Record<string, unknown>): JsonLogger =>
    createLogger({ level: options.level, write, fields: { ...base, ...fields } });
  return {
    debug: (m, ...a) => emit('debug', m, a),
    info: (m, ...a) => emit('info', m, a),
    warn: (m, ...a) => emit('warn', m, a),
    error: (m, ...a) => emit('error', m, a),
    child: (prefix) => make({ component: base.component ? `${String(base.component)}.${prefix}` : prefix }),
    with: (fields) => make(fields),
  };
}

export function levelFromEnv(env: Record<string, string | undefined>): Level | 'silent' {
  const level = env.LOG_LEVEL?.toLowerCase();
  return level && level in ORDER ? (level as Level | 'silent') : 'info';
}
