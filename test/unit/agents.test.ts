// AGENT.md files as the runtime reads them, and the `/agent NAME` words that choose one for a thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentTools } from '../../shared/agents/apply.ts';
import { agentKeys, parseAgentFile } from '../../shared/agents/definition.ts';
import { requestedAgent, withoutAgentRequest } from '../../shared/agents/request.ts';

const file = (frontMatter: string, body = 'You review code.') => `---\n${frontMatter}\n---\n${body}\n`;

test('AGENT.md: front matter and instructions become a definition', () => {
  const parsed = parseAgentFile(
    'agents/reviewer/AGENT.md',
    'deployment',
    file('name: reviewer\ndescription: Reviews code\ntools: [read, bash]\nskills: [code-review]\nmaxModelSteps: 7\nmodel: m1'),
  );
  assert.deepEqual(parsed, {
    ok: true,
    agent: {
      name: 'reviewer',
      description: 'Reviews code',
      tools: ['read', 'bash'],
      skills: ['code-review'],
      maxModelSteps: 7,
      model: 'm1',
      instructions: 'You review code.',
      scope: 'deployment',
      key: 'agents/reviewer/AGENT.md',
    },
  });
});

test('AGENT.md: each mistake is named, with the file', () => {
  const error = (key: string, text: string) => {
    const parsed = parseAgentFile(key, 'channel', text);
    assert.equal(parsed.ok, false);
    return (parsed as { error: string }).error;
  };
  const key = 'slack/C1/agents/helper/AGENT.md';
  assert.match(
    error(key, 'no front matter'),
    /^Agent slack\/C1\/agents\/helper\/AGENT\.md was not loaded because it has no YAML frontmatter/,
  );
  assert.match(error(key, file('name: helper')), /description/);
  assert.match(error(key, file('name: other\ndescription: d')), /name "other" does not match its folder name "helper"/);
  assert.match(error(key, file('name: helper\ndescription: d\ncolour: blue')), /colour/);
  assert.match(error(key, file('name: helper\ndescription: d\ntools: []')), /tools/);
  assert.match(error(key, file('name: helper\ndescription: d\nmaxModelSteps: 0')), /maxModelSteps/);
  assert.match(error(key, file('name: helper\ndescription: d', '')), /no instructions/);
  assert.match(error(key, file('name: helper\ndescription: d', 'x'.repeat(20_001))), /20001 characters, over the 20000-character limit/);
  assert.match(error(key, file('name: [helper\ndescription: d')), /not valid YAML \(line \d+: /);
});

test("an operator's definition is looked for first, then the channel's", () => {
  assert.deepEqual(agentKeys('slack:C1:1.5', 'reviewer'), {
    deployment: 'agents/reviewer/AGENT.md',
    channel: 'slack/C1/agents/reviewer/AGENT.md',
  });
});

test('/agent NAME opens a message (after the mention); the words are not for the model', () => {
  assert.deepEqual(requestedAgent('@bot /agent reviewer look at PR 12'), { name: 'reviewer', rest: 'look at PR 12' });
  assert.deepEqual(requestedAgent('<@U0BOT> /Agent Helper'), { name: 'helper', rest: '' });
  assert.equal(requestedAgent('please /agent reviewer'), undefined);
  assert.equal(requestedAgent('/agentx reviewer'), undefined);
  assert.equal(requestedAgent('/agent Bad_Name hi'), undefined);
  assert.equal(withoutAgentRequest('@bot /agent reviewer look at PR 12'), 'look at PR 12');
  assert.equal(withoutAgentRequest('@bot /agent reviewer'), '@bot /agent reviewer', 'nothing else said: the words stay');
  assert.equal(withoutAgentRequest('just a question'), 'just a question');
});

test("an agent's tools: those the run has, and web_fetch and MCP tools, which join the run after prepare", () => {
  const warnings: unknown[] = [];
  const agent = {
    name: 'a',
    description: 'd',
    instructions: 'i',
    scope: 'deployment' as const,
    key: 'k',
    tools: ['read', 'nope', 'web_fetch', 'orders__lookup'],
  };
  assert.deepEqual(agentTools(agent, ['bash', 'read', 'write'], { warn: (...args: unknown[]) => void warnings.push(args) }), [
    'read',
    'web_fetch',
    'orders__lookup',
  ]);
  assert.equal(warnings.length, 1, 'the unknown name is logged');
  assert.equal(agentTools({ ...agent, tools: undefined }, ['read'], { warn: () => undefined }), undefined);
});
