// Taking a secret out of this process's environment, including the copy the kernel shows.
//
// `delete process.env.X` stops child processes from inheriting X, but /proc/<pid>/environ still
// shows the environment the process was started with: the kernel reads it straight from the
// strings on the initial stack, which unsetenv() leaves in place. Commands run as the same user as
// the server, so any of them could read /proc/<server pid>/environ. We therefore also overwrite
// those bytes through /proc/self/mem (always allowed for a process's own memory; no capability
// needed). Nothing references them after the delete: the C library's environ array no longer
// points at the entry, and Node reads variables through getenv().
//
// Best effort: on a system without /proc, or a kernel that forbids writes through /proc/self/mem,
// only the delete happens and the caller is told so it can log it.
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';

/**
 * The server's token: from the pipe on the file descriptor named by SANDBOX_TOKEN_FD (how the
 * container's entrypoint.sh passes it), else from SANDBOX_TOKEN. Either way, nothing of it is left
 * in the environment afterwards. `wiped` is false if SANDBOX_TOKEN was set but its start-up copy
 * in /proc/self/environ could not be overwritten.
 */
export function takeToken(): { token: string | undefined; wiped: boolean } {
  const fromEnv = takeSecretFromEnv('SANDBOX_TOKEN');
  const fdName = process.env.SANDBOX_TOKEN_FD;
  delete process.env.SANDBOX_TOKEN_FD;
  if (!fdName) return { token: fromEnv.value, wiped: fromEnv.wiped };
  const fd = Number(fdName);
  if (!Number.isInteger(fd) || fd < 3) throw new Error(`SANDBOX_TOKEN_FD must be a file descriptor above 2: ${fdName}`);
  try {
    return { token: readFileSync(fd, 'utf8').trim(), wiped: fromEnv.wiped };
  } finally {
    // Closed, so that no command inherits it.
    closeSync(fd);
  }
}

/**
 * Reads `name`, removes it from the environment and wipes it from the start-up copy.
 * Returns the value (undefined if unset) and whether the start-up copy was wiped.
 */
export function takeSecretFromEnv(name: string): { value: string | undefined; wiped: boolean } {
  const value = process.env[name];
  if (value === undefined) return { value, wiped: true };
  delete process.env[name];
  return { value, wiped: wipeStartupEnv(name) };
}

function wipeStartupEnv(name: string): boolean {
  let fd: number | undefined;
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name; env_start and env_end are fields 50 and 51 (proc(5)).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(rest[50 - 3]);
    const end = Number(rest[51 - 3]);
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start) return false;
    fd = openSync('/proc/self/mem', 'r+');
    const block = Buffer.alloc(end - start);
    readSync(fd, block, 0, block.length, start);
    const prefix = Buffer.from(`${name}=`);
    let wiped = false;
    // Entries are NUL-terminated "NAME=value" strings laid end to end.
    for (let at = 0; at < block.length;) {
      let next = block.indexOf(0, at);
      if (next < 0) next = block.length;
      if (block.subarray(at, at + prefix.length).equals(prefix)) {
        writeSync(fd, Buffer.alloc(next - at), 0, next - at, start + at);
        wiped = true;
      }
      at = next + 1;
    }
    return wiped;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
