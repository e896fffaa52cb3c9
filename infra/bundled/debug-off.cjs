// Stands in for the `debug` package in the bundles (an esbuild alias set in
// infra/constructs/agent-function.ts). Its users there (follow-redirects under axios, and the proxy
// agents under the Slack Web API client) only print when the DEBUG environment variable names them,
// which no function of this deployment sets; the logger is what a function writes its log with.
// CommonJS, because its users `require` it and call what they get.
module.exports = function createDebug() {
  const log = function () {};
  log.enabled = false;
  log.extend = createDebug;
  return log;
};
