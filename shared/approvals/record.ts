// The durable approval record (its key: shared/table.ts). It is what a decision is taken on: the
// chat message is only a view of it. Every decision is one conditional write on `state = waiting`,
// so the first decision wins, whoever takes it (a click on Slack or Teams, `ops approvals`, the
// timeout, a message that could not be posted).
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { queryPartition } from '../aws/dynamodb.ts';
import { isConditionalCheckFailed } from '../aws/errors.ts';
import { APPROVALS, approvalKey, pendingReasonKey } from '../table.ts';

export interface ApprovalDeps {
  db: DynamoDBDocumentClient;
  tableName: string;
}

export type ApprovalState = 'waiting' | 'approved' | 'denied' | 'timed_out';
export type Decision = Exclude<ApprovalState, 'waiting'>;

export interface ApprovalRecord {
  /** `<runId>#<toolUseId>`: the record's sort key, and the value of its message's buttons. */
  id: string;
  runId: string;
  threadId: string;
  toolUseId: string;
  tool: string;
  /** SHA-256 of the call's input as JSON: what was approved is what runs. */
  inputDigest: string;
  /** The input as the approvers see it: secret-filtered and clamped. */
  inputPreview: string;
  /** Who may decide, `adapter:id`. */
  approvers: string[];
  approversSetting: 'admins' | 'requester' | 'listed';
  /** `adapter:id` of the person the run works for. */
  requester: string;
  state: ApprovalState;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds: no decision by then is a timeout. */
  deadline: number;
  /** The run's execution waits with this token (set when the wait begins). */
  taskToken?: string;
  /** The approval message in the thread. */
  messageId?: string;
  /** `adapter:id` of the person who decided; `timeout`, or `system` (the message could not be posted). */
  decidedBy?: string;
  decidedByName?: string;
  decidedAt?: number;
  reason?: string;
  /** A Deny from the chat: until then (epoch ms) the denier may still say why (`reason …`), and the run waits for it. */
  reasonUntil?: number;
  /** TTL, epoch seconds. */
  expiresAt: number;
}

const TTL_AFTER_DEADLINE_SECONDS = 30 * 24 * 3600;

export const approvalIdOf = (runId: string, toolUseId: string): string => approvalKey(runId, toolUseId).sk;
const keyOf = (id: string) => ({ pk: APPROVALS, sk: id });

export type NewApproval = Omit<ApprovalRecord, 'id' | 'state' | 'expiresAt'>;

/** Creates the record unless it exists; returns the record that stands (a retried step's earlier one). */
export async function createApproval(deps: ApprovalDeps, fields: NewApproval): Promise<ApprovalRecord> {
  const id = approvalIdOf(fields.runId, fields.toolUseId);
  const record: ApprovalRecord = {
    ...fields,
    id,
    state: 'waiting',
    expiresAt: Math.floor(fields.deadline / 1000) + TTL_AFTER_DEADLINE_SECONDS,
  };
  try {
    await deps.db.send(
      new PutCommand({ TableName: deps.tableName, Item: { ...keyOf(id), ...record }, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
    return record;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    const existing = await getApproval(deps, id);
    if (!existing) throw new Error(`approval ${id} vanished after its creation`);
    return existing;
  }
}

export async function getApproval(deps: ApprovalDeps, id: string): Promise<ApprovalRecord | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: keyOf(id), ConsistentRead: true }));
  return out.Item ? recordOf(out.Item) : undefined;
}

function recordOf(item: Record<string, unknown>): ApprovalRecord {
  const { pk: _pk, sk: _sk, ...record } = item;
  return record as unknown as ApprovalRecord;
}

