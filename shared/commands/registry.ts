// Every chat command: one line each. Adding one is its file in this folder (command.ts says what it
// holds) and its line here; a slash form is declared in slack-app-manifest.yaml too. No two
// commands' words overlap (test/unit/commands.test.ts), so their order here does not matter.
export { agentsCommand } from './agents.ts';
export { disconnectCommand } from './disconnect.ts';
export { opsCommand } from './ops.ts';
export { reasonCommand } from './reason.ts';
export { settingsCommand } from './settings.ts';
export { steerCommand } from './steer.ts';
export { stopCommand } from './stop.ts';
export { usageCommand } from './usage.ts';
