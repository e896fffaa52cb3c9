// npm run bench: figures and ratios for the runtime on the local cloud. Nothing here asserts a
// timing: machines are shared and noisy, so read the numbers relative to each other (HTTP vs direct,
// whole path vs model call) and to the platform's budgets (Slack's 3 s ack, Lambda's size limits).
//
//   BENCH_ACKS   signed Slack requests per ack series (default 300)
//   BENCH_STEPS  conversations measured end to end (default 30)
//   BENCH_LOG_LEVEL  the handlers' log level (default silent)
import { clients } from '../shared/aws.ts';
import { startTestStack, type TestStack } from '../test/support/local-stack.ts';
import { measureAcks, type AckResult, type AckSeries } from './ack.ts';
import { installAwsCallCounter, PHASES } from './aws-calls.ts';
import { measureBundles, LAMBDA_UNZIPPED_LIMIT, LAMBDA_ZIPPED_LIMIT, type BundleResult } from './bundles.ts';
import { countOneRun, type CallsResult } from './calls.ts';
import { stopWatching } from './quiet.ts';
import { loadMention } from './slack-events.ts';
import { measureSteps, type StepResult } from './steps.ts';
import { bytes, elapsed, ms, note, percent, ratio, section, table } from './stats.ts';

const SLACK_ACK_BUDGET_MS = 3000;

