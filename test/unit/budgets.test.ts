import assert from 'node:assert/strict';
import { test } from 'node:test';
import { budgetSchema, budgetsFor, spendSubjectOf, worstCaseUsd, type Budget } from '../../shared/policy/budgets.ts';

const NOW = new Date('2026-11-24T13:00:00Z');
const person = spendSubjectOf('slack:C0123:1700000000.000100', { author: { userId: 'U0456', userName: 'ada' } });
const scheduled = spendSubjectOf('slack:C0123:1700000000.000100', { author: { userId: 'event', userName: 'event events/x.json' } });
const budget = (b: Partial<Budget>): Budget => budgetSchema.parse({ scope: 'deployment', period: 'day', usd: 5, ...b });

test('which budgets apply to a run, with the counter each one uses and what a person is told', () => {
  const applied = budgetsFor(
    [
      budget({}),
      budget({ scope: 'channel', match: 'slack:C0123', period: 'month', usd: 50 }),
      budget({ scope: 'channel', match: 'slack:C0999' }),
      budget({ scope: 'channel' }),
      budget({ scope: 'user' }),
      budget({ scope: 'adapter', match: 'teams' }),
      budget({ trigger: 'schedule', usd: 1 }),
    ],
    person,
    NOW,
  );
  assert.deepEqual(
    applied.map((a) => [a.key.pk, a.key.sk, a.label, a.resetsAt.toISOString()]),
    [
      ['spend#2026-11-24', 'deployment#*#all', 'the daily budget of $5.00 for this deployment', '2026-11-25T00:00:00.000Z'],
      ['spend#2026-11', 'channel#slack:C0123#all', 'the monthly budget of $50.00 for channel slack:C0123', '2026-12-01T00:00:00.000Z'],
      [
        'spend#2026-11-24',
        'channel#slack:C0123#all',
        'the daily budget of $5.00 for each channel (here slack:C0123)',
        '2026-11-25T00:00:00.000Z',
      ],
      [
        'spend#2026-11-24',
        'user#slack:U0456#all',
        'the daily budget of $5.00 for each user (here slack:U0456)',
        '2026-11-25T00:00:00.000Z',
      ],
    ],
  );
  // A scheduled run: no person, so no user budget; the schedule budget has a counter of its own.
  const forSchedule = budgetsFor([budget({ scope: 'user' }), budget({ trigger: 'schedule', usd: 1 })], scheduled, NOW);
  assert.deepEqual(
    forSchedule.map((a) => [a.key.sk, a.label]),
    [['deployment#*#schedule', 'the daily budget of $1.00 for this deployment of scheduled runs']],
  );
});

test('a budget declaration is checked: scope, match shape, period, amount and warning share', () => {
  const problems = (b: unknown) => {
    const parsed = budgetSchema.safeParse(b);
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };
  assert.deepEqual(problems({ scope: 'channel', match: 'C0123', period: 'day', usd: 5 }), [
    'match: a channel budget\'s match looks like "slack:C0123"',
  ]);
  assert.deepEqual(problems({ scope: 'deployment', match: 'x', period: 'day', usd: 5 }), ['match: a deployment budget has no match']);
  assert.equal(problems({ scope: 'channel', period: 'week', usd: 5 }).length, 1);
  assert.equal(problems({ scope: 'channel', period: 'day', usd: 0 }).length, 1);
  assert.equal(problems({ scope: 'channel', period: 'day', usd: 5, warnAt: 1.5 }).length, 1);
  assert.equal(problems({ scope: 'channel', period: 'day', usd: 5, extra: true }).length, 1);
});

test("a step's worst case: every input token at the dearest input price, and a full answer", () => {
  // 10,000 tokens × $3.75 (cache write) + 4,096 × $15 per million.
  assert.equal(worstCaseUsd({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, 10_000, 4096), 0.09894);
});

test("an event file's run spends the budgets of the person whose run wrote the file; a person's own message spends theirs", () => {
  const thread = 'slack:C0123:1700000000.000100';
  const caused = spendSubjectOf(thread, {
    author: { userId: 'event', userName: 'event events/slack/C0123/x.json' },
    causedBy: 'slack:U0456',
  });
  assert.deepEqual(caused, { threadId: thread, adapter: 'slack', channel: 'slack:C0123', user: 'slack:U0456', trigger: 'schedule' });
  assert.deepEqual(
    budgetsFor([budget({ scope: 'user' }), budget({ scope: 'user', match: 'slack:U0456', trigger: 'schedule' })], caused, NOW).map(
      (a) => a.key.sk,
    ),
    ['user#slack:U0456#all', 'user#slack:U0456#schedule'],
  );
  // A person cannot name someone else to pay: their own messages are theirs.
  const own = spendSubjectOf(thread, { author: { userId: 'U0789', userName: 'eve' }, causedBy: 'slack:U0456' });
  assert.equal(own.user, 'slack:U0789');
  // An operator's file names nobody: no user budget applies.
  assert.equal(scheduled.user, undefined);
});
