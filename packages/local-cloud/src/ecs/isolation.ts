// Isolating a local sandbox task the way Fargate isolates it. Each task's command server runs inside
// bubblewrap (bwrap) with a root of its own: the system's programs and libraries read-only, a few
// files of /etc, a private /tmp, and the task's own work directory at /workspace (the paths a
// Fargate task has, so `pwd` prints /workspace/...). Not there: the host's home directories, other
// tasks' directories, the rest of the host's files, the host's processes (a PID namespace), and,
// unless LOCAL_SANDBOX=egress, any network (a network namespace with only its own loopback). The
// whole server goes in, not only the commands it runs, so everything else matches Fargate too: one
// sandbox per task, /tmp and background processes last as long as the task, and killing the task
// kills every process in it (the PID namespace dies with its first process).
//
// bwrap is called directly rather than through a general sandboxing library: those keep the host's
// paths (they allow or deny host paths, and cannot show a task's directory at /workspace) and route
// the network through proxies of their own, where a task here needs no network at all.
//
// Without a network the server cannot listen on the task's address; it listens on a Unix socket
// in a directory bound into the sandbox, and socket-proxy.ts forwards the task's address to it.
// Commands run as the server's user, so while that directory is there they could replace the
// socket, for instance with a link the forward would follow on the host. Once the server has bound
// it, the stand-in moves the socket to a host path outside the sandbox (a bound socket keeps
// answering wherever its file is renamed to) and removes the directory: /run/sandbox is left
// empty, and nothing can be created in a removed directory. The root is read-only, as the task's
// is (readonlyRootFilesystem), so commands cannot write there either; in the image /run/sandbox
// is root's (containers/sandbox/Dockerfile).
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readlinkSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/** The LOCAL_SANDBOX setting. */
export const LOCAL_SANDBOX_SETTINGS = ['isolated', 'egress', 'unsafe'] as const;
export type LocalSandboxSetting = (typeof LOCAL_SANDBOX_SETTINGS)[number];

/** How the local ECS runs a task's server. */
export type LocalIsolation =
  /** In bubblewrap; `shareNetwork`: with the host's network (LOCAL_SANDBOX=egress). */
  | { mode: 'bubblewrap'; bwrap: string; shareNetwork: boolean }
  /** As a plain process of the developer's user (LOCAL_SANDBOX=unsafe; the stand-in's own tests). */
  | { mode: 'process' }
  /** Isolation was asked for and this machine cannot give it: RunTask refuses, saying why. */
  | { mode: 'unavailable'; reason: string };

/** RunTask while isolation is unavailable: the task is refused, with the reason as the failure's detail. */
export class IsolationUnavailable extends Error {}

/** Where things are inside the sandbox: the image's paths (containers/sandbox/Dockerfile). */
export const SANDBOX_PATHS = {
  workspace: '/workspace',
  home: '/workspace/home',
  node: '/opt/sandbox/bin/node',
  server: '/opt/sandbox/server.mjs',
  socketDir: '/run/sandbox',
  socket: '/run/sandbox/server.sock',
  path: '/opt/sandbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
} as const;

/** The image's user (uid and gid 1000, "sandbox"); its files in the host's work directory belong to the developer. */
const SANDBOX_UID = '1000';

// Top-level directories of programs and libraries. A symlink (merged /usr) is recreated as one.
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
// What programs read from /etc (the loader, name resolution, certificates, time zone, shells).
// The rest of the host's /etc stays out: it names the host's users and holds services' secrets.
const HOST_ETC = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'gai.conf',
  'host.conf',
  'hosts',
  'inputrc',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'mime.types',
  'nsswitch.conf',
  'profile',
  'resolv.conf',
  'ssl',
  'timezone',
];

/** A task's files outside its workspace: its server's socket and its /etc/passwd and /etc/group. */
export interface TaskRunDir {
  /** Shown at /run/sandbox until the server has bound its socket there; then removed. */
  socketDir: string;
  /** Where the server's socket is moved to, out of the sandbox's reach: what the forward connects to. */
  socket: string;
  passwd: string;
  group: string;
}

/** Creates the run directory of a task (removed with the task). */
export function createRunDir(runDir: string): TaskRunDir {
  const socketDir = join(runDir, 'socket');
  mkdirSync(socketDir, { recursive: true });
  const socket = join(runDir, basename(SANDBOX_PATHS.socket));
  // The image's user, so that tools asking who they are get an answer; the host's users stay out.
  const passwd = join(runDir, 'passwd');
  const group = join(runDir, 'group');
  writeFileSync(passwd, `sandbox:x:${SANDBOX_UID}:${SANDBOX_UID}::${SANDBOX_PATHS.home}:/bin/bash\n`);
  writeFileSync(group, `sandbox:x:${SANDBOX_UID}:\n`);
  return { socketDir, socket, passwd, group };
}

