// A value made on first use and shared by later calls (concurrent ones too). A failed attempt is
// not kept: the next call tries again, so a container whose first try met a passing fault (a
// throttled call, a secret not set up yet) is not broken for the rest of its life.
export function lazy<T>(make: () => T | Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= Promise.resolve()
      .then(make)
      .catch((error: unknown) => {
        pending = undefined;
        throw error;
      }));
}

/**
 * A value made on first use and kept: for what cannot fail to be made, such as an AWS SDK client
 * (its constructor only records configuration), so there is no failure to forget and no promise.
 */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
