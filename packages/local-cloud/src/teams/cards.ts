// The buttons of the Adaptive Cards a bot sends: what the Teams client shows a person to press.
// Action.Submit carries its `data` back to the bot in the activity of the press.

export interface CardButton {
  title: string;
  style?: string;
  /** What the press sends back as the activity's value (the Chat SDK's { actionId, value }). */
  data: { actionId: string; value?: string; [key: string]: unknown };
}

type CardNode = {
  type?: string;
  title?: string;
  style?: string;
  data?: { actionId?: unknown };
  actions?: CardNode[];
  body?: CardNode[];
  items?: CardNode[];
  columns?: CardNode[];
};

/** The Action.Submit buttons of a message's card attachments, at any depth, in order. */
export function cardButtonsOf(attachments: readonly unknown[] | undefined): CardButton[] {
  const found: CardButton[] = [];
  const visit = (node: CardNode | undefined) => {
    if (!node || typeof node !== 'object') return;
    if (node.type === 'Action.Submit' && typeof node.data?.actionId === 'string') {
      found.push({
        title: node.title ?? node.data.actionId,
        ...(node.style ? { style: node.style } : {}),
        data: node.data as CardButton['data'],
      });
    }
    for (const child of [...(node.body ?? []), ...(node.items ?? []), ...(node.columns ?? []), ...(node.actions ?? [])]) visit(child);
  };
  for (const attachment of (attachments ?? []) as { content?: CardNode }[]) visit(attachment.content);
  return found;
}
