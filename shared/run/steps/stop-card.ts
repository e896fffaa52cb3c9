// While a run uses tools, a small card with a Stop button sits in the thread; it goes when the run ends.
import { Actions, Button, Card, CardText, type Thread } from 'chat';
import { STOP_ACTION } from '../control.ts';
import { readRecord, writeRecord } from '../ledger.ts';
import type { RunInput } from '../../contracts.ts';
import type { AgentDeps } from './deps.ts';

const STOP_CARD = 'stop-card';

export interface PostedMessage {
  messageId: string;
}

export async function showStopCard(deps: Pick<AgentDeps, 'ledger'>, run: RunInput, thread: Thread): Promise<void> {
  if (await readRecord(deps.ledger, run.runId, STOP_CARD)) return;
  const card = Card({
    children: [CardText('Working on it…'), Actions([Button({ id: STOP_ACTION, label: 'Stop', style: 'danger', value: run.runId })])],
  });
  const sent = await thread.post(card);
  await writeRecord(deps.ledger, run.runId, STOP_CARD, { messageId: sent.id } satisfies PostedMessage);
}

export async function removeStopCard(deps: Pick<AgentDeps, 'ledger' | 'thread' | 'logger'>, run: RunInput): Promise<void> {
  const card = await readRecord<PostedMessage>(deps.ledger, run.runId, STOP_CARD);
  if (!card) return;
  await deps
    .thread(run)
    .adapter.deleteMessage(run.threadId, card.messageId)
    .catch((error: unknown) => deps.logger.warn('could not remove the stop card', { runId: run.runId, error }));
}
