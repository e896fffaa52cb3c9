// A batch of inbox records: each thread's records are admitted in arrival order, and different
// threads' records at the same time (most of an admission is waiting on DynamoDB and Step
// Functions). Powertools' FIFO processors run the whole batch one record at a time, so the batch goes
// to its parallel processor with each record made to wait for the one before it in its message
// group. A record whose predecessor failed fails too without being tried: SQS FIFO then redelivers
// the failed record and everything after it in that group, in order, and no other group waits.
import { BatchProcessor, EventType, processPartialResponse, SqsFifoMessageGroupShortCircuitError } from '@aws-lambda-powertools/batch';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { lazy } from '../support/lazy.ts';
import { admitRecord } from './admit.ts';
import type { AdmissionDeps } from './context.ts';

type RecordHandler = (record: SQSRecord) => Promise<void>;

/**
 * `handle`, made to run `records` of one message group one after another in their order (a record
 * without a group is a group of its own); a record after a failed one is failed, not handled. The
 * chain is built from `records` up front, so it holds whatever order the processor calls it in.
 */
export function inGroupOrder(records: readonly SQSRecord[], handle: RecordHandler): RecordHandler {
  const settled = new Map<string, PromiseWithResolvers<void>>();
  const previous = new Map<string, string>();
  const lastOfGroup = new Map<string, string>();
  for (const { messageId, attributes } of records) {
    const done = Promise.withResolvers<void>();
    // Awaited only by the group's next record, if any: a last record's failure is reported by the processor.
    done.promise.catch(() => {});
    settled.set(messageId, done);
    const group = attributes?.MessageGroupId ?? messageId;
    const before = lastOfGroup.get(group);
    if (before !== undefined) previous.set(messageId, before);
    lastOfGroup.set(group, messageId);
  }
  return async (record) => {
    const done = settled.get(record.messageId);
    if (!done) throw new Error(`Record ${record.messageId} is not in the batch`);
    try {
      const before = previous.get(record.messageId);
      if (before !== undefined) {
        await settled.get(before)!.promise.catch(() => {
          throw new SqsFifoMessageGroupShortCircuitError();
        });
      }
      await handle(record);
      done.resolve();
    } catch (error) {
      done.reject(error);
      throw error;
    }
  };
}

/**
 * Admits an inbox batch: the records that failed, reported for redelivery (a batch that failed whole
 * too, rather than thrown). settings.json is read once for the batch (through `deps.settings`, so its
 * cache still decides when the file is read again).
 */
export async function admitBatch(event: SQSEvent, deps: AdmissionDeps): Promise<SQSBatchResponse> {
  const batchDeps: AdmissionDeps = { ...deps, settings: lazy(deps.settings) };
  const admitInOrder = inGroupOrder(event.Records, (record) => admitRecord(record, batchDeps));
  return processPartialResponse(event, admitInOrder, new BatchProcessor(EventType.SQS), { throwOnFullBatchFailure: false });
}
