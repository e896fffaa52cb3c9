// The command lines of the project's npm scripts (start, chat, ops, doctor, bench, teams:package):
// `--help` (or `-h`) prints the script's usage, and a wrong option or value is one line that says
// how to get the usage, never a stack trace.
import { existsSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type CommandLine<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** True when the arguments ask for help (tokens after a `--` terminator are not options). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** node's parse error in one line: its first sentence (the rest explains `--` terminators). */
export function usageErrorLine(error: unknown, script: string): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split(/(?<=\.) /)[0]!.replace(/\.$/, '');
  return `${first} (npm run ${script} -- --help lists the options)`;
}

/**
 * Parses `config.args` (default: this process's arguments) for the npm script `script`. `--help`
 * prints `usage` and exits 0; a parse error prints one line and exits 2.
 */
export function parseCommandLine<T extends ParseArgsConfig>(script: string, usage: string, config: T): CommandLine<T> {
  if (asksForHelp(config.args ?? process.argv.slice(2))) {
    console.log(usage);
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (error) {
    console.error(usageErrorLine(error, script));
    process.exit(2);
  }
}

/**
 * The local scripts' settings from `.env` in the directory they run from (npm runs them from the
 * checkout): what the environment already sets wins. `.env.example` lists the variables.
 */
export function loadDotEnv(path = '.env'): void {
  if (existsSync(path)) process.loadEnvFile(path);
}
