// How a chat message reads in the model's context, in one place: the prompt, backfilled messages
// and steering texts all use it (and the webhook can, without the data-store code backfill needs).

/** Text as the model sees a message: author first, whitespace tidied. */
export function contextText(userName: string, text: string): string {
  return `${userName}: ${text.replace(/\s+\n/g, '\n').trim()}`;
}