export interface SandboxedCommand {
  /** The host directory shown at /workspace, read-write. */
  workspace: string;
  run: TaskRunDir;
  /** The Node.js binary and the server bundle, shown read-only at the image's paths. */
  node: string;
  server: string;
  shareNetwork: boolean;
}

/** bwrap's arguments to run the command server of one task. */
export function bubblewrapArgs(task: SandboxedCommand): string[] {
  const args = [
    // User, PID, network, IPC, UTS and cgroup namespaces of its own.
    '--unshare-all',
    ...(task.shareNetwork ? ['--share-net'] : []),
    // Ending the bwrap process (StopTask, a dying stand-in) ends everything inside.
    '--die-with-parent',
    '--uid',
    SANDBOX_UID,
    '--gid',
    SANDBOX_UID,
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
  ];
  for (const dir of SYSTEM_DIRS) args.push(...systemDir(dir));
  for (const name of HOST_ETC) if (exists(`/etc/${name}`)) args.push('--ro-bind', `/etc/${name}`, `/etc/${name}`);
  args.push(
    '--ro-bind',
    task.run.passwd,
    '/etc/passwd',
    '--ro-bind',
    task.run.group,
    '/etc/group',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--bind',
    task.workspace,
    SANDBOX_PATHS.workspace,
    '--bind',
    task.run.socketDir,
    SANDBOX_PATHS.socketDir,
    '--ro-bind',
    task.node,
    SANDBOX_PATHS.node,
    '--ro-bind',
    task.server,
    SANDBOX_PATHS.server,
    // Last: the mounts above keep their own modes, the root's own directories (/run...) are read-only.
    '--remount-ro',
    '/',
    '--chdir',
    SANDBOX_PATHS.workspace,
    '--',
    SANDBOX_PATHS.node,
    SANDBOX_PATHS.server,
  );
  return args;
}

/**
 * Once the server has bound its socket in the task's socket directory: moves the socket out of
 * the sandbox's reach and removes the directory. True when done (now or before); false while the
 * server has not bound it yet. Throws if the directory holds anything else.
 */
export function takeServerSocket(run: TaskRunDir): boolean {
  if (exists(run.socket)) return true;
  const bound = join(run.socketDir, basename(SANDBOX_PATHS.socket));
  try {
    if (!lstatSync(bound).isSocket()) throw new Error(`${bound} is not a socket`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  renameSync(bound, run.socket);
  rmdirSync(run.socketDir);
  return true;
}

function systemDir(dir: string): string[] {
  try {
    const stats = lstatSync(dir);
    if (stats.isSymbolicLink()) return ['--symlink', readlinkSync(dir), dir];
    return stats.isDirectory() ? ['--ro-bind', dir, dir] : [];
  } catch {
    return [];
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a trivial program in the sandbox a task would get; undefined when that works, else why
 * not (bwrap missing, no user namespaces in this container, ...).
 */
export function probeBubblewrap(bwrap: string, shareNetwork: boolean): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'bwrap-probe-'));
  try {
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace);
    const server = join(dir, 'server.mjs');
    writeFileSync(server, '');
    const args = bubblewrapArgs({ workspace, run: createRunDir(join(dir, 'run')), node: process.execPath, server, shareNetwork });
    // The server's own command line, with a check that the workspace is writable in place of the server.
    args.splice(args.indexOf('--') + 1, 2, '/bin/sh', '-c', `touch ${SANDBOX_PATHS.workspace}/probe && ${SANDBOX_PATHS.node} -e 0`);
    const result = spawnSync(bwrap, args, { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'ignore', 'pipe'] });
    if (result.error) {
      const code = (result.error as NodeJS.ErrnoException).code;
      return code === 'ENOENT' ? `${bwrap} not found` : `${bwrap} could not run: ${result.error.message}`;
    }
    if (result.status !== 0) return `${bwrap} failed (${result.stderr.trim() || `exit ${result.status ?? result.signal}`})`;
    if (!exists(join(workspace, 'probe'))) return `${bwrap} ran, but the workspace was not writable inside`;
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What a LOCAL_SANDBOX setting comes to on this machine. */
export function chooseIsolation(setting: LocalSandboxSetting, bwrap = 'bwrap'): LocalIsolation {
  if (setting === 'unsafe') return { mode: 'process' };
  const shareNetwork = setting === 'egress';
  const failure = probeBubblewrap(bwrap, shareNetwork);
  if (failure === undefined) return { mode: 'bubblewrap', bwrap, shareNetwork };
  return {
    mode: 'unavailable',
    reason:
      `the local sandbox cannot isolate commands on this machine: ${failure}. ` +
      'Install bubblewrap (Linux), or set LOCAL_SANDBOX=unsafe to run them as plain processes with your own access to this machine',
  };
}