/** One conditional update of a record: the record as it now stands, or undefined when the condition failed. */
async function updateIf(
  deps: ApprovalDeps,
  id: string,
  update: { set: string; condition: string; names?: Record<string, string>; values: Record<string, unknown> },
): Promise<ApprovalRecord | undefined> {
  try {
    const out = await deps.db.send(
      new UpdateCommand({
        TableName: deps.tableName,
        Key: keyOf(id),
        UpdateExpression: `SET ${update.set}`,
        ConditionExpression: update.condition,
        ExpressionAttributeNames: { '#state': 'state', ...update.names },
        ExpressionAttributeValues: update.values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return out.Attributes ? recordOf(out.Attributes) : undefined;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return undefined;
  }
}

/** Sets fields of a record still waiting; undefined when it no longer waits. */
function updateWaiting(deps: ApprovalDeps, id: string, fields: Partial<ApprovalRecord>, extraCondition = '', extraValues = {}) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':waiting': 'waiting', ...extraValues };
  const sets = Object.entries(fields).map(([field, value], i) => {
    names[`#f${i}`] = field;
    values[`:v${i}`] = value;
    return `#f${i} = :v${i}`;
  });
  return updateIf(deps, id, {
    set: sets.join(', '),
    condition: `attribute_exists(pk) AND #state = :waiting${extraCondition}`,
    names,
    values,
  });
}

/**
 * The wait began: the token its execution waits with. Undefined when the record no longer waits, for
 * a decision or (denied from the chat) for the denier's reason.
 */
export const setTaskToken = (deps: ApprovalDeps, id: string, taskToken: string, now: number): Promise<ApprovalRecord | undefined> =>
  updateIf(deps, id, {
    set: 'taskToken = :token',
    condition: 'attribute_exists(pk) AND (#state = :waiting OR (#state = :denied AND reasonUntil > :now AND attribute_not_exists(reason)))',
    values: { ':token': taskToken, ':waiting': 'waiting', ':denied': 'denied', ':now': now },
  });

/** A Deny from the chat opened a window for its reason: the thread remembers whose denial it is (GetItem, no query). */
export async function awaitReason(deps: ApprovalDeps, record: ApprovalRecord): Promise<void> {
  if (!record.decidedBy || record.reasonUntil === undefined) return;
  await deps.db.send(
    new PutCommand({
      TableName: deps.tableName,
      Item: {
        ...pendingReasonKey(record.threadId, record.decidedBy),
        approvalId: record.id,
        expiresAt: Math.ceil(record.reasonUntil / 1000) + 3600,
      },
    }),
  );
}

/** The approval whose denial by `by` in the thread may still be given a reason, if any. */
export async function pendingReasonOf(deps: ApprovalDeps, threadId: string, by: string): Promise<string | undefined> {
  const out = await deps.db.send(new GetCommand({ TableName: deps.tableName, Key: pendingReasonKey(threadId, by), ConsistentRead: true }));
  return typeof out.Item?.approvalId === 'string' ? out.Item.approvalId : undefined;
}

/** The denier's reason, once, within its window: the record as it now stands, or undefined. */
export const addReason = (deps: ApprovalDeps, id: string, by: string, reason: string, now: number): Promise<ApprovalRecord | undefined> =>
  updateIf(deps, id, {
    set: 'reason = :reason',
    condition: '#state = :denied AND decidedBy = :by AND reasonUntil > :now AND attribute_not_exists(reason)',
    values: { ':reason': reason, ':denied': 'denied', ':by': by, ':now': now },
  });

/** The approval message was posted. */
export const setMessage = (deps: ApprovalDeps, id: string, messageId: string) => updateWaiting(deps, id, { messageId });

export interface DecisionTaken {
  state: Decision;
  by: string;
  byName?: string;
  reason?: string;
  /** A Deny from the chat without a reason: the denier may give one until then (epoch ms). */
  reasonUntil?: number;
  /** Epoch milliseconds. */
  at: number;
}

/**
 * Takes a decision if none was taken: `decided` tells whether this one won, `record` is the record
 * as it stands (undefined: there is none). A person's decision also needs the deadline not passed.
 */
export async function decideApproval(
  deps: ApprovalDeps,
  id: string,
  decision: DecisionTaken,
): Promise<{ decided: boolean; record: ApprovalRecord | undefined }> {
  const byPerson = decision.state === 'approved' || decision.state === 'denied';
  const fields: Partial<ApprovalRecord> = {
    state: decision.state,
    decidedBy: decision.by,
    decidedAt: decision.at,
    ...(decision.byName ? { decidedByName: decision.byName } : {}),
    ...(decision.reason ? { reason: decision.reason } : {}),
    ...(decision.reasonUntil && !decision.reason ? { reasonUntil: decision.reasonUntil } : {}),
  };
  const updated = byPerson
    ? await updateWaiting(deps, id, fields, ' AND deadline > :at', { ':at': decision.at })
    : await updateWaiting(deps, id, fields);
  if (updated) return { decided: true, record: updated };
  return { decided: false, record: await getApproval(deps, id) };
}

/** Every record still waiting (its deadline may have passed: the run times it out at its next step). */
export async function waitingApprovals(deps: ApprovalDeps): Promise<ApprovalRecord[]> {
  // The partition holds decided records too until their TTL (a FilterExpression would read them all the same).
  return (await queryPartition(deps, APPROVALS)).map(recordOf).filter((record) => record.state === 'waiting');
}
