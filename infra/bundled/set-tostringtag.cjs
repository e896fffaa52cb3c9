// Stands in for es-set-tostringtag in the bundles (an esbuild alias set in
// infra/constructs/agent-function.ts): form-data (under axios and the Slack Web API client) calls it
// once, to name its class for Object.prototype.toString. The package reaches the same line through
// get-intrinsic and a dozen small polyfill packages (about 15 KB minified) that Node 22 does not need.
// CommonJS, because form-data `require`s it and calls what it gets.
module.exports = function setToStringTag(object, value, options) {
  const force = Boolean(options && options.force);
  if (!force && Object.prototype.hasOwnProperty.call(object, Symbol.toStringTag)) return;
  Object.defineProperty(object, Symbol.toStringTag, {
    configurable: !(options && options.nonConfigurable),
    enumerable: false,
    value,
    writable: false,
  });
};
