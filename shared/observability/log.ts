// Structured JSON logs, one object per line, through Powertools for AWS Lambda's Logger: errors keep
// their stack and cause, correlation ids ride on child loggers (`with`), and LOG_LEVEL (or
// POWERTOOLS_LOG_LEVEL) sets the level. Also the Chat SDK's logger. Values under secret-looking keys
// are redacted, at any depth, before anything is written.
import { Logger, type LogItem } from '@aws-lambda-powertools/logger';
import type { Logger as ChatLogger } from 'chat';
import { redactSecrets } from '../policy/secret-filter.ts';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'critical', 'silent'] as const;
export type Level = (typeof LEVELS)[number];

// Ends in 'token' (botToken, token) but not token counts (inputTokens); the usual secret words anywhere.
const SECRET_KEY = /token$|secret|password|authorization|signature|cookie|credential/i;

export interface JsonLogger extends ChatLogger {
  /** A logger for a part of this one: its lines say `component: parent.prefix`. */
  child(prefix: string): JsonLogger;
  /** This logger with these keys on every line: correlation ids (runId, threadId, ...). */
  with(keys: Record<string, unknown>): JsonLogger;
}

type Extra = Parameters<Logger['info']> extends [unknown, ...infer Rest] ? Rest : never;
type LoggerOptions = NonNullable<ConstructorParameters<typeof Logger>[0]>;

/** Powertools' Logger, with its lines going to `write` (a test's capture) instead of stdout/stderr. */
class LineLogger extends Logger {
  readonly #write: (line: string) => void;

  constructor(options: LoggerOptions, write: (line: string) => void) {
    super(options);
    this.#write = write;
  }

  // Children (createChild) are made here, so they write to the same place.
  protected override createLogger(options: LoggerOptions = {}): Logger {
    return new LineLogger(options, this.#write);
  }

  protected override printLog(_level: number, log: LogItem): void {
    log.prepareForPrint();
    this.#write(JSON.stringify(log.getAttributes(), this.getJsonReplacer()));
  }
}

function wrap(logger: Logger, component: string | undefined): JsonLogger {
  return {
    debug: (message, ...args) => logger.debug(message, ...(args as Extra)),
    info: (message, ...args) => logger.info(message, ...(args as Extra)),
    warn: (message, ...args) => logger.warn(message, ...(args as Extra)),
    error: (message, ...args) => logger.error(message, ...(args as Extra)),
    child: (prefix) => {
      const name = component ? `${component}.${prefix}` : prefix;
      return wrap(logger.createChild({ persistentKeys: { component: name } }), name);
    },
    with: (keys) => wrap(logger.createChild({ persistentKeys: keys }), component),
  };
}

export function createLogger(options: { level?: Level; component?: string; write?: (line: string) => void } = {}): JsonLogger {
  const settings: LoggerOptions = {
    serviceName: 'threadwork',
    logLevel: (options.level ?? 'info').toUpperCase() as Uppercase<Level>,
    persistentKeys: options.component ? { component: options.component } : {},
    jsonReplacerFn: (key, value) => (SECRET_KEY.test(key) ? '[redacted]' : typeof value === 'string' ? redactSecrets(value) : value),
  };
  return wrap(options.write ? new LineLogger(settings, options.write) : new Logger(settings), options.component);
}

/** POWERTOOLS_LOG_LEVEL, else LOG_LEVEL, in any case; 'info' when unset or unknown (logging never fails a handler). */
export function levelFromEnv(env: Record<string, string | undefined>): Level {
  const level = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL)?.toLowerCase();
  return LEVELS.find((l) => l === level) ?? 'info';
}
