// The functions' bundles replace @slack/socket-mode with infra/bundled/socket-mode-unused.ts
// (test/infra/stack.test.ts checks the bundles): the stand-in refuses plainly, and the Slack adapter
// the functions build is in webhook mode, the only mode that never constructs a socket mode client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SocketModeClient, SOCKET_MODE_UNUSED } from '../../infra/bundled/socket-mode-unused.ts';
import { createAgentChat } from '../../shared/platforms/chat.ts';
import { slackAdapter } from '../../shared/platforms/slack/adapter.ts';
import { createLogger } from '../../shared/observability/log.ts';

test('the socket mode stand-in throws a clear error if a client is ever constructed', () => {
  assert.throws(() => new SocketModeClient(), { message: SOCKET_MODE_UNUSED });
  assert.match(SOCKET_MODE_UNUSED, /socket mode is not used by this deployment/);
});

test("the Slack webhook's adapter runs in webhook mode: Slack events arrive over HTTP", () => {
  const logger = createLogger({ level: 'silent' });
  const receiving = slackAdapter({ signingSecret: 'secret', botToken: 'xoxb-test' }, { logger });
  const chat = createAgentChat({
    adapters: { slack: receiving },
    db: DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' })),
    tableName: 'unused',
    logger,
  });
  assert.equal((chat.getAdapter('slack') as typeof receiving).isSocketMode, false);
});
