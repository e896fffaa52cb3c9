import { startTestStack } from '../test/support/local-stack.ts';
import { clients } from '../shared/aws.ts';
const t0 = Date.now();
const stack = await startTestStack();
console.log('stack up in', Date.now() - t0);
Error.stackTraceLimit = 80;
const seen: unknown[] = [];
for (const [name, make] of Object.entries(clients)) {
  const c = make() as { middlewareStack: { add: (...a: unknown[]) => void } };
  c.middlewareStack.add((next: (a: unknown) => Promise<unknown>, ctx: Record<string, unknown>) => async (args: unknown) => {
    const frames = (new Error().stack ?? '').split('\n').filter((l) => /functions\/|shared\//.test(l)).map((l) => l.trim().replace(/\(.*\/main\//, '('));
    seen.push({ name, client: ctx.clientName, cmd: ctx.commandName, frames });
    return next(args);
  }, { step: 'deserialize', name: 'probe' });
}
stack.bedrock.setDefault(() => ({ text: 'ok' }));
const t1 = Date.now();
const posted = await stack.slack.postUserMessage({ text: '<@U0LOCALBOT> hi' });
console.log('ack', Date.now() - t1, posted.deliveries.map((d) => d.ms));
await stack.slack.waitFor(() => stack.slack.messages.thread(posted.channel, posted.threadTs).find((m) => m.bot_id && m.local.stream?.state === 'stopped'), 10000);
console.log('reply', Date.now() - t1);
await new Promise((r) => setTimeout(r, 1500));
const ex = [...stack.cloud.stepFunctions.executions.values()];
console.log(JSON.stringify(ex.map((e) => ({ s: e.startDate.getTime() - t1, e: (e.stopDate?.getTime() ?? 0) - t1, h: e.history.map((h) => [h.name, h.enteredAt - t1]) }))));
console.log(JSON.stringify(seen, null, 1));
console.log(stack.slack.calls.map((c) => c.method));
console.log(stack.errors);
await stack.stop();
console.log('stopped');
