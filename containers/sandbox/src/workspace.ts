// Paths and files inside the workspace.
//
// The path checks keep a caller (and the model choosing paths through it) from reading or writing
// outside the workspace by mistake or by prompt injection. They are not a boundary against the
// commands themselves: those run as the same user and can touch anything the server can, so the
// small window between checking a path and using it (a command could swap a directory for a
// symlink) gives nothing away. In Fargate the task is the boundary; see README.md.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** An error with the HTTP status and JSON body to answer with. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface WorkspacePath {
  /** Absolute path to use on disk, under the workspace's real path. */
  abs: string;
  /** Path relative to the workspace with '/' separators; '' for the workspace itself. */
  rel: string;
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function inside(root: string, path: string): string | null {
  const rel = relative(root, path);
  if (rel === '') return '';
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return null;
  return rel;
}

/**
 * Resolves a caller's path (relative to the workspace, or absolute inside it) and checks that
 * neither its text nor its symlinks lead outside. Paths that do not exist yet are checked through
 * their nearest existing ancestor, so PUT can create them.
 */
export async function resolveInWorkspace(root: string, realRoot: string, given: string): Promise<WorkspacePath> {
  const escapes = () => new HttpError(400, `path escapes the workspace: ${given}`);
  if (given.includes('\0')) throw new HttpError(400, 'path contains a NUL byte');
  // An absolute path may name the workspace as configured or by its real path (e.g. /tmp is a
  // symlink on macOS); both mean the same place.
  const candidate = isAbsolute(given) ? resolve(given) : resolve(root, given);
  const rel = inside(root, candidate) ?? inside(realRoot, candidate);
  if (rel === null) throw escapes();
  const abs = join(realRoot, rel);
  // Walk up to the nearest existing ancestor and check where it really is. A dangling symlink
  // counts as missing: reads through it fail, and a write replaces the link rather than following.
  let probe = abs;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (inside(realRoot, real) === null) throw escapes();
      break;
    } catch (error) {
      if (error instanceof HttpError) throw error;
      const code = errorCode(error);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      if (probe === realRoot) break;
      probe = dirname(probe);
    }
  }
  return { abs, rel: rel.split(sep).join('/') };
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function statOrNull(path: string): Promise<Stats | null> {
  try {
    return await stat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
    throw error;
  }
}

/** GET /files: the whole file in memory, so the hash in the header matches the bytes sent. */
export async function readWorkspaceFile(path: WorkspacePath, given: string, maxBytes: number): Promise<{ data: Buffer; sha256: string }> {
  const info = await statOrNull(path.abs);
  if (!info) throw new HttpError(404, `no such file: ${given}`);
  if (!info.isFile()) throw new HttpError(400, `not a regular file: ${given}`);
  if (info.size > maxBytes) {
    throw new HttpError(413, `file is ${info.size} bytes, over the ${describeBytes(maxBytes)} transfer limit: ${given}`);
  }
  const data = await readFile(path.abs);
  return { data, sha256: sha256(data) };
}

// Writes to one path are serialized so that two PUTs with the same x-if-sha256 cannot both pass
// the check. (Commands writing the same file at the same time are not covered; nothing could be.)
const writeQueues = new Map<string, Promise<unknown>>();

function serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = writeQueues.get(key) ?? Promise.resolve();
  const next = previous.then(work, work);
  const settled = next.catch(() => undefined);
  writeQueues.set(key, settled);
  void settled.then(() => {
    if (writeQueues.get(key) === settled) writeQueues.delete(key);
  });
  return next;
}

/**
 * PUT /files: temp file in the same directory, then rename, so readers (and the manifest) see the
 * old bytes or the new ones, never a mix. No fsync: the task is ephemeral, and only the visibility
 * of the write matters, not surviving a crash. An existing file's mode is kept, so a script stays
 * executable after an edit.
 */
