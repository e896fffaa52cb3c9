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
