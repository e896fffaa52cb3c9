// Builds the stack the way `cdk synth` does: same feature flags (read from cdk.json), same
// settings defaults. Bundling is skipped unless asked for, so template tests stay fast.
import { readFileSync } from 'node:fs';
import { App, CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { PROJECT_ROOT } from '../../infra/function-entries.ts';
import { checkWithCdkNag } from '../../infra/nag.ts';
import { DEFAULT_SETTINGS, readSettings } from '../../infra/settings.ts';
import { AgentRuntimeStack } from '../../infra/stack.ts';
import { spawnSync } from 'node:child_process';

export const STACK_NAME = 'TestRuntime';

interface CdkJson {
  readonly context: Record<string, unknown>;
}

/** cdk.json's context minus the deployment settings, so each test states the settings it uses. */
function featureFlags(): Record<string, unknown> {
  const { context } = JSON.parse(readFileSync(`${PROJECT_ROOT}cdk.json`, 'utf8')) as CdkJson;
  const settings = new Set<string>(['stackName', ...Object.keys(DEFAULT_SETTINGS)]);
  return Object.fromEntries(Object.entries(context).filter(([key]) => !settings.has(key)));
}

export interface SynthOptions {
  /** Deployment settings as CDK context (strings, as `-c key=value` gives them, are fine). */
  readonly settings?: Record<string, unknown>;
  /** Bundle the functions with esbuild for real. */
  readonly bundle?: boolean;
  readonly outdir?: string;
  /** Register cdk-nag as infra/app.ts does, before the synth. */
  readonly withNag?: boolean;
}

export interface Synthesized {
  readonly app: App;
  readonly stack: AgentRuntimeStack;
  readonly template: Template;
}

export function synth(options: SynthOptions = {}): Synthesized {
  const app = new App({
    outdir: options.outdir,
    context: {
      ...featureFlags(),
      ...options.settings,
      ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }),
    },
  });
  const stack = new AgentRuntimeStack(app, STACK_NAME, { settings: readSettings(app.node) });
  if (options.withNag) checkWithCdkNag(app);
  return { app, stack, template: Template.fromStack(stack) };
}

/** The CloudFormation logical id of an L2 construct's resource (or of an L1 resource). */
export function logicalId(stack: Stack, construct: IConstruct): string {
  const element = CfnElement.isCfnElement(construct) ? construct : construct.node.defaultChild;
  if (!element || !CfnElement.isCfnElement(element)) throw new Error(`${construct.node.path} has no CloudFormation resource`);
  return stack.resolve(stack.getLogicalId(element)) as string;
}

/**
 * Flattens a resolved CloudFormation value to a string: Fn::Join is joined, Ref and Fn::GetAtt
 * become <LogicalId> and <LogicalId.Attr> (the notation cdk-nag uses in its finding ids).
 */
export function flatten(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const fn = value as Record<string, unknown>;
    if (Array.isArray(fn['Fn::Join'])) {
      const [separator, parts] = fn['Fn::Join'] as [string, unknown[]];
      return parts.map(flatten).join(separator);
    }
    if (Array.isArray(fn['Fn::GetAtt'])) return `<${(fn['Fn::GetAtt'] as string[]).join('.')}>`;
    if (typeof fn.Ref === 'string') return `<${fn.Ref}>`;
    // Fn::Sub of pseudo parameters (CDK's bootstrap bucket and repository names), written as cdk-nag does.
    if (typeof fn['Fn::Sub'] === 'string') return fn['Fn::Sub'].replace(/\$\{([^}]+)\}/g, '<$1>');
  }
  throw new Error(`cannot flatten ${JSON.stringify(value)}`);
}

/** A function of the stack by role; the Teams webhook exists only where the stack serves Teams. */
export function functionOf(stack: AgentRuntimeStack, role: keyof AgentRuntimeStack['functions']) {
  const fn = stack.functions[role];
  if (!fn) throw new Error(`${role}: no such function in this stack`);
  return fn;
}

/** Runs infra/app.ts as `cdk synth` does (the context in CDK_CONTEXT_JSON; no bundling), writing the assembly to `outdir`. */
export function runApp(outdir: string, context: Record<string, unknown>, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: PROJECT_ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [], ...context }) },
  });
}