export async function writeWorkspaceFile(
  path: WorkspacePath,
  given: string,
  data: Buffer,
  ifSha256: string | undefined,
): Promise<{ path: string; size: number; sha256: string }> {
  if (path.rel === '') throw new HttpError(400, `not a regular file: ${given}`);
  return serialized(path.abs, async () => {
    const existing = await statOrNull(path.abs);
    if (existing && !existing.isFile()) throw new HttpError(400, `not a regular file: ${given}`);
    if (ifSha256 !== undefined) {
      const current = existing ? await sha256File(path.abs) : null;
      const wanted = ifSha256 === 'absent' ? null : ifSha256;
      if (current !== wanted) throw new HttpError(412, 'file changed', { sha256: current });
    }
    const dir = dirname(path.abs);
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      if (errorCode(error) === 'EEXIST' || errorCode(error) === 'ENOTDIR') {
        throw new HttpError(400, `a parent of the path is not a directory: ${given}`);
      }
      throw error;
    }
    const temp = join(dir, `.${basename(path.abs)}.${randomBytes(6).toString('hex')}.sandbox-tmp`);
    try {
      await writeFile(temp, data, { flag: 'wx' });
      if (existing) await chmod(temp, existing.mode & 0o7777);
      await rename(temp, path.abs);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    return { path: path.rel, size: data.length, sha256: sha256(data) };
  });
}

/** DELETE /files: removes a file or symlink (never what a symlink points to). */
export async function deleteWorkspaceFile(path: WorkspacePath, given: string): Promise<{ deleted: boolean }> {
  let info: Stats;
  try {
    info = await lstat(path.abs);
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return { deleted: false };
    throw error;
  }
  if (info.isDirectory()) throw new HttpError(400, `is a directory: ${given}`);
  return serialized(path.abs, async () => {
    try {
      await unlink(path.abs);
      return { deleted: true };
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return { deleted: false };
      throw error;
    }
  });
}

export interface ManifestEntry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

interface CachedHash {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  sha256: string;
}

/**
 * GET /manifest. The caller asks after every command to find what changed, so hashing every file
 * every time would be slow on a big workspace (node_modules, .git). Hashes are cached by path and
 * reused while size, mtime, ctime and inode are unchanged; ctime cannot be set back by a command,
 * so a same-size rewrite with a restored mtime is still noticed.
 */
export class Manifest {
  private readonly cache = new Map<string, CachedHash>();

  constructor(private readonly realRoot: string) {}

  async list(start: WorkspacePath, limit: number): Promise<{ files: Record<string, ManifestEntry>; truncated: boolean }> {
    const files: Record<string, ManifestEntry> = {};
    const seen = new Set<string>();
    let count = 0;
    let truncated = false;

    const addFile = async (abs: string, rel: string): Promise<void> => {
      let info: Stats;
      try {
        info = await stat(abs);
      } catch {
        return; // Deleted while we walked (a command may be running).
      }
      const cached = this.cache.get(abs);
      let hash: string;
      if (
        cached &&
        cached.size === info.size &&
        cached.mtimeMs === info.mtimeMs &&
        cached.ctimeMs === info.ctimeMs &&
        cached.ino === info.ino
      ) {
        hash = cached.sha256;
      } else {
        try {
          hash = await sha256File(abs);
        } catch {
          return; // Unreadable or gone.
        }
        this.cache.set(abs, { size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, ino: info.ino, sha256: hash });
      }
      seen.add(abs);
      files[rel] = { size: info.size, mtimeMs: info.mtimeMs, sha256: hash };
      count++;
    };

    const walk = async (abs: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(abs, { withFileTypes: true });
      } catch {
        return;
      }
      // Sorted, so a truncated listing is the same prefix every time.
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        if (count >= limit) {
          truncated = true;
          return;
        }
        const childAbs = join(abs, entry.name);
        const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
        // Symlinks are skipped (a link is not content to sync, and may point anywhere); so are
        // sockets, FIFOs and devices, which cannot be hashed by reading.
        if (entry.isDirectory()) await walk(childAbs, childRel);
        else if (entry.isFile()) await addFile(childAbs, childRel);
        if (truncated) return;
      }
    };

    let top: Stats | null = null;
    try {
      top = await lstat(start.abs);
    } catch {
      // A prefix that does not exist lists nothing.
    }
    if (top?.isDirectory()) await walk(start.abs, start.rel);
    else if (top?.isFile()) await addFile(start.abs, start.rel);

    // Forget hashes of files under the listed directory that are gone.
    if (!truncated) {
      const under = start.abs === this.realRoot ? this.realRoot : start.abs + sep;
      for (const key of this.cache.keys()) {
        if ((key === start.abs || key.startsWith(under)) && !seen.has(key)) this.cache.delete(key);
      }
    }
    return { files, truncated };
  }
}

/** "64 MiB" for whole mebibytes, else a byte count: used in limit messages. */
export function describeBytes(bytes: number): string {
  const mib = 1024 * 1024;
  return bytes >= mib && bytes % mib === 0 ? `${bytes / mib} MiB` : `${bytes} bytes`;
}
