// Stands in for @slack/socket-mode in every Lambda bundle (an esbuild alias set in
// infra/constructs/agent-function.ts). The Slack adapter imports it at the top of its module, but
// only constructs a client in socket mode; this deployment receives Slack events over HTTP (the
// webhook function), so the real package and the WebSocket client it brings would be dead weight.
export const SOCKET_MODE_UNUSED = 'Slack socket mode is not used by this deployment: Slack events arrive over HTTP';

export class SocketModeClient {
  constructor() {
    throw new Error(SOCKET_MODE_UNUSED);
  }
}
