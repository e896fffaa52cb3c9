// While a run uses tools, a small card with a Stop button sits in the thread; it goes when the run ends.
import { Actions, Button, Card, CardText, type Thread } from 'chat';
import { STOP_ACTION } from '../control.ts';
import { postedMessage, postOnce, readRecord, type PostedMessage } from '../ledger.ts';
import type { RunInput } from '../../contracts.ts';
import { RUN_RECORD } from '../../table.ts';
import type { AgentDeps } from './deps.ts';

export async function showStopCard(deps: Pick<AgentDeps, 'ledger'>, run: RunInput, thread: Thread): Promise<void> {
  const card = Card({
    children: [CardText('Working on it…'), Actions([Button({ id: STOP_ACTION, label: 'Stop', style: 'danger', value: run.runId })])],
  });
  await postOnce(deps.ledger, run.runId, RUN_RECORD.stopCard, () => thread.post(card).then(postedMessage));
}

export async function removeStopCard(deps: Pick<AgentDeps, 'ledger' | 'thread' | 'logger'>, run: RunInput): Promise<void> {
  const card = await readRecord<PostedMessage>(deps.ledger, run.runId, RUN_RECORD.stopCard);
  if (!card) return;
  await deps
    .thread(run)
    .adapter.deleteMessage(run.threadId, card.messageId)
    .catch((error: unknown) => deps.logger.warn('could not remove the stop card', { runId: run.runId, error }));
}
