// The webhooks' side of approvals: a click on Approve or Deny (a Slack block action, a Teams
// Action.Submit) acts once however often it is delivered, is decided on the approval record, and
// the approval message is updated to show the decision. The clicker alone is told anything else.
// A click carries no reason: after a Deny the denier is asked for one, which they give as a reply in
// the thread (`reason: …`, shared/commands/reason.ts) within REASON_WINDOW_MS; the run waits for it.
import type { AgentChat } from '../platforms/chat.ts';
import { nameOf, personFrom } from '../admission/person.ts';
import { firstDeliveryCheck, replayKey } from '../commands/webhook.ts';
import { approvalCard, APPROVE_ACTION, DENY_ACTION } from './card.ts';
import { answerFor, decideAsPerson, REASON_WINDOW_MS, type DecideDeps } from './decide.ts';
import { awaitReason } from './record.ts';

export interface ApprovalClickDeps extends DecideDeps {
  /** Told of each click's thread before it acts (a Teams conversation is recorded). */
  onThread(adapterName: string, threadId: string): Promise<void>;
}

export function wireApprovals(chat: AgentChat, deps: ApprovalClickDeps): void {
  const firstDelivery = firstDeliveryCheck(chat, deps.logger);
  chat.onAction([APPROVE_ACTION, DENY_ACTION], async (event) => {
    if (!(await firstDelivery(replayKey(event.adapter.name, 'action', event.triggerId, event.raw, event.actionId)))) return;
    await deps.onThread(event.adapter.name, event.threadId);
    const who = personFrom(event.adapter.name, event.user, event.raw);
    const outcome = await decideAsPerson(deps, {
      id: event.value ?? '',
      decision: event.actionId === APPROVE_ACTION ? 'approved' : 'denied',
      by: `${who.adapter}:${who.userId}`,
      byName: nameOf(event.user),
      reasonWindowMs: REASON_WINDOW_MS,
    });
    if (outcome.kind === 'decided' && outcome.record.reasonUntil !== undefined) await awaitReason(deps.approvals, outcome.record);
    if (outcome.kind === 'decided' && outcome.record.messageId) {
      await event.adapter
        .editMessage(outcome.record.threadId, outcome.record.messageId, approvalCard(outcome.record))
        .catch((error: unknown) => deps.logger.warn('could not update the approval message', { approvalId: outcome.record.id, error }));
    }
    const text =
      outcome.kind === 'decided' && outcome.record.state === 'denied' && !outcome.runEnded
        ? `Denied. To tell the agent why, reply \`reason: <why>\` in this thread within ${REASON_WINDOW_MS / 1000} seconds.`
        : answerFor(outcome);
    if (text && event.thread) await event.thread.postEphemeral(event.user, text, { fallbackToDM: false });
  });
}
