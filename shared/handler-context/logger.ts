// Wiring for the Lambda handlers, one module per part so that a function's bundle carries only the
// parts (and the AWS clients and the Chat SDK behind them) its handler imports. Configuration comes
// from the handler's environment schema (shared/env.ts), clients from the standard chain; core
// logic receives these as arguments.
import { createLogger, levelFromEnv, type JsonLogger } from '../observability/log.ts';

export function handlerLogger(component: string, env = process.env): JsonLogger {
  return createLogger({ level: levelFromEnv(env), component });
}
