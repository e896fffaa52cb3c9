// What a warm handler container keeps between invocations: the `max` most recently used values by key
// (a Map keeps insertion order, so the first key is the least recently used one).

export interface Recent<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
  delete(key: string): void;
}

export function recentlyUsed<V>(max: number): Recent<V> {
  const kept = new Map<string, V>();
  return {
    get(key) {
      const value = kept.get(key);
      if (value === undefined) return undefined;
      kept.delete(key);
      kept.set(key, value);
      return value;
    },
    set(key, value) {
      kept.delete(key);
      kept.set(key, value);
      if (kept.size > max) kept.delete(kept.keys().next().value!);
    },
    delete: (key) => void kept.delete(key),
  };
}