function positiveInt(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

const config = {
  acks: positiveInt('BENCH_ACKS', 300),
  steps: positiveInt('BENCH_STEPS', 30),
  logLevel: process.env.BENCH_LOG_LEVEL ?? 'silent',
};

async function startStack(): Promise<TestStack> {
  // The recorded mention names its own bot and user: the Slack stand-in plays that workspace.
  const fixture = loadMention();
  const stack = await startTestStack({ botUserId: fixture.botUserId, env: { LOG_LEVEL: config.logLevel } });
  const user = String(fixture.mention.event.user);
  stack.slack.users.set(user, { id: user, name: 'fixture-user', real_name: 'Fixture User', is_bot: false });
  // Zero-latency model: a short answer, no delay between stream events.
  stack.bedrock.setDefault(() => ({ text: 'Done.' }));
  return stack;
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

function printAcks(result: AckResult): void {
  const { isolatedHttp: http, isolatedDirect: direct, burstHttp: burst } = result;
  section(`1. Ingress ack latency (${http.stats.n} signed event_callback mentions per series, a new thread each, one request at a time)`);
  const row = (s: AckSeries) => [s.label, ms(s.stats.p50), ms(s.stats.p90), ms(s.stats.p99), ms(s.stats.max), s.non2xx];
  console.log(table(['path', 'p50', 'p90', 'p99', 'max', 'non-2xx'], [http, direct, burst].map(row)));
  console.log();
  console.log(`  HTTP overhead, isolated (p50 HTTP − p50 direct): ${ms(http.stats.p50 - direct.stats.p50)}  (HTTP/direct p50 ${ratio(http.stats.p50 / direct.stats.p50)})`);
  console.log(`  Runs overlapping the acks (back-to-back vs isolated HTTP): p50 ${ratio(burst.stats.p50 / http.stats.p50)}, p99 ${ratio(burst.stats.p99 / http.stats.p99)}`);
  console.log(`  Slack's ack budget is ${SLACK_ACK_BUDGET_MS} ms. p99 uses ${percent(http.stats.p99 / SLACK_ACK_BUDGET_MS)} of it isolated, ` +
    `${percent(burst.stats.p99 / SLACK_ACK_BUDGET_MS)} back-to-back (max ${percent(burst.stats.max / SLACK_ACK_BUDGET_MS)})`);
  console.log(`  First webhook call of the process (cold Chat SDK; Slack calls: ${result.coldSlackCalls.join(', ') || 'none'}): ` +
    `${ms(result.coldMs)} = ${percent(result.coldMs / SLACK_ACK_BUDGET_MS)} of the budget`);
  console.log(`  After the last back-to-back ack, the runs still going drained in ${ms(burst.drainMs)}.`);
  note('isolated = the next request waits for the previous mention\'s run to end; back-to-back = it does not, so runs compete with acks for the CPU.');
  note('the HTTP client (fetch) runs in the same process as the stand-ins, so "HTTP overhead" includes the client\'s own CPU time.');
  note('the cold figure has no Lambda init (module load) in it: the handlers were imported when the local cloud started.');
}

function printSteps(result: StepResult): void {
  section(`2. Orchestration overhead per model step (${result.n} sequential conversations, Bedrock fake answering at once)`);
  const rows = [
    ['whole path: post → run ended (reply done, thread idle)', result.wholePath],
    ['post → reply complete in Slack', result.replyVisible],
    ...result.phases.map((p) => [`  ${p.name}`, p.stats] as const),
    ['direct ConverseStream call to the fake (same request)', result.direct],
    ['Model state − direct call (paired): the step\'s own work', result.modelStepExtra],
  ] as const;
  console.log(table(['measure', 'p50', 'p90', 'max'], rows.map(([name, s]) => [name, ms(s.p50), ms(s.p90), ms(s.max)])));
  const overhead = result.wholePath.p50 - result.direct.p50;
  console.log();
  console.log(`  per model step: whole path p50 ${ms(result.wholePath.p50)}, p90 ${ms(result.wholePath.p90)}; direct model call p50 ${ms(result.direct.p50)}`);
  console.log(`  orchestration overhead (p50 whole path − p50 direct): ${ms(overhead)}; whole path / direct call = ${ratio(result.wholePath.p50 / result.direct.p50)}`);
  note('phases overlap slightly: the run can start before the second delivery (app_mention) is acked.');
  note('a real model takes seconds per step, so the overhead is what matters here, not the ratio.');
}

function printCalls(result: CallsResult): void {
  section('3. API calls per run (prepare + 1 model step + finish), by the function that made them');
  const header = ['service', 'operation', ...PHASES.map((p) => (p === 'model' ? 'model step' : p)), 'total'];
  const rows = [...result.aws].map(([key, counts]) => {
    const [service, operation] = key.split('\t');
    return [service!, operation!, ...PHASES.map((p) => counts[p]), PHASES.reduce((sum, p) => sum + counts[p], 0)];
  });
  const totals = PHASES.map((p) => [...result.aws.values()].reduce((sum, c) => sum + c[p], 0));
  rows.push(['all AWS', '', ...totals, totals.reduce((a, b) => a + b, 0)]);
  console.log(table(header, rows));
  console.log();
  const byService = new Map<string, number>();
  for (const [key, counts] of result.aws) {
    const service = key.split('\t')[0]!;
    byService.set(service, (byService.get(service) ?? 0) + PHASES.reduce((sum, p) => sum + counts[p], 0));
  }
  for (const service of ['DynamoDB', 'S3', 'SQS', 'Step Functions', 'Bedrock Runtime', 'Secrets Manager']) {
    if (!byService.has(service)) byService.set(service, 0);
  }
  console.log(`  per run, by service: ${[...byService].map(([s, n]) => `${s} ${n}`).join(', ')}`);
  const modelStep = [...result.aws.values()].reduce((sum, c) => sum + c.model, 0);
  console.log(`  per model step (Model state only): ${modelStep} AWS calls; the fake saw ${result.bedrockRequestsSeen} Bedrock request(s)`);
  const slackRows = [...result.slack].map(([method, counts]) => [method, ...PHASES.map((p) => counts[p]), PHASES.reduce((s, p) => s + counts[p], 0)]);
  console.log();
  console.log(table(['Slack Web API', ...header.slice(2)], slackRows));
  console.log();
  const lambdas = Object.entries(result.lambdaInvocations).map(([fn, n]) => `${fn} ${n}`).join(', ');
  console.log(`  Lambda invocations: ${lambdas}; Step Functions state transitions: ${result.stateTransitions}`);
  const platform = [...result.platform].map(([op, n]) => `${op} ${n}`).join(', ') || 'none';
  console.log(`  event source mapping (AWS-side, not the code's): SQS ${platform}`);
  note(`counted at the SDK (deserialize step: every HTTP attempt); ${result.placedByTime} call(s) whose stack named no function were placed by time.`);
  note('webhook = both deliveries (message + app_mention) of one mention. Secrets Manager is 0 locally (credentials come from the environment);');
  note('in AWS each cold container of webhook and agent-step reads the Slack secret once. ReceiveMessage counts depend on long-poll timing.');
}

function printBundles(results: BundleResult[]): void {
  section('4. Lambda bundle sizes (esbuild as the CDK construct runs it: ESM, node22, minified, linked source map, AWS SDK bundled)');
  const rows = results.map((r) => [
    r.role,
    r.entry,
    bytes(r.codeBytes),
    bytes(r.codeGzip),
    bytes(r.mapBytes),
    bytes(r.zipped),
    percent(r.zipped / LAMBDA_ZIPPED_LIMIT),
    percent(r.unzipped / LAMBDA_UNZIPPED_LIMIT),
    ms(r.buildMs),
  ]);
  console.log(table(['function', 'entry', 'index.mjs', 'gzip', '.map', 'asset gz', 'of 50 MB zip', 'of 250 MB unzip', 'build'], rows));
  console.log();
  console.log('  exact bytes (index.mjs / gzip): ' + results.map((r) => `${r.role} ${r.codeBytes} / ${r.codeGzip}`).join(', '));
  console.log('  what index.mjs is made of (minified bytes):');
  for (const r of results) {
    const c = r.composition;
    const others = c.largest.map((p) => `${p.name} ${bytes(p.bytes)}`).join(', ');
    console.log(`    ${r.role}: AWS SDK ${bytes(c.awsSdk)} (${c.sdkClients.join(', ')}); ${others}; project code ${bytes(c.project)}` +
      (r.warnings ? `; ${r.warnings} esbuild warning(s)` : ''));
  }
  note('"asset gz" = gzip of index.mjs + gzip of index.mjs.map, close to the zip CDK uploads; the unzipped ratio counts both files.');
}

function printSummary(acks: AckResult, steps: StepResult, calls: CallsResult, bundles: BundleResult[]): void {
  section('Summary');
  const awsTotal = [...calls.aws.values()].reduce((sum, c) => sum + PHASES.reduce((s, p) => s + c[p], 0), 0);
  const modelStep = [...calls.aws.values()].reduce((sum, c) => sum + c.model, 0);
  const slackTotal = [...calls.slack.values()].reduce((sum, c) => sum + PHASES.reduce((s, p) => s + c[p], 0), 0);
  const largest = bundles.reduce((a, b) => (b.unzipped > a.unzipped ? b : a));
  console.log(
    table(
      ['measure', 'value', 'relative to'],
      [
        ['ack p50 / p99, HTTP isolated', `${ms(acks.isolatedHttp.stats.p50)} / ${ms(acks.isolatedHttp.stats.p99)}`, `p99 = ${percent(acks.isolatedHttp.stats.p99 / SLACK_ACK_BUDGET_MS)} of Slack's 3 s`],
        ['ack p50 / p99, handler direct', `${ms(acks.isolatedDirect.stats.p50)} / ${ms(acks.isolatedDirect.stats.p99)}`, `HTTP/direct p50 ${ratio(acks.isolatedHttp.stats.p50 / acks.isolatedDirect.stats.p50)}`],
        ['ack p50 / p99, HTTP back-to-back', `${ms(acks.burstHttp.stats.p50)} / ${ms(acks.burstHttp.stats.p99)}`, `p99 = ${percent(acks.burstHttp.stats.p99 / SLACK_ACK_BUDGET_MS)} of Slack's 3 s`],
        ['ack, first call (cold)', ms(acks.coldMs), `${percent(acks.coldMs / SLACK_ACK_BUDGET_MS)} of Slack's 3 s`],
        ['whole path per model step p50 / p90', `${ms(steps.wholePath.p50)} / ${ms(steps.wholePath.p90)}`, `${ratio(steps.wholePath.p50 / steps.direct.p50)} the direct model call`],
        ['direct model call p50', ms(steps.direct.p50), 'Bedrock fake, zero latency'],
        ['orchestration overhead per step p50', ms(steps.wholePath.p50 - steps.direct.p50), 'whole path − direct call'],
        ['AWS calls per run / per model step', `${awsTotal} / ${modelStep}`, 'warm; see section 3 by service'],
        ['Slack Web API calls per run', String(slackTotal), 'warm'],
        [`largest bundle (${largest.role})`, `${bytes(largest.codeBytes)} (${bytes(largest.zipped)} gz)`, `${percent(largest.zipped / LAMBDA_ZIPPED_LIMIT)} of 50 MB, ${percent(largest.unzipped / LAMBDA_UNZIPPED_LIMIT)} of 250 MB`],
      ],
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function stopEverything(stack: TestStack | undefined): Promise<void> {
  if (!stack) return;
  stopWatching(stack);
  await stack.stop();
  // The handlers' SDK clients keep sockets to the (now closed) emulators; close them too.
  for (const make of Object.values(clients)) make().destroy();
}

async function main(): Promise<void> {
  const started = performance.now();
  // `npm run bench | head` closes stdout early: keep going, so the emulators are still stopped.
  process.stdout.on('error', () => {});
  console.log(`threadwork bench — node ${process.version}, ${process.platform}/${process.arch}; BENCH_ACKS=${config.acks}, BENCH_STEPS=${config.steps}`);
  console.log('Figures, not assertions: the machine is shared and noisy; compare ratios rather than absolute times.');
  let stack: TestStack | undefined;
  process.once('SIGINT', () => void stopEverything(stack).finally(() => process.exit(130)));
  let acks: AckResult, steps: StepResult, calls: CallsResult;
  try {
    stack = await startStack();
    console.log(`[${elapsed(started)}] local cloud up (DynamoDB Local, fauxqs, Step Functions, Slack and Bedrock stand-ins)`);
    const counter = installAwsCallCounter(stack);
    acks = await measureAcks(stack, config.acks);
    console.log(`[${elapsed(started)}] acks measured`);
    steps = await measureSteps(stack, config.steps);
    console.log(`[${elapsed(started)}] conversations measured`);
    calls = await countOneRun(stack, counter);
    console.log(`[${elapsed(started)}] calls counted`);
    if (stack.errors.length) console.log(`  (${stack.errors.length} error(s) reported by the local cloud, first: ${String(stack.errors[0]?.error)})`);
  } finally {
    await stopEverything(stack);
  }
  const bundles = await measureBundles();
  console.log(`[${elapsed(started)}] bundles built`);
  printAcks(acks);
  printSteps(steps);
  printCalls(calls);
  printBundles(bundles);
  printSummary(acks, steps, calls, bundles);
  console.log(`\nbench finished in ${elapsed(started)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
