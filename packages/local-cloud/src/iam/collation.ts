// iam-simulate and the iam-utils under it compare ARN characters one at a time with
// `a.localeCompare(b, locales, options)`. Given options, V8 builds a new ICU collator on each such
// call (~4 µs); deciding one request on a fresh S3 object key makes thousands of them, which made
// IAM the local cloud's largest CPU cost. ECMA-402 defines that call as
// `new Intl.Collator(locales, options).compare(a, b)`, so comparing through a collator kept per
// (locales, options) answers the same, in a hundredth of the time. Installed in the local cloud's
// process only; a deployed function never runs this.

const OPTION_KEYS = ['usage', 'sensitivity', 'ignorePunctuation', 'numeric', 'caseFirst', 'collation', 'localeMatcher'] as const;

let installed = false;

export function keepCollators(): void {
  if (installed) return;
  installed = true;
  const original = String.prototype.localeCompare;
  const collators = new Map<string, Intl.Collator>();
  String.prototype.localeCompare = function localeCompare(
    this: string,
    that: string,
    locales?: string | string[],
    options?: Intl.CollatorOptions,
  ): number {
    // The engine's own fast path, and anything unusual, go the original way.
    if (options === undefined || typeof options !== 'object' || (locales !== undefined && typeof locales !== 'string')) {
      return original.call(this, that, locales, options);
    }
    let key = locales ?? '';
    for (const name of OPTION_KEYS) key += `|${String(options[name])}`;
    let collator = collators.get(key);
    if (!collator) {
      collator = new Intl.Collator(locales, options);
      collators.set(key, collator);
    }
    return collator.compare(String(this), String(that));
  };
}
