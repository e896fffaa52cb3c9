// `npm run settings -- <command>`: settings.json in the data bucket, checked with the same schema and
// the same messages as the functions, against the local stack (npm start) or a deployed one (--stack).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { openLocalStack } from '../../packages/local-cloud/src/stack-file.ts';
import { isS3NotFound, isS3PreconditionFailed } from '../../shared/aws/errors.ts';
import { ROOT_KEYS } from '../../shared/ids.ts';
import { createLogger } from '../../shared/observability/log.ts';
import { parseSettingsText } from '../../shared/settings/load.ts';
import { loadDotEnv, parseCommandLine } from '../../shared/support/cli-args.ts';
import { openStack } from '../ops/stack.ts';

const USAGE = `usage: npm run settings -- <command> [--stack NAME] [--region REGION]
commands:
  show           print settings.json as it is in the data bucket, then what is wrong with it, if anything
  validate FILE  check FILE as the functions would read it: "valid", or each problem (exit 1)
  put FILE       check FILE, then upload it as settings.json; an invalid file is not uploaded (exit 1)
  edit           open settings.json in $EDITOR (vi), check it, upload it when it is valid
Without --stack, the commands act on the local stack that npm start wrote to .local/stack.json.
A file that changed in the bucket since it was read is not overwritten (S3 If-Match).`;

loadDotEnv();
const { values, positionals } = parseCommandLine('settings', USAGE, {
  allowPositionals: true,
  options: { stack: { type: 'string' }, region: { type: 'string' } },
});
const [command, ...rest] = positionals;
const fail = (message: string, code = 2): never => {
  console.error(message);
  process.exit(code);
};

/** "valid", or the problems, in the functions' words. */
function check(text: string): string[] {
  return parseSettingsText(text).problems;
}

function readLocalFile(path: string | undefined): string {
  if (!path) return fail(`${command} takes a file\n${USAGE}`);
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    return fail(`cannot read ${path}: ${(error as Error).message}`);
  }
}

if (!command) fail('a command is missing (npm run settings -- --help lists them)');
if (command === 'validate') {
  const problems = check(readLocalFile(rest[0]));
  if (problems.length) fail(problems.join('\n'), 1);
  console.log(`${rest[0]}: valid`);
  process.exit(0);
}
if (!['show', 'put', 'edit'].includes(command!)) fail(`unknown command ${JSON.stringify(command)}\n${USAGE}`);

const target = values.stack === undefined ? await openLocalStack() : { stackName: values.stack, env: {} };
Object.assign(process.env, target.env);
const logger = createLogger({ level: 'warn', component: 'settings', write: (line) => process.stderr.write(`${line}\n`) });
const stack = await openStack(target.stackName, { region: values.region }, logger).catch((error: Error) => fail(error.message));
const { s3, bucket } = stack.store;
const where = `s3://${bucket}/${ROOT_KEYS.settings}`;

async function current(): Promise<{ text: string | undefined; etag?: string }> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: ROOT_KEYS.settings }));
    return { text: await out.Body!.transformToString('utf8'), ...(out.ETag ? { etag: out.ETag } : {}) };
  } catch (error) {
    if (isS3NotFound(error)) return { text: undefined };
    throw error;
  }
}

async function upload(text: string, etag: string | undefined): Promise<void> {
  const problems = check(text);
  if (problems.length) fail(`not uploaded, settings.json would be invalid:\n${problems.join('\n')}`, 1);
  try {
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: ROOT_KEYS.settings,
        Body: text,
        ContentType: 'application/json',
        ...(etag ? { IfMatch: etag } : { IfNoneMatch: '*' }),
      }),
    );
  } catch (error) {
    if (isS3PreconditionFailed(error)) fail(`not uploaded: ${where} changed since it was read; run the command again`, 1);
    throw error;
  }
  console.log(`uploaded ${where}: valid; new runs use it (running ones keep what they began with)`);
}

try {
  const read = await current();
  if (command === 'show') {
    console.log(read.text ?? `(no ${where}: every setting has its default)`);
    const problems = read.text === undefined ? [] : check(read.text);
    if (problems.length)
      fail(`\nproblems (the functions use the defaults instead, and for access let nobody in):\n${problems.join('\n')}`, 1);
  } else if (command === 'put') {
    await upload(readLocalFile(rest[0]), read.etag);
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'settings-'));
    const file = join(dir, 'settings.json');
    writeFileSync(file, read.text ?? '{\n}\n');
    try {
      const editor = process.env.VISUAL || process.env.EDITOR || 'vi';
      const edited = spawnSync(editor, [file], { stdio: 'inherit', shell: process.platform === 'win32' });
      if (edited.status !== 0) fail(`${editor} ended with ${edited.status ?? edited.signal}: nothing uploaded`);
      const text = readFileSync(file, 'utf8');
      if (text === read.text) console.log('unchanged: nothing uploaded');
      else await upload(text, read.etag);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  stack.destroy();
}
