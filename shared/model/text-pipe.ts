// A push-to-pull bridge: the model pushes text deltas, the Chat SDK pulls them as an AsyncIterable
// while it streams the reply into the thread.
export interface TextPipe {
  iterable: AsyncIterable<string>;
  push(text: string): void;
  end(): void;
}

export function createTextPipe(): TextPipe {
  const buffered: string[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  return {
    push(text) {
      if (ended) return;
      buffered.push(text);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    iterable: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (buffered.length > 0) {
            yield buffered.splice(0).join('');
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    },
  };
}
